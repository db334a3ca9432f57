package tenantbackup

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

func TestAPurgeRecordKeepsCopiesOnlyWhenThePlatformSaysSo(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name      string
		keep      time.Duration
		keys      string
		wantUntil *time.Time
		wantKeys  string
	}{
		{name: "keepAfterPurge 0 keeps nothing: the backups go at once", wantKeys: "s3://backups/tenants?prefix=landlord%2F (keys/)"},
		{name: "keepAfterPurge 720h keeps them 30 days", keep: 720 * time.Hour, wantUntil: new(now.Add(720 * time.Hour)), wantKeys: "s3://backups/tenants?prefix=landlord%2F (keys/)"},
		{name: "keys kept apart are named without their query", keys: "s3://keys?endpoint=https%3A%2F%2Fuser%3Asecret%40minio", wantKeys: "s3://keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Backups.Objects = "s3://backups/tenants?region=eu-west-1&endpoint=https%3A%2F%2Fminio&prefix=landlord/"
			cfg.Backups.Keys = tc.keys
			cfg.Backups.KeepAfterPurge.Duration = tc.keep
			r := &PurgeReconciler{Config: &cfg}
			rec := r.record(&tenancyv1alpha1.Tenant{}, now)
			if rec.Store != "s3://backups/tenants?prefix=landlord%2F" {
				t.Errorf("store %q: the URL's query may name an endpoint's credentials", rec.Store)
			}
			if rec.KeyStore != tc.wantKeys {
				t.Errorf("key store %q, want %q", rec.KeyStore, tc.wantKeys)
			}
			switch {
			case tc.wantUntil == nil && rec.KeepUntil != nil:
				t.Errorf("keeps copies until %s", rec.KeepUntil)
			case tc.wantUntil != nil && (rec.KeepUntil == nil || !rec.KeepUntil.Time.Equal(*tc.wantUntil)):
				t.Errorf("keeps copies until %v, want %s", rec.KeepUntil, tc.wantUntil)
			}
		})
	}
}

func TestOnlyPurgedOrDeletedTenantsWakeThePurge(t *testing.T) {
	withBackups := func(mutate func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
		tn := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", Finalizers: []string{tenancyv1alpha1.BackupsFinalizer}}}
		mutate(tn)
		return tn
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		tenant *tenancyv1alpha1.Tenant
		want   bool
	}{
		{"an Active tenant with backups does not", withBackups(func(*tenancyv1alpha1.Tenant) {}), false},
		{"a Purged tenant does", withBackups(func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StatePurged }), true},
		{"a tenant with backups being deleted does", withBackups(func(t *tenancyv1alpha1.Tenant) { t.DeletionTimestamp = &now }), true},
		{"a tenant without backups being deleted does not", withBackups(func(t *tenancyv1alpha1.Tenant) { t.DeletionTimestamp, t.Finalizers = &now, nil }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := concerned(tc.tenant); got != tc.want {
				t.Errorf("concerned = %t, want %t", got, tc.want)
			}
		})
	}
}

// The final export comes before anything of the tenant's backups goes: an export that cannot
// be written (here, a backup whose objects are not in the store) deletes no backup and keeps
// the key, records the backup chosen, and is tried again.
func TestAnExportThatCannotBeWrittenDeletesNothing(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	s3, key := secrettest.StartAWS(t, "backups")
	cfg.Backups.Objects = s3.URL("backups", "landlord")
	store, err := backup.OpenStore(ctx, cfg.Backups.Objects, key, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg.Backups.ExportAtPurge = "file://" + t.TempDir()
	exports, err := backup.OpenExporter(ctx, store, cfg.Backups.ExportAtPurge)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exports.Close() })

	started := metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "acme-uid", Finalizers: []string{tenancyv1alpha1.BackupsFinalizer}},
		Spec:       tenancyv1alpha1.TenantSpec{State: tenancyv1alpha1.StatePurged},
		Status:     tenancyv1alpha1.TenantStatus{Purge: &tenancyv1alpha1.PurgeRecord{Started: started, BackupCount: 2}},
	}
	succeeded := func(name string, at time.Time) *tenancyv1alpha1.TenantBackup {
		done := metav1.NewTime(at)
		return &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{Finalizer}},
			Spec: tenancyv1alpha1.TenantBackupSpec{Tenant: "acme"},
			Status: tenancyv1alpha1.TenantBackupStatus{Phase: tenancyv1alpha1.BackupSucceeded, TenantUID: "acme-uid",
				Location: "acme-uid/" + name + "/", CompletionTime: &done}}
	}
	c := purgeClient(tenant, succeeded("acme-1", started.Add(-48*time.Hour)), succeeded("acme-2", started.Add(-24*time.Hour)))
	recorder := events.NewFakeRecorder(10)
	r := &PurgeReconciler{Client: c, APIReader: c, Config: &cfg, Recorder: recorder, Store: store, Exports: exports, Clock: clocktesting.NewFakeClock(started.Time)}
	// The choice is recorded first, before any file is written; then the export is tried.
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: "acme"}}); err != nil {
		t.Fatalf("recording the backup chosen: %v", err)
	}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: "acme"}}); err == nil {
		t.Fatal("the export of a backup with nothing in the store succeeded")
	}
	for _, name := range []string{"acme-1", "acme-2"} {
		b := &tenancyv1alpha1.TenantBackup{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, b); err != nil || !b.DeletionTimestamp.IsZero() {
			t.Errorf("backup %s deleted before the export was written (%v)", name, err)
		}
	}
	got := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: "acme"}, got); err != nil {
		t.Fatal(err)
	}
	ex := got.Status.Purge.Export
	if ex == nil || ex.Backup != "acme-2" || ex.Completed != nil || ex.Folder != "acme-acme-uid/" || got.Status.Purge.KeyDestroyed != nil {
		t.Errorf("record = %+v, export %+v: want acme-2 chosen, not completed, the key kept", got.Status.Purge, ex)
	}
	if ev := <-recorder.Events; !strings.Contains(ev, ReasonExportFailed) {
		t.Errorf("event %q, want %s", ev, ReasonExportFailed)
	}

	t.Run("a backup still running at the purge is waited for before the choice", func(t *testing.T) {
		running := succeeded("acme-3", started.Time)
		running.Status.Phase, running.Status.CompletionTime = tenancyv1alpha1.BackupRunning, nil
		fresh := tenant.DeepCopy()
		fresh.ResourceVersion = ""
		c := purgeClient(fresh, succeeded("acme-2", started.Add(-24*time.Hour)), running)
		r := &PurgeReconciler{Client: c, APIReader: c, Config: &cfg, Recorder: events.NewFakeRecorder(10), Store: store, Exports: exports, Clock: clocktesting.NewFakeClock(started.Time)}
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: "acme"}})
		if err != nil || res.RequeueAfter == 0 {
			t.Fatalf("result %+v, %v: want a wait", res, err)
		}
		got := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: "acme"}, got); err != nil {
			t.Fatal(err)
		}
		if ex := got.Status.Purge.Export; ex != nil && ex.Backup != "" {
			t.Errorf("chose %s while acme-3 still runs", ex.Backup)
		}
	})
}

// purgeClient is a fake client holding a Purged tenant and its backups, indexed as the purge
// controller lists them.
func purgeClient(tenant *tenancyv1alpha1.Tenant, backups ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
		WithObjects(append([]client.Object{tenant}, backups...)...).
		WithStatusSubresource(tenant).
		WithIndex(&tenancyv1alpha1.TenantBackup{}, indexes.BackupTenantUID, indexes.BackupTenantUIDs).Build()
}
