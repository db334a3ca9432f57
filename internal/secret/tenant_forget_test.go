package secret_test

import (
	"context"
	"errors"
	"testing"

	"github.com/landlord-dev/landlord/internal/secret"
)

func TestForgettingTenantSecretsNeverTakesAnotherTenants(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name         string
		storedUID    string // the owner the stored record names
		forgetterUID string // the UID of the tenant whose record is forgotten
		wantKept     bool
	}{
		{name: "a record that names the purged tenant is forgotten", storedUID: "uid-old", forgetterUID: "uid-old"},
		{name: "a record a same-named newer tenant wrote is kept", storedUID: "uid-new", forgetterUID: "uid-old", wantKept: true},
		{name: "a record written before records named their tenant is forgotten by a purge that read it so", storedUID: "", forgetterUID: ""},
		{name: "a record naming a tenant is kept from a purge that read an unmarked one", storedUID: "uid-new", forgetterUID: "", wantKept: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := secret.TenantSecrets{Store: fileStore(t)}
			rec := apiKey("tenant-acme", "db-cloud", "pw")
			if tc.storedUID != "" {
				rec = ownedRecord("pw", tc.storedUID)
			}
			if err := ts.Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if err := ts.Delete(ctx, "tenant-acme", "db-cloud", tc.forgetterUID); err != nil {
				t.Fatalf("forgetting returned %v; a record that is not the tenant's is kept without an error", err)
			}
			got, err := ts.Load(ctx, "tenant-acme", "db-cloud")
			switch {
			case tc.wantKept && err != nil:
				t.Errorf("the other tenant's record was deleted: %v", err)
			case tc.wantKept && got.Annotations["tenancy.landlord.dev/tenant-uid"] != tc.storedUID:
				t.Errorf("the record kept names %q, want %q", got.Annotations["tenancy.landlord.dev/tenant-uid"], tc.storedUID)
			case !tc.wantKept && !errors.Is(err, secret.ErrNotFound):
				t.Errorf("the tenant's own record is still stored: %v", err)
			}
		})
	}
}
