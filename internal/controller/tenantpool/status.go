package tenantpool

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
)

// observation is what one reconcile of a pool counted of its tenants, by what they are to it,
// once its creates and deletes were made.
type observation struct {
	ready, provisioning, suspended, allocated int32
	// tenants is every tenant the pool created that still exists and stays, spares and
	// allocated, for spec.maxTenants.
	tenants int32
}

// computeStatus is the pool's status after a reconcile, following kstatus: Ready while it holds
// spec.replicas Ready spares; Stalled while it is short of them and spec.maxTenants forbids
// creating more (none provisioning); Reconciling while it fills; MaxTenantsReached only while
// true. observedGeneration is always the current generation: every reconcile acts on the spec
// it read.
func computeStatus(pool *tenancyv1alpha1.TenantPool, n observation) tenancyv1alpha1.TenantPoolStatus {
	s := *pool.Status.DeepCopy()
	s.ObservedGeneration = pool.Generation
	s.Ready, s.Provisioning, s.Suspended, s.Allocated = n.ready, n.provisioning, n.suspended, n.allocated
	c := conditions.For(&s.Conditions, pool.Generation)
	// Suspended spares are named in the message, so a pool holding more spares than its
	// replicas says why.
	var held string
	if n.suspended > 0 {
		held = fmt.Sprintf(", %d suspended", n.suspended)
	}
	capped := pool.Spec.MaxTenants != nil && n.tenants >= *pool.Spec.MaxTenants
	if capped {
		c.Set(tenancyv1alpha1.MaxTenantsReachedCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonMaxTenantsReached,
			fmt.Sprintf("the pool has created %d tenants (%d allocated), its spec.maxTenants: it creates no spare until that is raised or tenants are deleted", n.tenants, n.allocated))
	} else {
		// Present only while true, as Stalled is.
		c.Remove(tenancyv1alpha1.MaxTenantsReachedCondition)
	}
	switch {
	case n.ready >= pool.Spec.Replicas:
		c.Ready(tenancyv1alpha1.ReasonSucceeded, fmt.Sprintf("%d spares ready%s", n.ready, held))
	case capped && n.provisioning == 0:
		c.Stalled(tenancyv1alpha1.ReasonMaxTenantsReached,
			fmt.Sprintf("%d of %d spares ready, and the pool has created spec.maxTenants (%d) tenants: raise it, or delete tenants", n.ready, pool.Spec.Replicas, *pool.Spec.MaxTenants))
	default:
		c.Reconciling(tenancyv1alpha1.ReasonProgressing,
			fmt.Sprintf("%d of %d spares ready, %d provisioning%s", n.ready, pool.Spec.Replicas, n.provisioning, held))
	}
	return s
}
