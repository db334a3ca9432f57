package tenant

import (
	"context"
	"fmt"
	"time"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/domains"
)

// A tenant is converged by phases. Each phase owns one concern and the one condition that
// reports it, reads the tenant from its scope, writes its part of the status draft, and returns
// one outcome. The table below lists the phases each lifecycle state runs, in order; Reconcile
// runs them and summarises their outcomes. Adding a phase is a function with the phase signature
// and a row here.

// tenantScope is one reconcile of one tenant: the tenant as the cache holds it (read only), the
// name of its namespace, and the status draft the phases fill in. Conditions are not set by the
// phases: computeStatus sets them from the outcomes.
type tenantScope struct {
	tenant    *tenancyv1alpha1.Tenant
	namespace string
	status    tenancyv1alpha1.TenantStatus
	// verify: a reconcile was asked for (ReconcileRequestAnnotation), and what earlier
	// reconciles found in place is checked again rather than trusted: databases on their servers.
	verify bool
}

func newTenantScope(t *tenancyv1alpha1.Tenant, namespace string) *tenantScope {
	return &tenantScope{tenant: t, namespace: namespace, status: *t.Status.DeepCopy()}
}

// tenantPhase is one row of the table.
type tenantPhase struct {
	// condition reports the phase's outcome.
	condition string
	run       func(*Reconciler, context.Context, *tenantScope) outcome
	// needsNamespace: the phase works inside the tenant namespace, and waits until the
	// namespace phase is done.
	needsNamespace bool
	// recheck, when set, looks at the tenant again this long after a reconcile that left the
	// phase neither done nor failed: for progress no watched event may report.
	recheck time.Duration
}

// phasesActive converge everything an Active or Frozen tenant has.
var phasesActive = []tenantPhase{
	// A domain handed over waits for another tenant's objects to go, which no watched event
	// reports (handOver).
	{condition: tenancyv1alpha1.NamespaceReadyCondition, run: (*Reconciler).ensureNamespace, recheck: domains.HandoverRecheck},
	{condition: tenancyv1alpha1.SecretsReadyCondition, run: (*Reconciler).copySharedSecrets, needsNamespace: true},
	{condition: tenancyv1alpha1.DatabasesReadyCondition, run: (*Reconciler).ensureDatabases, needsNamespace: true},
	// Workload status events re-trigger a rollout in progress; the recheck, a look at the cache
	// (no request), is the safety net should one be missed.
	{condition: tenancyv1alpha1.ComponentsReadyCondition, run: (*Reconciler).ensureComponents, needsNamespace: true, recheck: rolloutRecheck},
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

// phaseResult is one phase's outcome and the condition that reports it.
type phaseResult struct {
	condition string
	outcome
}

// runPhases runs the phases in order. Every phase runs, so each condition reports on every
// reconcile, except that one working inside the namespace waits while the namespace is not done.
func (r *Reconciler) runPhases(ctx context.Context, s *tenantScope, phases []tenantPhase) []phaseResult {
	results := make([]phaseResult, 0, len(phases))
	namespaceDone := false
	for _, p := range phases {
		var o outcome
		if p.needsNamespace && !namespaceDone {
			o = progressing(tenancyv1alpha1.ReasonNamespaceNotReady, "waiting for the namespace")
		} else {
			o = p.run(r, ctx, s)
		}
		if p.condition == tenancyv1alpha1.NamespaceReadyCondition {
			namespaceDone = o.done
		}
		results = append(results, phaseResult{condition: p.condition, outcome: o})
	}
	return results
}

// outcome is what a phase observed. Exactly one of three holds: done (the phase's concern has
// converged), stalled (it cannot converge without a person), or neither (in progress, or a
// transient error in err that is retried with backoff).
type outcome struct {
	done    bool
	stalled bool
	reason  string
	message string
	err     error
}

// done: the phase's concern has converged.
func done(reason, format string, args ...any) outcome {
	return outcome{done: true, reason: reason, message: fmt.Sprintf(format, args...)}
}

// stalled: the phase cannot converge until a person acts.
func stalled(reason, format string, args ...any) outcome {
	return outcome{stalled: true, reason: reason, message: fmt.Sprintf(format, args...)}
}

// progressing: work is under way and an event reports its end.
func progressing(reason, format string, args ...any) outcome {
	return outcome{reason: reason, message: fmt.Sprintf(format, args...)}
}

// failed: a transient error, reported with its own message and retried with backoff.
func failed(reason string, err error) outcome {
	return outcome{reason: reason, message: err.Error(), err: err}
}

// failedf is failed with an error of the formatted message.
func failedf(reason, format string, args ...any) outcome {
	return failed(reason, fmt.Errorf(format, args...))
}
