// Package conditions edits the kstatus conditions of a status draft, as every reconciler writes
// them: Ready always present, Reconciling and Stalled only while true, each stamped with the
// generation the reconcile observed.
package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Draft edits the conditions of one status draft for one generation.
type Draft struct {
	List       *[]metav1.Condition
	Generation int64
}

// For edits list for generation.
func For(list *[]metav1.Condition, generation int64) Draft {
	return Draft{List: list, Generation: generation}
}

// Set sets a condition of the type.
func (c Draft) Set(typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(c.List, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: c.Generation,
	})
}

// Remove removes the conditions of the types.
func (c Draft) Remove(types ...string) {
	for _, typ := range types {
		meta.RemoveStatusCondition(c.List, typ)
	}
}

// Ready says the object is Ready, and neither Reconciling nor Stalled.
func (c Draft) Ready(reason, message string) {
	c.Set(tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, reason, message)
	c.Remove(tenancyv1alpha1.ReconcilingCondition, tenancyv1alpha1.StalledCondition)
}

// Reconciling says the object is not Ready yet and on its way.
func (c Draft) Reconciling(reason, message string) {
	c.Set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, reason, message)
	c.Set(tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, reason, message)
	c.Remove(tenancyv1alpha1.StalledCondition)
}

// Stalled says the object is not Ready and will not get there without a change.
func (c Draft) Stalled(reason, message string) {
	c.Set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, reason, message)
	c.Set(tenancyv1alpha1.StalledCondition, metav1.ConditionTrue, reason, message)
	c.Remove(tenancyv1alpha1.ReconcilingCondition)
}
