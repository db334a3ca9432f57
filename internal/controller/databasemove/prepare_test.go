package databasemove

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// What a move checks before it changes anything: each refusal ends it Failed with its reason
// and leaves it with no location recorded, so that nothing was fenced or made; a move that can
// go records where the database is and where it goes, and its Job's name.
func TestAMoveIsRefusedBeforeAnythingChangesUnlessItFits(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	tenant := func(mutate ...func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
		tn := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "tenant-uid"}}
		tn.Spec.State = tenancyv1alpha1.StateActive
		tn.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
		tn.Status.Databases = []tenancyv1alpha1.DatabaseStatus{{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg-shared", Database: "acme_app", Username: "acme_app"}}
		for _, m := range mutate {
			m(tn)
		}
		return tn
	}
	server := func(name string, engine tenancyv1alpha1.DatabaseEngine, ready metav1.ConditionStatus) *tenancyv1alpha1.DatabaseServer {
		ds := &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tenancyv1alpha1.DatabaseServerSpec{Engine: engine}}
		ds.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: ready, Reason: "Test"}}
		return ds
	}
	move := func(name string, created time.Time, phase tenancyv1alpha1.DatabaseMovePhase) *tenancyv1alpha1.DatabaseMove {
		return &tenancyv1alpha1.DatabaseMove{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("00000000-0000-4000-8000-" + fmt.Sprintf("%012x", len(name))), CreationTimestamp: metav1.NewTime(created)},
			Spec:       tenancyv1alpha1.DatabaseMoveSpec{Tenant: "acme", Database: "app", Server: "pg-dedicated"},
			Status:     tenancyv1alpha1.DatabaseMoveStatus{Phase: phase},
		}
	}
	dedicated := server("pg-dedicated", tenancyv1alpha1.EnginePostgres, metav1.ConditionTrue)
	for _, tc := range []struct {
		name    string
		objects []client.Object
		phase   tenancyv1alpha1.DatabaseMovePhase
		reason  string
	}{
		{name: "a move that fits records both places and starts copying", objects: []client.Object{tenant(), dedicated}, phase: tenancyv1alpha1.MoveCopying, reason: ""},
		{name: "a tenant that does not exist is refused", objects: []client.Object{dedicated}, phase: tenancyv1alpha1.MoveFailed, reason: tenancyv1alpha1.ReasonMoveRefused},
		{name: "an Archived tenant is refused", objects: []client.Object{tenant(func(tn *tenancyv1alpha1.Tenant) { tn.Spec.State = tenancyv1alpha1.StateArchived }), dedicated},
			phase: tenancyv1alpha1.MoveFailed, reason: tenancyv1alpha1.ReasonMoveRefused},
		{name: "a spec that names another server is refused", objects: []client.Object{tenant(func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Databases.Postgres[0].Server = "pg-shared" }), dedicated},
			phase: tenancyv1alpha1.MoveFailed, reason: tenancyv1alpha1.ReasonMoveRefused},
		{name: "a spec that names the target goes", objects: []client.Object{tenant(func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Databases.Postgres[0].Server = "pg-dedicated" }), dedicated},
			phase: tenancyv1alpha1.MoveCopying},
		{name: "a server of another engine is refused", objects: []client.Object{tenant(), server("pg-dedicated", tenancyv1alpha1.EngineMySQL, metav1.ConditionTrue)},
			phase: tenancyv1alpha1.MoveFailed, reason: tenancyv1alpha1.ReasonMoveRefused},
		{name: "the server it is on already is refused", objects: []client.Object{tenant(func(tn *tenancyv1alpha1.Tenant) { tn.Status.Databases[0].Server = "pg-dedicated" }), dedicated},
			phase: tenancyv1alpha1.MoveFailed, reason: tenancyv1alpha1.ReasonMoveRefused},
		{name: "a server that is not Ready is waited for", objects: []client.Object{tenant(), server("pg-dedicated", tenancyv1alpha1.EnginePostgres, metav1.ConditionFalse)},
			phase: tenancyv1alpha1.MovePending, reason: tenancyv1alpha1.ReasonMoveWaiting},
		{name: "a database not in place yet is waited for", objects: []client.Object{tenant(func(tn *tenancyv1alpha1.Tenant) { tn.Status.Databases = nil }), dedicated},
			phase: tenancyv1alpha1.MovePending, reason: tenancyv1alpha1.ReasonMoveWaiting},
		{name: "a move under way of the same database goes first", objects: []client.Object{tenant(), dedicated, move("later-but-copying", now.Add(time.Minute), tenancyv1alpha1.MoveCopying)},
			phase: tenancyv1alpha1.MoveFailed, reason: tenancyv1alpha1.ReasonMoveRefused},
		{name: "of two pending moves of a database, the one created first goes", objects: []client.Object{tenant(), dedicated, move("earlier", now.Add(-time.Minute), "")},
			phase: tenancyv1alpha1.MoveFailed, reason: tenancyv1alpha1.ReasonMoveRefused},
		{name: "a pending move created later waits its turn behind this one", objects: []client.Object{tenant(), dedicated, move("later", now.Add(time.Minute), "")},
			phase: tenancyv1alpha1.MoveCopying},
		{name: "an ended move of the same database is no obstacle", objects: []client.Object{tenant(), dedicated, move("before", now.Add(-time.Hour), tenancyv1alpha1.MoveSucceeded)},
			phase: tenancyv1alpha1.MoveCopying},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			m := move("this", now, "")
			c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(append(tc.objects, m)...).
				WithStatusSubresource(&tenancyv1alpha1.DatabaseMove{}).Build()
			cfg := config.Default()
			cfg.Backups.Image = "registry.example.com/landlord-backup:1"
			r := &Reconciler{Client: c, APIReader: c, Config: &cfg, Recorder: events.NewFakeRecorder(10), Clock: clocktesting.NewFakeClock(now)}
			_, err := r.Reconcile(context.Background(), requestFor(m))
			g.Expect(err).NotTo(HaveOccurred())
			got := &tenancyv1alpha1.DatabaseMove{}
			g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(m), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(tc.phase))
			if tc.phase == tenancyv1alpha1.MoveCopying {
				g.Expect(got.Status.From).To(Equal(&tenancyv1alpha1.DatabaseLocation{Server: "pg-shared", Database: "acme_app", Username: "acme_app"}))
				g.Expect(got.Status.To.Server).To(Equal("pg-dedicated"))
				g.Expect(got.Status.TenantUID).To(Equal("tenant-uid"))
				g.Expect(got.Status.Job).To(HavePrefix("landlord-copy-"))
				g.Expect(got.Status.FencedAt).To(BeNil(), "recorded first: nothing is fenced before the next reconcile reads it back")
				return
			}
			g.Expect(got.Status.From).To(BeNil(), "nothing recorded, nothing changed")
			g.Expect(readyReason(&got.Status)).To(Equal(tc.reason))
		})
	}
}

func requestFor(m *tenancyv1alpha1.DatabaseMove) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)}
}
