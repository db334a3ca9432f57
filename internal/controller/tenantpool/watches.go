package tenantpool

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Each handler here maps an event to the pools it can affect, and finds them without
// listing every tenant or every claim.

// poolRole is what a tenant is to the pool its label names, as far as the pool tells apart.
type poolRole int

const (
	notInPool         poolRole = iota
	allocatedTenant            // handed to a customer: counted, never touched again
	foreignTenant              // labeled with the pool by someone else: not the pool's
	leavingSpare               // being deleted
	collidedSpare              // stalled on the data of an earlier tenant of its name
	readySpare                 // Ready to be bound
	provisioningSpare          // not Ready yet
	suspendedSpare             // suspended by someone looking at it: kept, and not counted
)

// poolRoleOf is the pool a tenant's label names and what the tenant is to it.
func poolRoleOf(t *tenancyv1alpha1.Tenant) (string, poolRole) {
	pool := t.Labels[tenancyv1alpha1.PoolLabel]
	switch {
	case pool == "":
		return "", notInPool
	case t.IsAllocated():
		return pool, allocatedTenant
	case !t.IsUnallocatedSpare():
		return pool, foreignTenant
	case !t.DeletionTimestamp.IsZero():
		return pool, leavingSpare
	case t.Spec.Suspend:
		// Before the collided check: a person suspended it to look at it, whatever it holds.
		return pool, suspendedSpare
	case holdsForeignData(t):
		return pool, collidedSpare
	case t.IsReadySpare():
		return pool, readySpare
	}
	return pool, provisioningSpare
}

// tenantHandler maps a tenant event to the pool whose status or spares it can change: a tenant
// joining, leaving or changing role in a pool. A write that leaves a tenant's role as it was (any
// status write of an allocated tenant, most of a provisioning spare's) wakes no pool. The
// handler also keeps the pools' counts of allocated tenants, which their reconciles do not list.
func (r *Reconciler) tenantHandler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.tenantChanged(q, nil, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.tenantChanged(q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.tenantChanged(q, e.Object, nil)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.tenantChanged(q, nil, e.Object)
		},
	}
}

// tenantChanged handles a tenant going from before to after; either is nil when it did not exist.
func (r *Reconciler) tenantChanged(q workqueue.TypedRateLimitingInterface[reconcile.Request], before, after client.Object) {
	oldPool, oldRole := poolRoleOfObject(before)
	newPool, newRole := poolRoleOfObject(after)
	if after != nil {
		r.allocations.observe(after.GetName(), newPool, newRole == allocatedTenant)
	} else if before != nil {
		r.allocations.observe(before.GetName(), "", false)
	}
	if before != nil && after != nil && oldPool == newPool && oldRole == newRole {
		return
	}
	for _, pool := range []string{oldPool, newPool} {
		if pool != "" {
			// The queue holds a key once, so a pool named twice is reconciled once.
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: pool}})
		}
	}
}

func poolRoleOfObject(obj client.Object) (string, poolRole) {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok || t == nil {
		return "", notInPool
	}
	return poolRoleOf(t)
}

// allocations is, for each pool, the names of the tenants it handed out that still carry its
// label, kept from the tenant events the pool controller receives: the events of every tenant
// reach the handler once the cache has them, the initial list included, so a pool counts its
// allocated tenants without listing them.
type allocations struct {
	mu     sync.Mutex
	byPool map[string]map[string]struct{}
	poolOf map[string]string
}

// observe records whether tenant name is now an allocated tenant of pool.
func (a *allocations) observe(name, pool string, allocated bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !allocated {
		pool = ""
	}
	prev, had := a.poolOf[name]
	if had && prev == pool || !had && pool == "" {
		return
	}
	if had {
		delete(a.byPool[prev], name)
		if len(a.byPool[prev]) == 0 {
			delete(a.byPool, prev)
		}
		delete(a.poolOf, name)
	}
	if pool == "" {
		return
	}
	if a.byPool == nil {
		a.byPool, a.poolOf = map[string]map[string]struct{}{}, map[string]string{}
	}
	if a.byPool[pool] == nil {
		a.byPool[pool] = map[string]struct{}{}
	}
	a.byPool[pool][name] = struct{}{}
	a.poolOf[name] = pool
}

// count is how many tenants pool has handed out.
func (a *allocations) count(pool string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byPool[pool])
}

// has is whether tenant name is one pool handed out.
func (a *allocations) has(pool, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.byPool[pool][name]
	return ok
}
