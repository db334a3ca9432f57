package tenant

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// conditionCurrent is whether the tenant's condition of a type is True with the reason, for its
// current generation: work it reports need not be done again.
func conditionCurrent(t *tenancyv1alpha1.Tenant, typ, reason string) bool {
	c := meta.FindStatusCondition(t.Status.Conditions, typ)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && c.ObservedGeneration == t.Generation
}
