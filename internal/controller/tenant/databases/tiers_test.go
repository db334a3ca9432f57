package databases

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

func TestADatabaseItsClassPlacesElsewhereMovesByOneMoveAndNoMore(t *testing.T) {
	ready := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue}}
	server := func(name, tier string) *tenancyv1alpha1.DatabaseServer {
		return &tenancyv1alpha1.DatabaseServer{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": tier}},
			Spec:       tenancyv1alpha1.DatabaseServerSpec{Engine: tenancyv1alpha1.EnginePostgres},
			Status:     tenancyv1alpha1.DatabaseServerStatus{Conditions: ready},
		}
	}
	dedicated := &tenancyv1alpha1.ClassDatabases{Dedicated: true, ServerSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dedicated"}}}
	acme := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "acme-uid"}}
	acme.Status.Databases = []tenancyv1alpha1.DatabaseStatus{{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg-shared"}}
	e := dbEntry{engine: tenancyv1alpha1.EnginePostgres, Database: tenancyv1alpha1.Database{Name: "app"}}
	prev := &acme.Status.Databases[0]
	target := ClassMoveName("acme", tenancyv1alpha1.EnginePostgres, "app", "pg-acme")

	for _, tc := range []struct {
		name      string
		placement *tenancyv1alpha1.ClassDatabases
		pinned    string
		existing  *tenancyv1alpha1.DatabaseMove
		wantMove  bool // a move to pg-acme exists afterwards, not ended
		stalled   bool
		done      bool
	}{
		{name: "a database where its class places it stays", placement: &tenancyv1alpha1.ClassDatabases{ServerSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "shared"}}}, done: true},
		{name: "a tenant without a class placement is never moved", done: true},
		{name: "a database the tenant pins is never moved by its class", placement: dedicated, pinned: "pg-shared", done: true},
		{name: "a database its class places elsewhere gets a move to a server the class chooses", placement: dedicated, wantMove: true},
		{name: "a move that failed is not made again: the tenant stalls naming it", placement: dedicated,
			existing: &tenancyv1alpha1.DatabaseMove{ObjectMeta: metav1.ObjectMeta{Name: target},
				Spec:   tenancyv1alpha1.DatabaseMoveSpec{Tenant: "acme", Database: "app", Server: "pg-acme"},
				Status: tenancyv1alpha1.DatabaseMoveStatus{Phase: tenancyv1alpha1.MoveFailed, TenantUID: "acme-uid"}},
			stalled: true},
		{name: "an earlier move there that succeeded is replaced", placement: dedicated,
			existing: &tenancyv1alpha1.DatabaseMove{ObjectMeta: metav1.ObjectMeta{Name: target},
				Spec:   tenancyv1alpha1.DatabaseMoveSpec{Tenant: "acme", Database: "app", Server: "pg-acme"},
				Status: tenancyv1alpha1.DatabaseMoveStatus{Phase: tenancyv1alpha1.MoveSucceeded, TenantUID: "acme-uid"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{server("pg-shared", "shared"), server("pg-acme", "dedicated"), acme.DeepCopy()}
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(objs...).
				WithStatusSubresource(&tenancyv1alpha1.DatabaseMove{}).
				WithIndex(&tenancyv1alpha1.Tenant{}, indexes.TenantDatabaseServer, indexes.TenantDatabaseServers).Build()
			r := &Engine{Client: c, Recorder: events.NewFakeRecorder(10), Moves: true}
			entry := e
			entry.Server = tc.pinned
			res := r.moveToClass(context.Background(), Scope{Tenant: acme, Class: "enterprise", Placement: tc.placement}, entry, prev, nil)
			if res.Done != tc.done || res.Stalled != tc.stalled || res.Err != nil {
				t.Fatalf("result %+v; want done %t, stalled %t", res, tc.done, tc.stalled)
			}
			if tc.stalled && res.Reason != tenancyv1alpha1.ReasonClassMoveFailed {
				t.Errorf("reason %s", res.Reason)
			}
			m := &tenancyv1alpha1.DatabaseMove{}
			err := c.Get(context.Background(), client.ObjectKey{Name: target}, m)
			made := err == nil && !m.Terminal()
			if made != tc.wantMove {
				t.Fatalf("a live move to pg-acme: %t (%v), want %t", made, err, tc.wantMove)
			}
			if made && (m.Spec.Tenant != "acme" || m.Spec.Database != "app" || m.Spec.Confirmed) {
				t.Errorf("move %+v", m.Spec)
			}
		})
	}
}
