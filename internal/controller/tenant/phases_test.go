package tenant

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The phase table's contract, with stand-in phases: every phase reports on every reconcile,
// phases inside the namespace wait for it, and the outcomes decide when to look again.
func TestRunPhases(t *testing.T) {
	stub := func(o outcome, ran *[]string, name string) func(*Reconciler, context.Context, *tenantScope) outcome {
		return func(*Reconciler, context.Context, *tenantScope) outcome {
			*ran = append(*ran, name)
			return o
		}
	}
	for _, tc := range []struct {
		name      string
		namespace outcome
		ran       []string
		reasons   []string
	}{
		{
			name:      "phases inside the namespace run once it is done",
			namespace: done(tenancyv1alpha1.ReasonSucceeded, "ready"),
			ran:       []string{"namespace", "secrets", "components"},
			reasons:   []string{tenancyv1alpha1.ReasonSucceeded, "SecretsOK", "ComponentsOK"},
		},
		{
			name:      "phases inside the namespace wait, and say so, while it is not done",
			namespace: progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "terminating"),
			ran:       []string{"namespace"},
			reasons:   []string{tenancyv1alpha1.ReasonNamespaceTerminating, tenancyv1alpha1.ReasonNamespaceNotReady, tenancyv1alpha1.ReasonNamespaceNotReady},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			phases := []tenantPhase{
				{condition: tenancyv1alpha1.NamespaceReadyCondition, run: stub(tc.namespace, &ran, "namespace")},
				{condition: tenancyv1alpha1.SecretsReadyCondition, run: stub(done("SecretsOK", ""), &ran, "secrets"), needsNamespace: true},
				{condition: tenancyv1alpha1.ComponentsReadyCondition, run: stub(done("ComponentsOK", ""), &ran, "components"), needsNamespace: true},
			}
			results := (&Reconciler{}).runPhases(context.Background(), &tenantScope{}, phases)
			if len(results) != len(phases) {
				t.Fatalf("%d results for %d phases", len(results), len(phases))
			}
			for i, res := range results {
				if res.condition != phases[i].condition || res.reason != tc.reasons[i] {
					t.Errorf("result %d = %s/%s, want %s/%s", i, res.condition, res.reason, phases[i].condition, tc.reasons[i])
				}
			}
			if !slices.Equal(ran, tc.ran) {
				t.Errorf("ran %v, want %v", ran, tc.ran)
			}
		})
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
		{name: "a converged tenant is not looked at again", results: []outcome{done("", ""), done("", "")}},
		{name: "an error is returned for backoff", results: []outcome{failed("", boom), progressing("", "")}, err: boom},
		{name: "a stall is looked at again after stalledRetry", results: []outcome{stalled("", ""), progressing("", "")}, after: stalledRetry},
		{name: "a phase with a recheck still under way is looked at again after it", results: []outcome{done("", ""), progressing("", "")}, after: rolloutRecheck},
		{name: "a phase without a recheck under way waits for its event", results: []outcome{progressing("", ""), done("", "")}},
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
