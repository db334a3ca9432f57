package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// conditions edits the conditions of one status draft for one generation.
type conditions struct {
	list       *[]metav1.Condition
	generation int64
}

func (c conditions) set(typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(c.list, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: c.generation,
	})
}

func (c conditions) remove(types ...string) {
	for _, typ := range types {
		meta.RemoveStatusCondition(c.list, typ)
	}
}

// The three kstatus summaries: Ready is always present; Reconciling and Stalled only while true.

func (c conditions) ready(reason, message string) {
	c.set(tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, reason, message)
	c.remove(tenancyv1alpha1.ReconcilingCondition, tenancyv1alpha1.StalledCondition)
}

func (c conditions) reconciling(reason, message string) {
	c.set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, reason, message)
	c.set(tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, reason, message)
	c.remove(tenancyv1alpha1.StalledCondition)
}

func (c conditions) stalled(reason, message string) {
	c.set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, reason, message)
	c.set(tenancyv1alpha1.StalledCondition, metav1.ConditionTrue, reason, message)
	c.remove(tenancyv1alpha1.ReconcilingCondition)
}

// conditionCurrent is whether the tenant's condition of a type is True with the reason, for its
// current generation: work it reports need not be done again.
func conditionCurrent(t *tenancyv1alpha1.Tenant, typ, reason string) bool {
	c := meta.FindStatusCondition(t.Status.Conditions, typ)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && c.ObservedGeneration == t.Generation
}
