package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsAllocated is whether a pool tenant belongs to a customer.
func (t *Tenant) IsAllocated() bool {
	return t.Labels[AllocatedLabel] == "true" || t.Annotations[ClaimAnnotation] != ""
}

// IsUnallocatedSpare is whether a tenant is a pool's spare no customer has used: its data may
// be dropped when it is deleted. The pool label alone is not enough (anyone who may write a
// tenant may set it): a spare is also controlled by its pool, until a bind removes that.
func (t *Tenant) IsUnallocatedSpare() bool {
	pool := t.Labels[PoolLabel]
	owner := metav1.GetControllerOf(t)
	return pool != "" && !t.IsAllocated() && owner != nil && owner.Kind == "TenantPool" &&
		owner.APIVersion == GroupVersion.String() && owner.Name == pool
}

// IsReadySpare is whether a tenant is ready to be handed out now: Ready for its current
// generation, not suspended and not being deleted. (It says nothing of allocation; see
// IsUnallocatedSpare.) A suspended spare is not handed out: whoever suspended it is looking at
// it, and its Ready condition is what was last observed, not what is.
func (t *Tenant) IsReadySpare() bool {
	return t.DeletionTimestamp.IsZero() && !t.Spec.Suspend && t.Status.ObservedGeneration == t.Generation &&
		meta.IsStatusConditionTrue(t.Status.Conditions, ReadyCondition)
}
