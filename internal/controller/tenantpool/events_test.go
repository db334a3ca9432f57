package tenantpool

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	. "github.com/landlord-dev/landlord/internal/controller/controllertest"
)

// A spare bound to a claim, and every event the bind sets off, costs the pool the same whatever
// the number of tenants: the pool reads its spares from an index, counts allocated tenants from
// events, and wakes only on an event that changes its counts. Each step states the lists it
// makes, the objects the cache visits for them, and what it enqueues, at 10 and at 2,000
// customers. (The claim's half of the bind is the tenantclaim package's test of the same name.)
func TestBindingAClaimVisitsWhatChangedNotEveryTenant(t *testing.T) {
	for _, n := range []int{10, 2000} {
		t.Run(fmt.Sprintf("with %d customers of the pool and %d tenants of none", n, n), func(t *testing.T) {
			ctx := context.Background()
			inner, reader := SignupClient(t, n)
			pools := &Reconciler{Client: reader}
			poolEvents := pools.tenantHandler()
			q := NewQueue()
			defer q.ShutDown()

			// The informer's initial list reaches the pool's handler as one create per tenant.
			all := &tenancyv1alpha1.TenantList{}
			if err := inner.List(ctx, all); err != nil {
				t.Fatal(err)
			}
			for i := range all.Items {
				poolEvents.Create(ctx, event.CreateEvent{Object: &all.Items[i]}, q)
			}
			Queued(q)

			getTenant := func(name string) *tenancyv1alpha1.Tenant {
				return Get(t, inner, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{})
			}
			tenantEvent := func(before, after *tenancyv1alpha1.Tenant) {
				poolEvents.Update(ctx, event.UpdateEvent{ObjectOld: before, ObjectNew: after}, q)
			}
			const bound = "signup-spare-0"
			var newSpare string

			for _, step := range []struct {
				name           string
				do             func(t *testing.T)
				lists, visited int
				enqueued       []reconcile.Request
			}{
				{
					name: "a spare bound to a claim, as the claim controller writes it, wakes the pool",
					do: func(t *testing.T) {
						before := getTenant(bound)
						after := before.DeepCopy()
						after.Labels[tenancyv1alpha1.AllocatedLabel] = "true"
						after.Labels[tenancyv1alpha1.ClaimUIDLabel] = "new-uid"
						after.Annotations = map[string]string{tenancyv1alpha1.ClaimAnnotation: "default/new"}
						after.OwnerReferences = nil
						if err := inner.Update(ctx, after); err != nil {
							t.Fatal(err)
						}
						tenantEvent(before, getTenant(bound))
					},
					enqueued: []reconcile.Request{PoolRequest("signup")},
				},
				{
					name: "the pool refills and counts its allocated tenants without listing them",
					do: func(t *testing.T) {
						if _, err := pools.Reconcile(ctx, PoolRequest("signup")); err != nil {
							t.Fatal(err)
						}
						pool := Get(t, inner, client.ObjectKey{Name: "signup"}, &tenancyv1alpha1.TenantPool{})
						if s := pool.Status; s.Ready != 2 || s.Provisioning != 1 || s.Allocated != int32(n+1) {
							t.Errorf("pool status = ready %d provisioning %d allocated %d, want 2, 1, %d", s.Ready, s.Provisioning, s.Allocated, n+1)
						}
						for name := range pools.pending(pools.creating, "signup") {
							newSpare = name
						}
					},
					lists: 1, visited: 2,
				},
				{
					name: "a status write of an allocated tenant wakes no pool",
					do: func(*testing.T) {
						before := getTenant("customer-0")
						after := before.DeepCopy()
						after.ResourceVersion += "1"
						after.Status.Namespace = "tenant-customer-0"
						tenantEvent(before, after)
					},
				},
				{
					name: "the new spare turning Ready wakes the pool",
					do: func(t *testing.T) {
						before := getTenant(newSpare)
						after := before.DeepCopy()
						after.Status = tenancyv1alpha1.TenantStatus{ObservedGeneration: after.Generation, Conditions: getTenant("signup-spare-1").Status.Conditions}
						if err := inner.Status().Update(ctx, after); err != nil {
							t.Fatal(err)
						}
						tenantEvent(before, after)
					},
					enqueued: []reconcile.Request{PoolRequest("signup")},
				},
			} {
				t.Run(step.name, func(t *testing.T) {
					reader.Lists, reader.Visited = 0, 0
					step.do(t)
					if reader.Lists != step.lists || reader.Visited != step.visited {
						t.Errorf("%d lists visiting %d objects, want %d visiting %d", reader.Lists, reader.Visited, step.lists, step.visited)
					}
					if got := Queued(q); fmt.Sprint(got) != fmt.Sprint(step.enqueued) {
						t.Errorf("enqueued %v, want %v", got, step.enqueued)
					}
				})
			}
		})
	}
}

// poolTenant is a tenant of pool "signup" in the given role.
func poolTenant(name string, role poolRole) *tenancyv1alpha1.Tenant {
	t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{
		Name: name, ResourceVersion: "1", Generation: 1,
		Labels: map[string]string{tenancyv1alpha1.PoolLabel: "signup"},
	}}
	pool := &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: "signup", UID: "pool-uid"}}
	owner := *metav1.NewControllerRef(pool, tenancyv1alpha1.GroupVersion.WithKind("TenantPool"))
	switch role {
	case allocatedTenant:
		t.Labels[tenancyv1alpha1.AllocatedLabel] = "true"
	case readySpare:
		t.OwnerReferences = []metav1.OwnerReference{owner}
		t.Status = tenancyv1alpha1.TenantStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue}}}
	case provisioningSpare:
		t.OwnerReferences = []metav1.OwnerReference{owner}
	}
	return t
}

// changed is t after a write: a new resourceVersion, and whatever change does.
func changed(t *tenancyv1alpha1.Tenant, change func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
	out := t.DeepCopy()
	out.ResourceVersion += "1"
	change(out)
	return out
}

// A pool's status counts its spares by role and its allocated tenants; an event that changes
// neither (most often a status write of one of the thousands of tenants it handed out) must not
// cost the pool a reconcile, and the allocated count follows the events without a list.
func TestATenantEventWakesOnlyThePoolsWhoseCountsItChanges(t *testing.T) {
	allocated := poolTenant("customer", allocatedTenant)
	provisioning := poolTenant("spare", provisioningSpare)
	for _, tc := range []struct {
		name          string
		before, after *tenancyv1alpha1.Tenant // nil: the tenant does not exist
		wake          []reconcile.Request
		allocated     int // the pool's count of allocated tenants after the event
	}{
		{name: "a new spare wakes its pool", after: provisioning, wake: []reconcile.Request{PoolRequest("signup")}},
		{name: "an allocated tenant seen for the first time wakes its pool and is counted", after: allocated, wake: []reconcile.Request{PoolRequest("signup")}, allocated: 1},
		{name: "a status write of an allocated tenant wakes no pool", before: allocated, after: changed(allocated, func(t *tenancyv1alpha1.Tenant) { t.Status.Namespace = "tenant-customer" }), allocated: 1},
		{name: "deleting an allocated tenant wakes its pool and uncounts it", before: allocated, wake: []reconcile.Request{PoolRequest("signup")}},
		{name: "a status write that leaves a spare provisioning wakes no pool", before: provisioning, after: changed(provisioning, func(t *tenancyv1alpha1.Tenant) { t.Status.Namespace = "tenant-spare" })},
		{name: "a spare turning Ready wakes its pool", before: provisioning, after: poolTenant("spare", readySpare), wake: []reconcile.Request{PoolRequest("signup")}},
		{name: "a spare being bound wakes its pool and is counted", before: poolTenant("spare", readySpare), after: poolTenant("spare", allocatedTenant), wake: []reconcile.Request{PoolRequest("signup")}, allocated: 1},
		{name: "a tenant relabeled to another pool wakes both pools", before: allocated, after: changed(allocated, func(t *tenancyv1alpha1.Tenant) { t.Labels[tenancyv1alpha1.PoolLabel] = "other" }), wake: []reconcile.Request{PoolRequest("signup"), PoolRequest("other")}},
		{name: "a tenant of no pool wakes none", after: &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "direct"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := &Reconciler{}
			h := r.tenantHandler()
			q := NewQueue()
			defer q.ShutDown()
			if tc.before != nil {
				// The tenant as the cache had it before the event.
				h.Create(ctx, event.CreateEvent{Object: tc.before}, q)
				Queued(q)
			}
			switch {
			case tc.before == nil:
				h.Create(ctx, event.CreateEvent{Object: tc.after}, q)
			case tc.after == nil:
				h.Delete(ctx, event.DeleteEvent{Object: tc.before}, q)
			default:
				h.Update(ctx, event.UpdateEvent{ObjectOld: tc.before, ObjectNew: tc.after}, q)
			}
			if got := Queued(q); fmt.Sprint(got) != fmt.Sprint(tc.wake) {
				t.Errorf("woke %v, want %v", got, tc.wake)
			}
			if got := r.allocations.count("signup"); got != tc.allocated {
				t.Errorf("pool signup counts %d allocated tenants, want %d", got, tc.allocated)
			}
		})
	}
}
