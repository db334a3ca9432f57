package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// phaseConditions are the conditions a phase may own; those of phases that did not run (the
// secrets of an Archived tenant) are removed.
var phaseConditions = []string{tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.SecretsReadyCondition, tenancyv1alpha1.DatabasesReadyCondition, tenancyv1alpha1.ComponentsReadyCondition}

// computeStatus is the tenant's status after a reconcile whose phases observed results,
// following kstatus: Ready always, the summary of the phases; Reconciling only while a phase is
// in progress; Stalled only while a phase cannot converge without a person. observedGeneration
// moves on only when every phase reached a verdict (done or stalled) for the current generation.
func computeStatus(t *tenancyv1alpha1.Tenant, namespace string, results []phaseResult) tenancyv1alpha1.TenantStatus {
	s := *t.Status.DeepCopy()
	gen := t.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen,
		})
	}

	ran := map[string]bool{}
	var stalled, progressing *phaseResult
	for i := range results {
		res := &results[i]
		ran[res.condition] = true
		status := metav1.ConditionFalse
		if res.done {
			status = metav1.ConditionTrue
		}
		set(res.condition, status, res.reason, res.message)
		switch {
		case res.stalled && stalled == nil:
			stalled = res
		case !res.done && !res.stalled && progressing == nil:
			progressing = res
		}
	}
	for _, c := range phaseConditions {
		if !ran[c] {
			meta.RemoveStatusCondition(&s.Conditions, c)
		}
	}

	switch {
	case stalled != nil:
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, stalled.reason, stalled.message)
		set(tenancyv1alpha1.StalledCondition, metav1.ConditionTrue, stalled.reason, stalled.message)
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.ReconcilingCondition)
		s.ObservedGeneration = gen
	case progressing != nil:
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, progressing.reason, progressing.message)
		set(tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, progressing.reason, progressing.message)
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.StalledCondition)
	default:
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded, readyMessage(t, namespace))
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.ReconcilingCondition)
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.StalledCondition)
		s.ObservedGeneration = gen
	}

	removed := t.Spec.State == tenancyv1alpha1.StateArchived || t.Spec.State == tenancyv1alpha1.StatePurged
	switch {
	case !removed:
		s.Namespace = namespace
	case stalled == nil && progressing == nil:
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
