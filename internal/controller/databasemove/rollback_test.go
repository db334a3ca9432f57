package databasemove

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// A move is never rolled back past its switch, nor does a move that changed nothing undo
// anything: both are decided before any server is reached (the reconciler here has no server
// connections, and would fail if it tried).
func TestARollbackNeverUndoesASwitchNorWhatAnotherMoveHolds(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	from := &tenancyv1alpha1.DatabaseLocation{Server: "pg-shared", Database: "acme_app", Username: "acme_app"}
	to := &tenancyv1alpha1.DatabaseLocation{Server: "pg-dedicated", Database: "acme_app", Username: "acme_app"}
	moving := func(name string, uid types.UID, mutate func(*tenancyv1alpha1.DatabaseMove)) *tenancyv1alpha1.DatabaseMove {
		m := &tenancyv1alpha1.DatabaseMove{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, CreationTimestamp: metav1.NewTime(now), Finalizers: []string{Finalizer}},
			Spec:       tenancyv1alpha1.DatabaseMoveSpec{Tenant: "acme", Database: "app", Server: "pg-dedicated"},
			Status: tenancyv1alpha1.DatabaseMoveStatus{Phase: tenancyv1alpha1.MoveCopying, TenantUID: "tenant-uid", Engine: tenancyv1alpha1.EnginePostgres,
				From: from, To: to, Job: "landlord-copy-" + string(uid)[:12]},
		}
		if mutate != nil {
			mutate(m)
		}
		return m
	}
	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "tenant-uid"}}
	tenant.Spec.State = tenancyv1alpha1.StateActive
	tenant.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	tenant.Status.Databases = []tenancyv1alpha1.DatabaseStatus{{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg-shared", Database: "acme_app", Username: "acme_app"}}
	record := func(at *tenancyv1alpha1.DatabaseLocation) resources.DatabaseCredentials {
		return resources.DatabaseCredentials{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: at.Server, UID: "tenant-uid",
			Account: database.Account{Database: at.Database, Username: at.Username, Password: "stored"}}
	}

	for _, tc := range []struct {
		name   string
		move   *tenancyv1alpha1.DatabaseMove
		others []client.Object
		stored *tenancyv1alpha1.DatabaseLocation
		want   tenancyv1alpha1.DatabaseMovePhase
	}{
		{
			name: "a move deleted after its switch reached the store goes on to switch",
			move: moving("this", "00000000-0000-4000-8000-000000000001", func(m *tenancyv1alpha1.DatabaseMove) {
				m.DeletionTimestamp = &metav1.Time{Time: now}
			}),
			stored: to, want: tenancyv1alpha1.MoveSwitching,
		},
		{
			name: "a move rolling back after its switch reached the store goes on to switch",
			move: moving("this", "00000000-0000-4000-8000-000000000001", func(m *tenancyv1alpha1.DatabaseMove) {
				m.Status.Phase = tenancyv1alpha1.MoveRollingBack
			}),
			stored: to, want: tenancyv1alpha1.MoveSwitching,
		},
		{
			name:   "a move that finds another under way before its first step ends having touched nothing",
			move:   moving("this", "00000000-0000-4000-8000-000000000001", nil),
			others: []client.Object{moving("other", "00000000-0000-4000-8000-000000000002", func(m *tenancyv1alpha1.DatabaseMove) { m.CreationTimestamp = metav1.NewTime(now.Add(-time.Second)) })},
			stored: from, want: tenancyv1alpha1.MoveFailed,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			store, err := secret.NewFileStore(dir, filepath.Join(dir, "key.json"))
			g.Expect(err).NotTo(HaveOccurred())
			secrets := secret.TenantSecrets{Store: store}
			cfg := config.Default()
			cfg.Backups.Image = "registry.example.com/landlord-backup:1"
			g.Expect(secrets.Save(context.Background(), resources.StoredCredentials(cfg.NamespaceName("acme"), record(tc.stored)))).To(Succeed())
			c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(append(tc.others, tenant, tc.move)...).
				WithStatusSubresource(&tenancyv1alpha1.DatabaseMove{}).Build()
			r := &Reconciler{Client: c, APIReader: c, Config: &cfg, Recorder: events.NewFakeRecorder(10), Clock: clocktesting.NewFakeClock(now), Secrets: secrets}
			for range 2 {
				_, err := r.Reconcile(context.Background(), requestFor(tc.move))
				g.Expect(err).NotTo(HaveOccurred())
			}
			got := &tenancyv1alpha1.DatabaseMove{}
			g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(tc.move), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(tc.want))
			if tc.want == tenancyv1alpha1.MoveSwitching {
				g.Expect(got.Finalizers).To(ContainElement(Finalizer), "a switching move is not let go")
			}
		})
	}
}
