package tenant

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
)

// The phase table's contract, with stand-in phases in the table's order: every phase reports on
// every reconcile, and a phase waits, saying for what, while one it comes after is not done.
func TestRunPhases(t *testing.T) {
	stub := func(o outcome, ran *[]string, name string) func(*Reconciler, context.Context, *tenantScope) outcome {
		return func(*Reconciler, context.Context, *tenantScope) outcome {
			*ran = append(*ran, name)
			return o
		}
	}
	ok := func(reason string) outcome { return phase.Done(reason, "") }
	for _, tc := range []struct {
		name               string
		domains, namespace outcome
		ran                []string
		reasons            []string
	}{
		{
			name:    "every phase runs once those it comes after are done",
			domains: ok("DomainsOK"), namespace: ok("NamespaceOK"),
			ran:     []string{"domains", "namespace", "workloads", "secrets", "components"},
			reasons: []string{"DomainsOK", "NamespaceOK", "WorkloadsOK", "SecretsOK", "ComponentsOK"},
		},
		{
			name:    "phases inside the namespace wait, and say so, while it is not done",
			domains: ok("DomainsOK"), namespace: phase.Progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "terminating"),
			ran: []string{"domains", "namespace"},
			reasons: []string{"DomainsOK", tenancyv1alpha1.ReasonNamespaceTerminating, tenancyv1alpha1.ReasonNamespaceNotReady,
				tenancyv1alpha1.ReasonNamespaceNotReady, tenancyv1alpha1.ReasonNamespaceNotReady},
		},
		{
			name:    "a domain conflict holds back the components alone: the namespace, workloads and secrets converge",
			domains: phase.Stalled(tenancyv1alpha1.ReasonDomainConflict, "held by another"), namespace: ok("NamespaceOK"),
			ran:     []string{"domains", "namespace", "workloads", "secrets"},
			reasons: []string{tenancyv1alpha1.ReasonDomainConflict, "NamespaceOK", "WorkloadsOK", "SecretsOK", tenancyv1alpha1.ReasonDomainsNotReady},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			phases := []tenantPhase{
				{condition: tenancyv1alpha1.DomainsReadyCondition, run: stub(tc.domains, &ran, "domains")},
				{condition: tenancyv1alpha1.NamespaceReadyCondition, run: stub(tc.namespace, &ran, "namespace")},
				{condition: tenancyv1alpha1.WorkloadsReadyCondition, run: stub(ok("WorkloadsOK"), &ran, "workloads"), after: inNamespace},
				{condition: tenancyv1alpha1.SecretsReadyCondition, run: stub(ok("SecretsOK"), &ran, "secrets"), after: inNamespace},
				{condition: tenancyv1alpha1.ComponentsReadyCondition, run: stub(ok("ComponentsOK"), &ran, "components"),
					after: []string{tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.DomainsReadyCondition, tenancyv1alpha1.WorkloadsReadyCondition}},
			}
			results := (&Reconciler{}).runPhases(context.Background(), &tenantScope{}, phases)
			if len(results) != len(phases) {
				t.Fatalf("%d results for %d phases", len(results), len(phases))
			}
			for i, res := range results {
				if res.condition != phases[i].condition || res.Reason != tc.reasons[i] {
					t.Errorf("result %d = %s/%s, want %s/%s", i, res.condition, res.Reason, phases[i].condition, tc.reasons[i])
				}
			}
			if !slices.Equal(ran, tc.ran) {
				t.Errorf("ran %v, want %v", ran, tc.ran)
			}
		})
	}
}

// What the Active table's order promises, with its own rows (their runs stood in for): a Frozen
// tenant's pods are stopped, and its secrets and databases converge, while a domain is another
// tenant's; no component is rendered for a domain the tenant does not hold, nor before its kept
// volumes are bound to its namespace again.
func TestTheActiveTableKeepsItsPromises(t *testing.T) {
	run := func(outcomes map[string]outcome) (ran []string, results []phaseResult) {
		phases := slices.Clone(phasesActive)
		for i := range phases {
			c := phases[i].condition
			phases[i].run = func(*Reconciler, context.Context, *tenantScope) outcome {
				ran = append(ran, c)
				if o, ok := outcomes[c]; ok {
					return o
				}
				return phase.Done(tenancyv1alpha1.ReasonSucceeded, "")
			}
		}
		return ran, (&Reconciler{}).runPhases(context.Background(), &tenantScope{}, phases)
	}
	reason := func(results []phaseResult, condition string) string {
		for _, r := range results {
			if r.condition == condition {
				return r.Reason
			}
		}
		t.Fatalf("no result for %s", condition)
		return ""
	}

	t.Run("a domain conflict stops the components alone", func(t *testing.T) {
		ran, results := run(map[string]outcome{tenancyv1alpha1.DomainsReadyCondition: phase.Stalled(tenancyv1alpha1.ReasonDomainConflict, "held")})
		for _, c := range []string{tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.WorkloadsReadyCondition, tenancyv1alpha1.SecretsReadyCondition,
			tenancyv1alpha1.DatabasesReadyCondition, tenancyv1alpha1.EgressReadyCondition} {
			if !slices.Contains(ran, c) {
				t.Errorf("%s did not run during a domain conflict", c)
			}
		}
		if slices.Contains(ran, tenancyv1alpha1.ComponentsReadyCondition) {
			t.Error("the components ran for a domain the tenant does not hold")
		}
		if got := reason(results, tenancyv1alpha1.ComponentsReadyCondition); got != tenancyv1alpha1.ReasonDomainsNotReady {
			t.Errorf("the components say %s, want %s", got, tenancyv1alpha1.ReasonDomainsNotReady)
		}
	})
	t.Run("kept volumes not yet bound again hold the components back", func(t *testing.T) {
		ran, results := run(map[string]outcome{tenancyv1alpha1.WorkloadsReadyCondition: phase.Failedf(tenancyv1alpha1.ReasonApplyFailed, "binding a kept volume")})
		if slices.Contains(ran, tenancyv1alpha1.ComponentsReadyCondition) {
			t.Error("the components ran before the kept volumes were bound again")
		}
		if got := reason(results, tenancyv1alpha1.ComponentsReadyCondition); got != tenancyv1alpha1.ReasonWorkloadsNotReady {
			t.Errorf("the components say %s, want %s", got, tenancyv1alpha1.ReasonWorkloadsNotReady)
		}
	})
}

// Every phase waits only for phases that come before it in its state's table, and each
// condition it waits for says what it waits with.
func TestEveryPhaseWaitsOnlyForEarlierPhases(t *testing.T) {
	for state, phases := range tenantPhases {
		seen := map[string]bool{}
		for _, p := range phases {
			for _, c := range p.after {
				if !seen[c] {
					t.Errorf("%s: %s waits for %s, which does not come before it", state, p.condition, c)
				}
				if _, ok := waitingFor[c]; !ok {
					t.Errorf("%s: %s waits for %s, which has no waiting outcome", state, p.condition, c)
				}
			}
			seen[p.condition] = true
		}
	}
}

func TestRequeueAfter(t *testing.T) {
	phases := []tenantPhase{
		{condition: tenancyv1alpha1.NamespaceReadyCondition},
		{condition: tenancyv1alpha1.ComponentsReadyCondition, recheck: rolloutRecheck},
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		results []outcome
		after   time.Duration
		err     error
	}{
		{name: "a converged tenant is not looked at again", results: []outcome{phase.Done("", ""), phase.Done("", "")}},
		{name: "an error is returned for backoff", results: []outcome{phase.Failed("", boom), phase.Progressing("", "")}, err: boom},
		{name: "a stall is looked at again after stalledRetry", results: []outcome{phase.Stalled("", ""), phase.Progressing("", "")}, after: stalledRetry},
		{name: "a phase with a recheck still under way is looked at again after it", results: []outcome{phase.Done("", ""), phase.Progressing("", "")}, after: rolloutRecheck},
		{name: "a phase without a recheck under way waits for its event", results: []outcome{phase.Progressing("", ""), phase.Done("", "")}},
		{name: "a converged phase that asked to be looked at again is, when it asked", results: []outcome{phase.Done("", ""), waitingForWindow(phase.Done("", ""), 3*time.Hour)}, after: 3 * time.Hour},
		{name: "a phase's recheck comes first when it is sooner than the time asked for", results: []outcome{phase.Done("", ""), waitingForWindow(phase.Progressing("", ""), time.Hour)}, after: rolloutRecheck},
		{name: "the time asked for comes first when it is sooner than the recheck", results: []outcome{phase.Done("", ""), waitingForWindow(phase.Progressing("", ""), time.Second)}, after: time.Second},
		{name: "a stall is looked at again after stalledRetry, whatever was asked", results: []outcome{phase.Stalled("", ""), waitingForWindow(phase.Done("", ""), time.Hour)}, after: stalledRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := make([]phaseResult, len(tc.results))
			for i, o := range tc.results {
				results[i] = phaseResult{condition: phases[i].condition, outcome: o}
			}
			got, err := requeueAfter(phases, results)
			if !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
			if got.RequeueAfter != tc.after {
				t.Errorf("RequeueAfter = %v, want %v", got.RequeueAfter, tc.after)
			}
		})
	}
}

// waitingForWindow is o asking to be looked at again after d, as the components phase asks when a
// rollout waits for the tenant's maintenance window.
func waitingForWindow(o outcome, d time.Duration) outcome {
	o.RequeueAfter = d
	return o
}
