package databases

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	. "github.com/landlord-dev/landlord/internal/controller/controllertest"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

// A tenant's placement reaches the cache's count only when its status is written, at the end of
// a reconcile that first creates the database. Concurrent reconciles of new tenants all read the
// same counts meanwhile: a server with room for one more took one per worker (up to 32 with
// the default workers), over its maxTenants, which the connection limit per login is shared by.
func TestConcurrentPlacementsKeepAServerWithinItsMaxTenants(t *testing.T) {
	ds := &tenancyv1alpha1.DatabaseServer{
		ObjectMeta: metav1.ObjectMeta{Name: "pg"},
		Spec:       tenancyv1alpha1.DatabaseServerSpec{Engine: tenancyv1alpha1.EnginePostgres, MaxTenants: ptr.To[int32](3)},
	}
	meta.SetStatusCondition(&ds.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Test"})
	builder := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(ds)
	tenants := make([]*tenancyv1alpha1.Tenant, 10)
	for i := range tenants {
		tenants[i] = &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec:       tenancyv1alpha1.TenantSpec{Databases: tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "main"}}}},
		}
		builder = builder.WithObjects(tenants[i])
	}
	if err := indexes.Add(context.Background(), BuilderIndexes{ClientBuilder: builder}); err != nil {
		t.Fatal(err)
	}
	c := builder.Build()
	r := &Engine{Client: c}
	e := dbEntry{engine: tenancyv1alpha1.EnginePostgres, Database: tenancyv1alpha1.Database{Name: "main"}}

	var mu sync.Mutex
	placed := 0
	var first *tenancyv1alpha1.Tenant
	onServer := map[string]bool{}
	var wg sync.WaitGroup
	for _, tn := range tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// No status is written: the cache shows none of these placements.
			if server, res := r.placeDatabase(context.Background(), Scope{Tenant: tn}, e); res.Done && server == "pg" {
				mu.Lock()
				placed++
				first = tn
				onServer[tn.Name] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if placed != 3 {
		t.Errorf("%d of 10 new tenants placed on a server with room for 3", placed)
	}
	t.Run("a tenant placed again before its status shows gets the same server, not a second slot", func(t *testing.T) {
		if server, res := r.placeDatabase(context.Background(), Scope{Tenant: first}, e); !res.Done || server != "pg" {
			t.Errorf("placed on %q (%+v), want pg again", server, res)
		}
	})
	t.Run("a tenant that no longer asks for a database frees the place it was given", func(t *testing.T) {
		first.Spec.Databases.Postgres = nil
		if err := c.Update(context.Background(), first); err != nil {
			t.Fatal(err)
		}
		var waiting *tenancyv1alpha1.Tenant
		for _, tn := range tenants {
			if !onServer[tn.Name] {
				waiting = tn
				break
			}
		}
		if server, res := r.placeDatabase(context.Background(), Scope{Tenant: waiting}, e); !res.Done || server != "pg" {
			t.Errorf("a tenant waiting for room placed on %q (%+v), want pg", server, res)
		}
	})
}
