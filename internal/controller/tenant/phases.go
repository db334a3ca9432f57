package tenant

import (
	"context"
	"time"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/domains"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
)

// A tenant is converged by phases. Each phase owns one concern and the one condition that
// reports it, reads the tenant from its scope, writes its part of the status draft, and returns
// one outcome. The table below lists the phases each lifecycle state runs, in order; Reconcile
// runs them and summarises their outcomes. Adding a phase is a function with the phase signature
// and a row here.

// tenantScope is one reconcile of one tenant: the tenant as the cache holds it with its class's
// fields filled in (read only), the
// name of its namespace, and the status draft the phases fill in. Conditions are not set by the
// phases: computeStatus sets them from the outcomes.
type tenantScope struct {
	tenant    *tenancyv1alpha1.Tenant
	namespace string
	status    tenancyv1alpha1.TenantStatus
	// verify: a reconcile was asked for (ReconcileRequestAnnotation), and what earlier
	// reconciles found in place is checked again rather than trusted: databases on their servers.
	verify bool
	// applied is the tenant as its namespace is built from, its domains those it holds (the
	// domains phase sets it; nil until it has decided), and domainsErr why it could not decide.
	applied    *tenancyv1alpha1.Tenant
	domainsErr error
	// class is the tenant's TenantClass, nil when it names none; tenant is as the class makes
	// it (package tenantclass).
	class *tenancyv1alpha1.TenantClass
	// podsPool is the node pool the namespace's pods were placed on, as the namespace phase
	// found it recorded.
	podsPool string
}

func newTenantScope(t *tenancyv1alpha1.Tenant, namespace string) *tenantScope {
	return &tenantScope{tenant: t, namespace: namespace, status: *t.Status.DeepCopy()}
}

// tenantPhase is one row of the table.
type tenantPhase struct {
	// condition reports the phase's outcome.
	condition string
	run       func(*Reconciler, context.Context, *tenantScope) outcome
	// after are the conditions of earlier phases this one waits for: it runs only once they
	// are done in this reconcile (the namespace for everything working inside it).
	after []string
	// recheck, when set, looks at the tenant again this long after a reconcile that left the
	// phase neither done nor failed: for progress no watched event may report.
	recheck time.Duration
}

// phasesActive converge everything an Active or Frozen tenant has.
var phasesActive = []tenantPhase{
	// A domain handed over waits for another tenant's objects to go, which no watched event
	// reports (handOver).
	{condition: tenancyv1alpha1.DomainsReadyCondition, run: (*Reconciler).checkDomains, recheck: domains.HandoverRecheck},
	{condition: tenancyv1alpha1.NamespaceReadyCondition, run: (*Reconciler).ensureNamespace},
	{condition: tenancyv1alpha1.WorkloadsReadyCondition, run: (*Reconciler).ensureWorkloads, after: inNamespace},
	{condition: tenancyv1alpha1.SecretsReadyCondition, run: (*Reconciler).copySharedSecrets, after: inNamespace},
	{condition: tenancyv1alpha1.DatabasesReadyCondition, run: (*Reconciler).ensureDatabases, after: inNamespace},
	// After the databases phase, which records in the draft the servers they are on.
	{condition: tenancyv1alpha1.EgressReadyCondition, run: (*Reconciler).ensureEgress, after: inNamespace},
	// Workload status events re-trigger a rollout in progress; the recheck, a look at the cache
	// (no request), is the safety net should one be missed. No component is rendered for a
	// domain the tenant does not hold, nor before its kept volumes are bound again.
	{condition: tenancyv1alpha1.ComponentsReadyCondition, run: (*Reconciler).ensureComponents, recheck: rolloutRecheck,
		after: []string{tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.DomainsReadyCondition, tenancyv1alpha1.WorkloadsReadyCondition}},
}

// inNamespace is what a phase working inside the tenant namespace waits for.
var inNamespace = []string{tenancyv1alpha1.NamespaceReadyCondition}

// waitingFor is the outcome of a phase waiting for an earlier one.
var waitingFor = map[string]outcome{
	tenancyv1alpha1.NamespaceReadyCondition: phase.Progressing(tenancyv1alpha1.ReasonNamespaceNotReady, "waiting for the namespace"),
	tenancyv1alpha1.DomainsReadyCondition:   phase.Progressing(tenancyv1alpha1.ReasonDomainsNotReady, "waiting for the tenant's domains"),
	tenancyv1alpha1.WorkloadsReadyCondition: phase.Progressing(tenancyv1alpha1.ReasonWorkloadsNotReady, "waiting for the tenant's workloads"),
}

// tenantPhases are the phases of each lifecycle state.
var tenantPhases = map[tenancyv1alpha1.TenantState][]tenantPhase{
	tenancyv1alpha1.StateActive: phasesActive,
	tenancyv1alpha1.StateFrozen: phasesActive,
	tenancyv1alpha1.StateArchived: {
		{condition: tenancyv1alpha1.NamespaceReadyCondition, run: (*Reconciler).removeNamespace},
		{condition: tenancyv1alpha1.DatabasesReadyCondition, run: (*Reconciler).keepDatabases},
	},
	tenancyv1alpha1.StatePurged: {
		{condition: tenancyv1alpha1.NamespaceReadyCondition, run: (*Reconciler).removeNamespace},
		{condition: tenancyv1alpha1.DatabasesReadyCondition, run: (*Reconciler).purgeDatabases},
	},
}

// phasesFor is the table row of a state; a tenant without one (defaulting has not run) is Active.
func phasesFor(state tenancyv1alpha1.TenantState) []tenantPhase {
	if phases, ok := tenantPhases[state]; ok {
		return phases
	}
	return phasesActive
}

// phaseResult is one phase's outcome and the condition that reports it; waited: the phase did
// not run, waiting for an earlier one.
type phaseResult struct {
	condition string
	outcome
	waited bool
}

// runPhases runs the phases in order. Every phase runs, so each condition reports on every
// reconcile, except that one waits while a phase it comes after is not done.
func (r *Reconciler) runPhases(ctx context.Context, s *tenantScope, phases []tenantPhase) []phaseResult {
	results := make([]phaseResult, 0, len(phases))
	finished := make(map[string]bool, len(phases))
	for _, p := range phases {
		o, waiting := outcome{}, false
		for _, c := range p.after {
			if !finished[c] {
				o, waiting = waitingFor[c], true
				break
			}
		}
		if !waiting {
			o = p.run(r, ctx, s)
		}
		finished[p.condition] = o.Done
		results = append(results, phaseResult{condition: p.condition, outcome: o, waited: waiting})
	}
	return results
}

// outcome is what a phase observed (package phase): done, stalled, or neither (in progress, or
// a transient error retried with backoff); the engines a phase calls return the same.
type outcome = phase.Result
