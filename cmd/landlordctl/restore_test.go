package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestARestoreWritesTheBackupIntoItsOwnTenantOrACopyIntoAnother(t *testing.T) {
	b := &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: "acme-migrate-1"}, Spec: tenancyv1alpha1.TenantBackupSpec{Tenant: "acme"}}
	at := time.Date(2026, 12, 7, 2, 3, 4, 0, time.UTC)
	for _, tc := range []struct {
		name, tenant, restoreName string
		wantName, wantTenant      string
	}{
		{name: "into the tenant backed up, spec.tenant stays empty", tenant: "acme", wantName: "acme-restore-20261207020304"},
		{name: "into another tenant, a copy names it", tenant: "acme-staging", wantName: "acme-staging-restore-20261207020304", wantTenant: "acme-staging"},
		{name: "a name given is kept", tenant: "acme", restoreName: "undo-1-1", wantName: "undo-1-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := restoreOf(b, tc.tenant, tc.restoreName, at)
			if rs.Name != tc.wantName || rs.Spec.Tenant != tc.wantTenant || rs.Spec.Backup != "acme-migrate-1" {
				t.Fatalf("restore %s of %s into %q, want %s into %q", rs.Name, rs.Spec.Backup, rs.Spec.Tenant, tc.wantName, tc.wantTenant)
			}
		})
	}
}

func TestBeforeMigrationFindsTheBackupTheComponentsLastMigrationTook(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Status: tenancyv1alpha1.TenantStatus{Components: []tenancyv1alpha1.ComponentStatus{
		{Name: "web", Migration: &tenancyv1alpha1.MigrationStatus{To: "1.1", Phase: tenancyv1alpha1.MigrationFailed, Backup: "acme-migrate-abc-1"}},
		{Name: "worker", Migration: &tenancyv1alpha1.MigrationStatus{To: "2.0", Phase: tenancyv1alpha1.MigrationSucceeded}},
		{Name: "billing-api", Migration: &tenancyv1alpha1.MigrationStatus{From: "1.0", To: "1.1", Phase: tenancyv1alpha1.MigrationSucceeded, Backup: "acme-migrate-def-1"}},
		{Name: "api"},
	}}}
	for _, tc := range []struct {
		component, want, err string
		force                bool
	}{
		{component: "web", want: "acme-migrate-abc-1"},
		{component: "billing-api", err: "is Succeeded, not Failed"},
		{component: "billing-api", force: true, want: "acme-migrate-def-1"},
		{component: "worker", err: "took no backup"},
		{component: "api", err: "took no backup"},
		{component: "billing", err: "has no component billing"},
	} {
		t.Run(fmt.Sprintf("%s, forced %v", tc.component, tc.force), func(t *testing.T) {
			got, err := migrationBackup(tenant, tc.component, tc.force)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
