package controller

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

// cacheVisits counts the lists made through it and the objects each makes the cache visit. The
// manager's cache answers a list by index from the index, visiting what it returns, and any
// other list (a label selector included) by visiting every object of the kind; the fake client
// stands in for the cache, and this reader charges each list what the cache would.
type cacheVisits struct {
	client.Client
	lists, visited int
}

func (c *cacheVisits) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	c.lists++
	o := client.ListOptions{}
	o.ApplyOptions(opts)
	if o.FieldSelector != nil {
		c.visited += meta.LenList(list)
		return nil
	}
	all, _ := list.DeepCopyObject().(client.ObjectList)
	if err := c.Client.List(ctx, all, client.InNamespace(o.Namespace)); err != nil {
		return err
	}
	c.visited += meta.LenList(all)
	return nil
}

// builderIndexes registers indexes with a fake client as the manager does with its cache.
type builderIndexes struct{ *fake.ClientBuilder }

func (b builderIndexes) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	b.WithIndex(obj, field, fn)
	return nil
}

// signupCluster is a pool "signup" of three Ready spares that has handed out n tenants to n
// Bound claims, n tenants of no pool, a claim "waiting" Pending on the pool and a new claim
// "new" on it.
func signupCluster(n int) []client.Object {
	pool := &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: "signup", UID: "pool-uid", Finalizers: []string{tenancyv1alpha1.Finalizer}},
		Spec:       tenancyv1alpha1.TenantPoolSpec{Replicas: 3},
	}
	owner := *metav1.NewControllerRef(pool, tenancyv1alpha1.GroupVersion.WithKind("TenantPool"))
	ready := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonSucceeded, LastTransitionTime: metav1.Now()}}
	objs := []client.Object{pool}
	for i := range 3 {
		objs = append(objs, &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("signup-spare-%d", i), Generation: 1,
				Labels:          map[string]string{tenancyv1alpha1.PoolLabel: "signup"},
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Status: tenancyv1alpha1.TenantStatus{ObservedGeneration: 1, Conditions: ready},
		})
	}
	for i := range n {
		uid := fmt.Sprintf("claim-uid-%d", i)
		objs = append(objs,
			&tenancyv1alpha1.Tenant{
				ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("customer-%d", i), Generation: 1,
					Labels: map[string]string{
						tenancyv1alpha1.PoolLabel: "signup", tenancyv1alpha1.AllocatedLabel: "true", tenancyv1alpha1.ClaimUIDLabel: uid,
					},
					Annotations: map[string]string{tenancyv1alpha1.ClaimAnnotation: fmt.Sprintf("default/bound-%d", i)},
				},
				Status: tenancyv1alpha1.TenantStatus{ObservedGeneration: 1, Conditions: ready},
			},
			&tenancyv1alpha1.Tenant{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("direct-%d", i), Generation: 1},
				Status:     tenancyv1alpha1.TenantStatus{ObservedGeneration: 1, Conditions: ready},
			},
			&tenancyv1alpha1.TenantClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("bound-%d", i), UID: types.UID(uid)},
				Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "signup"},
				Status:     tenancyv1alpha1.TenantClaimStatus{Phase: tenancyv1alpha1.ClaimBound, Tenant: fmt.Sprintf("customer-%d", i)},
			})
	}
	return append(objs,
		&tenancyv1alpha1.TenantClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "waiting", UID: "waiting-uid"},
			Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "signup"},
			Status:     tenancyv1alpha1.TenantClaimStatus{Phase: tenancyv1alpha1.ClaimPending, Reason: tenancyv1alpha1.ReasonNoReadySpare},
		},
		&tenancyv1alpha1.TenantClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new", UID: "new-uid", CreationTimestamp: metav1.Now()},
			Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "signup", Organization: "New Customer"},
		})
}

// queued drains a queue into the requests it held.
func queued(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []reconcile.Request {
	var out []reconcile.Request
	for q.Len() > 0 {
		req, _ := q.Get()
		q.Done(req)
		q.Forget(req)
		out = append(out, req)
	}
	return out
}

func poolRequest(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

func claimRequest(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}
}

// Binding one claim, and every event the bind sets off, costs the same whatever the number of
// tenants and Bound claims: the pool and claim controllers read their spares, pending claims
// and a claim's tenant from indexes, count allocated tenants from events, and map an event only
// to the pool or claims it can change. Each step states the lists it makes, the objects the
// cache visits for them, and what it enqueues, at 10 and at 2,000 customers.
func TestBindingAClaimVisitsWhatChangedNotEveryTenant(t *testing.T) {
	for _, n := range []int{10, 2000} {
		t.Run(fmt.Sprintf("with %d customers of the pool and %d tenants of none", n, n), func(t *testing.T) {
			ctx := context.Background()
			builder := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
				WithStatusSubresource(&tenancyv1alpha1.Tenant{}, &tenancyv1alpha1.TenantPool{}, &tenancyv1alpha1.TenantClaim{}).
				WithObjects(signupCluster(n)...)
			if err := indexes.Add(ctx, builderIndexes{builder}); err != nil {
				t.Fatal(err)
			}
			inner := builder.Build()
			reader := &cacheVisits{Client: inner}
			cfg := config.Default()
			pools := &TenantPoolReconciler{Client: reader}
			claims := &TenantClaimReconciler{Client: reader, Urgent: reader, Config: &cfg, Recorder: events.NewFakeRecorder(10)}
			poolEvents, claimEvents := pools.tenantHandler(), claims.poolHandler()
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()

			// The informer's initial list reaches the pool's handler as one create per tenant.
			all := &tenancyv1alpha1.TenantList{}
			if err := inner.List(ctx, all); err != nil {
				t.Fatal(err)
			}
			for i := range all.Items {
				poolEvents.Create(ctx, event.CreateEvent{Object: &all.Items[i]}, q)
			}
			queued(q)

			getTenant := func(name string) *tenancyv1alpha1.Tenant {
				t.Helper()
				got := &tenancyv1alpha1.Tenant{}
				if err := inner.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
					t.Fatal(err)
				}
				return got
			}
			getPool := func() *tenancyv1alpha1.TenantPool {
				t.Helper()
				got := &tenancyv1alpha1.TenantPool{}
				if err := inner.Get(ctx, client.ObjectKey{Name: "signup"}, got); err != nil {
					t.Fatal(err)
				}
				return got
			}
			// tenantEvent delivers a tenant update to both controllers' handlers.
			tenantEvent := func(before, after *tenancyv1alpha1.Tenant) {
				poolEvents.Update(ctx, event.UpdateEvent{ObjectOld: before, ObjectNew: after}, q)
				for _, req := range claims.claimsForSpare(ctx, after) {
					q.Add(req)
				}
			}
			spares := map[string]*tenancyv1alpha1.Tenant{}
			for i := range 3 {
				s := getTenant(fmt.Sprintf("signup-spare-%d", i))
				spares[s.Name] = s
			}
			var boundTenant, newSpare string
			poolBefore := getPool()

			for _, step := range []struct {
				name           string
				do             func(t *testing.T)
				lists, visited int
				enqueued       []reconcile.Request
			}{
				{
					name: "the new claim binds a Ready spare, listing the spares and its claim's tenant by index",
					do: func(t *testing.T) {
						if _, err := claims.Reconcile(ctx, claimRequest("new")); err != nil {
							t.Fatal(err)
						}
						claim := &tenancyv1alpha1.TenantClaim{}
						if err := inner.Get(ctx, client.ObjectKey{Namespace: "default", Name: "new"}, claim); err != nil {
							t.Fatal(err)
						}
						if claim.Status.Phase != tenancyv1alpha1.ClaimBound || spares[claim.Status.Tenant] == nil {
							t.Fatalf("claim status = %+v, want Bound to a spare", claim.Status)
						}
						boundTenant = claim.Status.Tenant
					},
					lists: 2, visited: 3,
				},
				{
					name: "the bind wakes the pool and no claim",
					do: func(*testing.T) {
						tenantEvent(spares[boundTenant], getTenant(boundTenant))
					},
					enqueued: []reconcile.Request{poolRequest("signup")},
				},
				{
					name: "the pool refills and counts its allocated tenants without listing them",
					do: func(t *testing.T) {
						if _, err := pools.Reconcile(ctx, poolRequest("signup")); err != nil {
							t.Fatal(err)
						}
						s := getPool().Status
						if s.Ready != 2 || s.Provisioning != 1 || s.Allocated != int32(n+1) {
							t.Errorf("pool status = ready %d provisioning %d allocated %d, want 2, 1, %d", s.Ready, s.Provisioning, s.Allocated, n+1)
						}
						for name := range pools.pending(pools.creating, "signup") {
							newSpare = name
						}
					},
					lists: 1, visited: 2,
				},
				{
					name: "the claim's own status write finds it Bound and lists nothing",
					do: func(t *testing.T) {
						if _, err := claims.Reconcile(ctx, claimRequest("new")); err != nil {
							t.Fatal(err)
						}
					},
				},
				{
					name: "the pool's status write wakes no claim",
					do: func(*testing.T) {
						claimEvents.Update(ctx, event.UpdateEvent{ObjectOld: poolBefore, ObjectNew: getPool()}, q)
					},
				},
				{
					name: "a status write of an allocated tenant wakes no pool and no claim",
					do: func(*testing.T) {
						before := getTenant("customer-0")
						after := before.DeepCopy()
						after.ResourceVersion += "1"
						after.Status.Namespace = "tenant-customer-0"
						tenantEvent(before, after)
					},
				},
				{
					name: "the new spare turning Ready wakes the pool and only the claim waiting",
					do: func(t *testing.T) {
						before := getTenant(newSpare)
						after := before.DeepCopy()
						after.Status = tenancyv1alpha1.TenantStatus{ObservedGeneration: after.Generation, Conditions: spares[boundTenant].Status.Conditions}
						if err := inner.Status().Update(ctx, after); err != nil {
							t.Fatal(err)
						}
						tenantEvent(before, after)
					},
					lists: 1, visited: 1,
					enqueued: []reconcile.Request{poolRequest("signup"), claimRequest("waiting")},
				},
			} {
				t.Run(step.name, func(t *testing.T) {
					reader.lists, reader.visited = 0, 0
					step.do(t)
					if reader.lists != step.lists || reader.visited != step.visited {
						t.Errorf("%d lists visiting %d objects, want %d visiting %d", reader.lists, reader.visited, step.lists, step.visited)
					}
					if got := queued(q); fmt.Sprint(got) != fmt.Sprint(step.enqueued) {
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
		{name: "a new spare wakes its pool", after: provisioning, wake: []reconcile.Request{poolRequest("signup")}},
		{name: "an allocated tenant seen for the first time wakes its pool and is counted", after: allocated, wake: []reconcile.Request{poolRequest("signup")}, allocated: 1},
		{name: "a status write of an allocated tenant wakes no pool", before: allocated, after: changed(allocated, func(t *tenancyv1alpha1.Tenant) { t.Status.Namespace = "tenant-customer" }), allocated: 1},
		{name: "deleting an allocated tenant wakes its pool and uncounts it", before: allocated, wake: []reconcile.Request{poolRequest("signup")}},
		{name: "a status write that leaves a spare provisioning wakes no pool", before: provisioning, after: changed(provisioning, func(t *tenancyv1alpha1.Tenant) { t.Status.Namespace = "tenant-spare" })},
		{name: "a spare turning Ready wakes its pool", before: provisioning, after: poolTenant("spare", readySpare), wake: []reconcile.Request{poolRequest("signup")}},
		{name: "a spare being bound wakes its pool and is counted", before: poolTenant("spare", readySpare), after: poolTenant("spare", allocatedTenant), wake: []reconcile.Request{poolRequest("signup")}, allocated: 1},
		{name: "a tenant relabeled to another pool wakes both pools", before: allocated, after: changed(allocated, func(t *tenancyv1alpha1.Tenant) { t.Labels[tenancyv1alpha1.PoolLabel] = "other" }), wake: []reconcile.Request{poolRequest("signup"), poolRequest("other")}},
		{name: "a tenant of no pool wakes none", after: &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "direct"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := &TenantPoolReconciler{}
			h := r.tenantHandler()
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			if tc.before != nil {
				// The tenant as the cache had it before the event.
				h.Create(ctx, event.CreateEvent{Object: tc.before}, q)
				queued(q)
			}
			switch {
			case tc.before == nil:
				h.Create(ctx, event.CreateEvent{Object: tc.after}, q)
			case tc.after == nil:
				h.Delete(ctx, event.DeleteEvent{Object: tc.before}, q)
			default:
				h.Update(ctx, event.UpdateEvent{ObjectOld: tc.before, ObjectNew: tc.after}, q)
			}
			if got := queued(q); fmt.Sprint(got) != fmt.Sprint(tc.wake) {
				t.Errorf("woke %v, want %v", got, tc.wake)
			}
			if got := r.allocations.count("signup"); got != tc.allocated {
				t.Errorf("pool signup counts %d allocated tenants, want %d", got, tc.allocated)
			}
		})
	}
}

// A claim reads of its pool only whether it exists and is not being deleted; the pool's status
// writes, one per refill, wake no claim, and Bound claims of the pool are never woken.
func TestAPoolEventWakesItsPendingClaimsOnlyWhenItAppearsOrGoes(t *testing.T) {
	pool := &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: "signup", ResourceVersion: "1"}}
	deleting := pool.DeepCopy()
	deleting.ResourceVersion, deleting.DeletionTimestamp = "2", &metav1.Time{Time: metav1.Now().Time}
	withStatus := pool.DeepCopy()
	withStatus.ResourceVersion, withStatus.Status.Ready = "2", 3
	pending := []reconcile.Request{claimRequest("waiting")}
	for _, tc := range []struct {
		name  string
		event func(context.Context, handler.EventHandler, workqueue.TypedRateLimitingInterface[reconcile.Request])
		wake  []reconcile.Request
	}{
		{name: "a pool created wakes its pending claims", wake: pending, event: func(ctx context.Context, h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: pool}, q)
		}},
		{name: "a pool's status write wakes no claim", event: func(ctx context.Context, h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: pool, ObjectNew: withStatus}, q)
		}},
		{name: "a pool starting to be deleted wakes its pending claims", wake: pending, event: func(ctx context.Context, h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: pool, ObjectNew: deleting}, q)
		}},
		{name: "a pool gone wakes its pending claims", wake: pending, event: func(ctx context.Context, h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: deleting}, q)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			builder := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(
				&tenancyv1alpha1.TenantClaim{
					ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "waiting"},
					Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "signup"},
					Status:     tenancyv1alpha1.TenantClaimStatus{Phase: tenancyv1alpha1.ClaimPending},
				},
				&tenancyv1alpha1.TenantClaim{
					ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bound"},
					Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "signup"},
					Status:     tenancyv1alpha1.TenantClaimStatus{Phase: tenancyv1alpha1.ClaimBound},
				})
			if err := indexes.Add(ctx, builderIndexes{builder}); err != nil {
				t.Fatal(err)
			}
			r := &TenantClaimReconciler{Client: builder.Build()}
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			tc.event(ctx, r.poolHandler(), q)
			if got := queued(q); fmt.Sprint(got) != fmt.Sprint(tc.wake) {
				t.Errorf("woke %v, want %v", got, tc.wake)
			}
		})
	}
}
