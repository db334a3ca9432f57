package tenant

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	. "github.com/landlord-dev/landlord/internal/controller/controllertest"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

// databaseFleet is n tenants with no database, a tenant "placed" whose database on server "pg"
// is ready, and the three tenants waiting for theirs: "waiting-new", with no DatabasesReady
// condition yet, and "waiting-0" and "waiting-1", whose databases are not ready (one of them
// placed on "pg", whose address it waits for).
func databaseFleet(n int) []client.Object {
	databasesReady := func(status metav1.ConditionStatus) []metav1.Condition {
		c := []metav1.Condition{}
		meta.SetStatusCondition(&c, metav1.Condition{Type: tenancyv1alpha1.DatabasesReadyCondition, Status: status, Reason: "Test"})
		return c
	}
	withDatabase := func(name string, status tenancyv1alpha1.TenantStatus) *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       tenancyv1alpha1.TenantSpec{Databases: tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "main"}}}},
			Status:     status,
		}
	}
	onPG := []tenancyv1alpha1.DatabaseStatus{{Engine: tenancyv1alpha1.EnginePostgres, Name: "main", Server: "pg"}}
	objs := []client.Object{
		withDatabase("placed", tenancyv1alpha1.TenantStatus{Databases: onPG, Conditions: databasesReady(metav1.ConditionTrue)}),
		withDatabase("waiting-new", tenancyv1alpha1.TenantStatus{}),
		withDatabase("waiting-0", tenancyv1alpha1.TenantStatus{Conditions: databasesReady(metav1.ConditionFalse)}),
		withDatabase("waiting-1", tenancyv1alpha1.TenantStatus{Databases: onPG, Conditions: databasesReady(metav1.ConditionUnknown)}),
	}
	for i := range n {
		// A tenant with no database, whatever its conditions say, waits for no server.
		objs = append(objs, &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("plain-%d", i)},
			Status:     tenancyv1alpha1.TenantStatus{Conditions: databasesReady(metav1.ConditionFalse)},
		})
	}
	return objs
}

// A DatabaseServer event wakes the tenants waiting for their databases and those placed on the
// server, as it always has, and visits only them: the tenants that wait for no server are not
// read, however many there are. Each event states the lists it makes, the tenants the cache
// visits for them and what it enqueues, at 20 and at 2,000 tenants with no database.
func TestADatabaseServerEventVisitsOnlyTheTenantsWaitingOrPlacedOnIt(t *testing.T) {
	server := func(generation int64, ready metav1.ConditionStatus, tenants int32) *tenancyv1alpha1.DatabaseServer {
		s := &tenancyv1alpha1.DatabaseServer{
			ObjectMeta: metav1.ObjectMeta{Name: "pg", Generation: generation},
			Spec:       tenancyv1alpha1.DatabaseServerSpec{Engine: tenancyv1alpha1.EnginePostgres},
			Status:     tenancyv1alpha1.DatabaseServerStatus{Tenants: tenants},
		}
		meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, Status: ready, Reason: "Test"})
		return s
	}
	waiting := []string{"waiting-0", "waiting-1", "waiting-new"}
	down, up := server(1, metav1.ConditionFalse, 2), server(1, metav1.ConditionTrue, 2)
	for _, n := range []int{20, 2000} {
		t.Run(fmt.Sprintf("with %d tenants that have no database", n), func(t *testing.T) {
			builder := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(databaseFleet(n)...)
			if err := indexes.Add(context.Background(), BuilderIndexes{ClientBuilder: builder}); err != nil {
				t.Fatal(err)
			}
			reader := &CacheVisits{Client: builder.Build()}
			h := (&Reconciler{Client: reader}).databaseServerHandler()
			for _, tc := range []struct {
				name           string
				event          func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request])
				lists, visited int
				enqueued       []string
			}{
				{
					name: "a server created wakes the tenants on it and the tenants waiting",
					event: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
						h.Create(ctx, event.CreateEvent{Object: up}, q)
					},
					lists: 2, visited: 2 + 3,
					enqueued: []string{"placed", "waiting-0", "waiting-1", "waiting-new"},
				},
				{
					name: "a server turning Ready wakes the tenants waiting",
					event: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
						h.Update(ctx, event.UpdateEvent{ObjectOld: down, ObjectNew: up}, q)
					},
					lists: 1, visited: 3,
					enqueued: waiting,
				},
				{
					name: "a server freeing room wakes the tenants waiting",
					event: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
						h.Update(ctx, event.UpdateEvent{ObjectOld: up, ObjectNew: server(1, metav1.ConditionTrue, 1)}, q)
					},
					lists: 1, visited: 3,
					enqueued: waiting,
				},
				{
					name: "a server's status write that neither makes it Ready nor frees room wakes no tenant",
					event: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
						h.Update(ctx, event.UpdateEvent{ObjectOld: up, ObjectNew: server(1, metav1.ConditionTrue, 3)}, q)
					},
				},
				{
					name: "a server's spec changed wakes the tenants on it and the tenants waiting",
					event: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
						h.Update(ctx, event.UpdateEvent{ObjectOld: up, ObjectNew: server(2, metav1.ConditionTrue, 2)}, q)
					},
					lists: 2, visited: 2 + 3,
					enqueued: []string{"placed", "waiting-0", "waiting-1", "waiting-new"},
				},
				{
					name: "a server deleted wakes the tenants on it only",
					event: func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
						h.Delete(ctx, event.DeleteEvent{Object: up}, q)
					},
					lists: 1, visited: 2,
					enqueued: []string{"placed", "waiting-1"},
				},
			} {
				t.Run(tc.name, func(t *testing.T) {
					q := NewQueue()
					defer q.ShutDown()
					reader.Lists, reader.Visited = 0, 0
					tc.event(context.Background(), q)
					if reader.Lists != tc.lists || reader.Visited != tc.visited {
						t.Errorf("%d lists visiting %d tenants, want %d visiting %d", reader.Lists, reader.Visited, tc.lists, tc.visited)
					}
					var got []string
					for _, req := range Queued(q) {
						got = append(got, req.Name)
					}
					slices.Sort(got)
					if !slices.Equal(got, tc.enqueued) {
						t.Errorf("enqueued %v, want %v", got, tc.enqueued)
					}
				})
			}
		})
	}
}
