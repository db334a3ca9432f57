// Package classrollout is the TenantClass reconciler: it names each version of a class's spec
// (a revision, kept in status with the spec it stood for, while a tenant converges to it) and
// says how the current one reaches the tenants already of the class (status.rollout): all at
// once, in waves of a share of them each, or only tenants that join the class. The tenants
// choose their revision themselves from that status (tenantclass.Choose); this reconciler
// only releases waves and counts.
//
// It watches classes only. While a change rolls out it looks at the class's tenants again every
// classRecheck, from the cache: a fleet's status writes do not each wake it.
package classrollout

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// classRecheck is how often a class whose change is rolling out is looked at again.
const classRecheck = 15 * time.Second

// Reconciler keeps TenantClasses' status.
type Reconciler struct {
	Client client.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantclasses/status,verbs=get;patch

// SetupWithManager registers the controller: a class is looked at when its spec changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantclass").
		For(&tenancyv1alpha1.TenantClass{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(shutdown.Quiet(r))
}

// Reconcile computes the class's status from its spec and its tenants (nextStatus) and writes
// it when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &tenancyv1alpha1.TenantClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	tenants := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, tenants, client.MatchingFields{indexes.TenantClass: c.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	next, after := nextStatus(c, tenants.Items, now)
	if err := writes.PatchStatus(ctx, r.Client, c, &c.Status, next); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: after}, nil
}
