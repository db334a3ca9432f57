package tenant

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
)

// phaseConditions are the conditions the phases of any state own, from the table; those of
// phases that did not run (the secrets of an Archived tenant) are removed.
var phaseConditions = func() []string {
	var out []string
	for _, phases := range tenantPhases {
		for _, p := range phases {
			if !slices.Contains(out, p.condition) {
				out = append(out, p.condition)
			}
		}
	}
	return out
}()

// computeStatus is the tenant's status after a reconcile: the draft the phases filled in, with
// the conditions their results add up to, following kstatus. Ready is always present, the
// summary of the phases; Reconciling only while a phase is in progress; Stalled only while a
// phase cannot converge without a person, and a stall is reported ahead of progress.
// observedGeneration moves on only when every phase reached a verdict (done or stalled) for the
// current generation.
func computeStatus(t *tenancyv1alpha1.Tenant, namespace string, draft tenancyv1alpha1.TenantStatus, results []phaseResult) tenancyv1alpha1.TenantStatus {
	s := draft
	s.Conditions = append([]metav1.Condition(nil), draft.Conditions...)
	gen := t.Generation
	conds := conditions.For(&s.Conditions, gen)

	ran := map[string]bool{}
	var stalledBy, progressingBy *phaseResult
	for i := range results {
		res := &results[i]
		ran[res.condition] = true
		status := metav1.ConditionFalse
		if res.Done {
			status = metav1.ConditionTrue
		}
		conds.Set(res.condition, status, res.Reason, res.Message)
		switch {
		case res.Stalled && stalledBy == nil:
			stalledBy = res
		case !res.Done && !res.Stalled && progressingBy == nil:
			progressingBy = res
		}
	}
	for _, c := range phaseConditions {
		if !ran[c] {
			conds.Remove(c)
		}
	}
	conds.Remove(tenancyv1alpha1.SuspendedCondition)

	switch {
	case stalledBy != nil:
		conds.Stalled(stalledBy.Reason, stalledBy.Message)
		s.ObservedGeneration = gen
	case progressingBy != nil:
		conds.Reconciling(progressingBy.Reason, progressingBy.Message)
	default:
		conds.Ready(tenancyv1alpha1.ReasonSucceeded, readyMessage(t, namespace))
		s.ObservedGeneration = gen
	}

	removed := t.Spec.State == tenancyv1alpha1.StateArchived || t.Spec.State == tenancyv1alpha1.StatePurged
	switch {
	case !removed:
		s.Namespace = namespace
	case stalledBy == nil && progressingBy == nil:
		s.Namespace = ""
	}
	return s
}

func readyMessage(t *tenancyv1alpha1.Tenant, namespace string) string {
	switch t.Spec.State {
	case tenancyv1alpha1.StateArchived, tenancyv1alpha1.StatePurged:
		return fmt.Sprintf("tenant is %s: namespace %s is removed", t.Spec.State, namespace)
	}
	state := t.Spec.State
	if state == "" {
		state = tenancyv1alpha1.StateActive
	}
	return fmt.Sprintf("tenant is %s in namespace %s", state, namespace)
}

// namespaceMovedStatus is the status of a tenant whose namespace, as its status records it, is
// not the one the operator's configuration names: the namespace prefix changed under it.
// Following the configuration would start the tenant over in a second namespace, leaving its
// volumes in the first and, the store being keyed by namespace, its database credentials out of
// reach. The tenant stalls, and only its conditions change.
func namespaceMovedStatus(t *tenancyv1alpha1.Tenant, configured string) tenancyv1alpha1.TenantStatus {
	s := *t.Status.DeepCopy()
	conds := conditions.For(&s.Conditions, t.Generation)
	conds.Stalled(tenancyv1alpha1.ReasonNamespaceMoved, fmt.Sprintf(
		"the tenant's namespace is %s, but the operator's configuration names %s (namespacePrefix changed): "+
			"Landlord changes nothing of the tenant rather than start it over in a second namespace; restore namespacePrefix",
		t.Status.Namespace, configured))
	s.ObservedGeneration = t.Generation
	return s
}

// suspendedStatus is the status of a tenant whose spec.suspend is true: what was last observed,
// untouched (Ready, Reconciling, Stalled and the phases' conditions say how the tenant was when
// Landlord stopped looking), with the Suspended condition saying that Landlord changes nothing
// and observedGeneration current, since the spec was read and suspend is what it asks. kstatus
// therefore reports the last observed health: Current for a tenant that was Ready, InProgress
// for one suspended while it was still converging, Failed for one that was stalled. A request
// to reconcile now is not handled while suspended (lastHandledReconcileAt stays), so a client
// waiting on it keeps waiting, until the tenant is resumed.
func suspendedStatus(t *tenancyv1alpha1.Tenant) tenancyv1alpha1.TenantStatus {
	s := *t.Status.DeepCopy()
	conds := conditions.For(&s.Conditions, t.Generation)
	conds.Set(tenancyv1alpha1.SuspendedCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonSuspended,
		"spec.suspend is true: Landlord changes nothing of this tenant (no phase runs, no drift is repaired) until it is set to false")
	s.ObservedGeneration = t.Generation
	return s
}
