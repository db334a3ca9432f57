package tenantbackup

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// A tenant's data is read or written only while it is the tenant's: not on its way out, not
// dropped, not handed to another cluster. (The cluster test covers a moved tenant end to end.)
func TestRefusedNamesWhyATenantsDataIsNotToBeTouched(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name    string
		tenant  tenancyv1alpha1.Tenant
		message string
	}{
		{"a tenant being deleted", tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a", DeletionTimestamp: &now}}, "tenant a is being deleted"},
		{"a Purged tenant", tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: tenancyv1alpha1.TenantSpec{State: tenancyv1alpha1.StatePurged}}, "tenant a is Purged"},
		{"a moved tenant", tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{tenancyv1alpha1.MovedToAnnotation: "https://eu-2"}}}, "tenant a was moved to https://eu-2"},
	} {
		t.Run(tc.name+" is refused, saying so", func(t *testing.T) {
			err := refused(&tc.tenant)
			ref, ok := err.(*refusal)
			if !ok || ref.reason != tenancyv1alpha1.ReasonBackupRefused || len(ref.message) < len(tc.message) || ref.message[:len(tc.message)] != tc.message {
				t.Errorf("refused = %v, want a BackupRefused starting %q", err, tc.message)
			}
		})
	}
	t.Run("an Active, Frozen or Archived tenant is not refused", func(t *testing.T) {
		for _, state := range []tenancyv1alpha1.TenantState{tenancyv1alpha1.StateActive, tenancyv1alpha1.StateFrozen, tenancyv1alpha1.StateArchived} {
			if err := refused(&tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{State: state}}); err != nil {
				t.Errorf("%s: %v", state, err)
			}
		}
	})
}
