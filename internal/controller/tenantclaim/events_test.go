package tenantclaim

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	. "github.com/landlord-dev/landlord/internal/controller/controllertest"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

// Binding one claim, and every event the bind sets off, costs the claims the same whatever the
// number of tenants and Bound claims: a claim reads the spares and its tenant from indexes, and
// an event wakes only the pending claims it can change. Each step states the lists it makes, the
// objects the cache visits for them, and what it enqueues, at 10 and at 2,000 customers. (The
// pool's half of the bind is the tenantpool package's test of the same name.)
func TestBindingAClaimVisitsWhatChangedNotEveryTenant(t *testing.T) {
	for _, n := range []int{10, 2000} {
		t.Run(fmt.Sprintf("with %d customers of the pool and %d tenants of none", n, n), func(t *testing.T) {
			ctx := context.Background()
			inner, reader := SignupClient(t, n)
			cfg := config.Default()
			claims := &Reconciler{Client: reader, Urgent: reader, Config: &cfg, Recorder: events.NewFakeRecorder(10)}
			claimEvents := claims.poolHandler()
			q := NewQueue()
			defer q.ShutDown()

			getTenant := func(name string) *tenancyv1alpha1.Tenant {
				return Get(t, inner, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{})
			}
			getPool := func() *tenancyv1alpha1.TenantPool {
				return Get(t, inner, client.ObjectKey{Name: "signup"}, &tenancyv1alpha1.TenantPool{})
			}
			// tenantEvent delivers a tenant update to the claims' handler.
			tenantEvent := func(after *tenancyv1alpha1.Tenant) {
				for _, req := range claims.claimsForSpare(ctx, after) {
					q.Add(req)
				}
			}
			spares := map[string]*tenancyv1alpha1.Tenant{}
			for i := range 3 {
				s := getTenant(fmt.Sprintf("signup-spare-%d", i))
				spares[s.Name] = s
			}
			var boundTenant string
			const newSpare = "signup-spare-new"

			for _, step := range []struct {
				name           string
				do             func(t *testing.T)
				lists, visited int
				enqueued       []reconcile.Request
			}{
				{
					name: "the new claim binds a Ready spare, listing the spares and its claim's tenant by index",
					do: func(t *testing.T) {
						if _, err := claims.Reconcile(ctx, ClaimRequest("new")); err != nil {
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
					name: "the bind wakes no claim",
					do: func(*testing.T) {
						tenantEvent(getTenant(boundTenant))
					},
				},
				{
					name: "the claim's own status write finds it Bound and lists nothing",
					do: func(t *testing.T) {
						if _, err := claims.Reconcile(ctx, ClaimRequest("new")); err != nil {
							t.Fatal(err)
						}
					},
				},
				{
					name: "the pool's status write as it refills wakes no claim",
					do: func(t *testing.T) {
						before := getPool()
						after := before.DeepCopy()
						after.Status.Ready, after.Status.Provisioning, after.Status.Allocated = 2, 1, int32(n+1)
						if err := inner.Status().Update(ctx, after); err != nil {
							t.Fatal(err)
						}
						claimEvents.Update(ctx, event.UpdateEvent{ObjectOld: before, ObjectNew: getPool()}, q)
					},
				},
				{
					name: "a status write of an allocated tenant wakes no claim",
					do: func(*testing.T) {
						after := getTenant("customer-0")
						after.ResourceVersion += "1"
						after.Status.Namespace = "tenant-customer-0"
						tenantEvent(after)
					},
				},
				{
					name: "a new spare turning Ready wakes only the claim waiting",
					do: func(t *testing.T) {
						spare := spares["signup-spare-1"].DeepCopy()
						spare.ObjectMeta = metav1.ObjectMeta{Name: newSpare, Labels: spare.Labels, OwnerReferences: spare.OwnerReferences}
						spare.Status = tenancyv1alpha1.TenantStatus{}
						if err := inner.Create(ctx, spare); err != nil {
							t.Fatal(err)
						}
						tenantEvent(getTenant(newSpare))
						if got := Queued(q); len(got) != 0 {
							t.Errorf("a spare not Ready yet woke %v", got)
						}
						after := getTenant(newSpare)
						after.Status = tenancyv1alpha1.TenantStatus{ObservedGeneration: after.Generation, Conditions: spares[boundTenant].Status.Conditions}
						if err := inner.Status().Update(ctx, after); err != nil {
							t.Fatal(err)
						}
						reader.Lists, reader.Visited = 0, 0
						tenantEvent(after)
					},
					lists: 1, visited: 1,
					enqueued: []reconcile.Request{ClaimRequest("waiting")},
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

// A claim reads of its pool only whether it exists and is not being deleted; the pool's status
// writes, one per refill, wake no claim, and Bound claims of the pool are never woken.
func TestAPoolEventWakesItsPendingClaimsOnlyWhenItAppearsOrGoes(t *testing.T) {
	pool := &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: "signup", ResourceVersion: "1"}}
	deleting := pool.DeepCopy()
	deleting.ResourceVersion, deleting.DeletionTimestamp = "2", &metav1.Time{Time: metav1.Now().Time}
	withStatus := pool.DeepCopy()
	withStatus.ResourceVersion, withStatus.Status.Ready = "2", 3
	pending := []reconcile.Request{ClaimRequest("waiting")}
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
			if err := indexes.Add(ctx, BuilderIndexes{ClientBuilder: builder}); err != nil {
				t.Fatal(err)
			}
			r := &Reconciler{Client: builder.Build()}
			q := NewQueue()
			defer q.ShutDown()
			tc.event(ctx, r.poolHandler(), q)
			if got := Queued(q); fmt.Sprint(got) != fmt.Sprint(tc.wake) {
				t.Errorf("woke %v, want %v", got, tc.wake)
			}
		})
	}
}
