package tenantbackup

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
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
