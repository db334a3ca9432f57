package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// computeStatus is the tenant's status after a reconcile that observed o, following kstatus:
// Ready always; Reconciling only while work is in progress; Stalled only while the tenant
// cannot converge without a person. observedGeneration moves on only when the reconcile reached
// a verdict (done or stalled) for the current generation.
func computeStatus(t *tenancyv1alpha1.Tenant, namespace string, o outcome) tenancyv1alpha1.TenantStatus {
	s := *t.Status.DeepCopy()
	gen := t.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen,
		})
	}

	nsStatus := metav1.ConditionFalse
	if o.done {
		nsStatus = metav1.ConditionTrue
	}
	set(tenancyv1alpha1.NamespaceReadyCondition, nsStatus, o.reason, o.message)

	switch {
	case o.done:
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded, readyMessage(t, namespace))
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.ReconcilingCondition)
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.StalledCondition)
		s.ObservedGeneration = gen
	case o.stalled:
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, o.reason, o.message)
		set(tenancyv1alpha1.StalledCondition, metav1.ConditionTrue, o.reason, o.message)
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.ReconcilingCondition)
		s.ObservedGeneration = gen
	default:
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, o.reason, o.message)
		set(tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, o.reason, o.message)
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.StalledCondition)
	}

	switch t.Spec.State {
	case tenancyv1alpha1.StateArchived, tenancyv1alpha1.StatePurged:
		if o.done {
			s.Namespace = ""
		}
	default:
		s.Namespace = namespace
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
