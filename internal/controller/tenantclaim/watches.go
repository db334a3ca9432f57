package tenantclaim

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

// Each handler here maps an event to the claims it can affect, and finds them without listing
// every claim.

// claimsForSpare maps a tenant event to the pending claims of its pool when the tenant is a
// Ready spare one of them could take. Every event of such a spare counts, not only its turning
// Ready: a claim whose bind lost the spare to a write that left it Ready binds on that write's
// event. Events of allocated tenants and of spares not Ready wake no claim.
func (r *Reconciler) claimsForSpare(ctx context.Context, obj client.Object) []reconcile.Request {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok || !t.IsUnallocatedSpare() || !t.IsReadySpare() {
		return nil
	}
	return r.pendingClaims(ctx, t.Labels[tenancyv1alpha1.PoolLabel])
}

// poolHandler maps a pool's creation, deletion and the start of its deletion to its pending
// claims: whether the pool exists and is not being deleted is all a claim reads of it. A pool's
// status and spec changes reach claims through its spares.
func (r *Reconciler) poolHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], pool client.Object) {
		for _, req := range r.pendingClaims(ctx, pool.GetName()) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// Deleted, a spec that allows claims it refused before, or a cap reached or left,
			// which claims waiting on the pool say.
			if e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
				e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() || atMaxTenants(e.ObjectOld) != atMaxTenants(e.ObjectNew) {
				enqueue(ctx, q, e.ObjectNew)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// pendingClaims are the claims on pool not yet Bound, from the index: Bound claims, however
// many, are not visited.
func (r *Reconciler) pendingClaims(ctx context.Context, pool string) []reconcile.Request {
	if pool == "" {
		return nil
	}
	claims := &tenancyv1alpha1.TenantClaimList{}
	if err := r.Client.List(ctx, claims, client.MatchingFields{indexes.PendingClaimPool: pool}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing pending claims", "pool", pool)
		return nil
	}
	out := make([]reconcile.Request, 0, len(claims.Items))
	for i := range claims.Items {
		c := &claims.Items[i]
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
	}
	return out
}

// atMaxTenants is whether a pool says it has created spec.maxTenants tenants.
func atMaxTenants(obj client.Object) bool {
	pool, ok := obj.(*tenancyv1alpha1.TenantPool)
	return ok && meta.IsStatusConditionTrue(pool.Status.Conditions, tenancyv1alpha1.MaxTenantsReachedCondition)
}
