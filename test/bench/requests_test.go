package main

import (
	"testing"

	"github.com/landlord-dev/landlord/test/testenv"
)

// The benchmark's own requests are counted as the API server counts them, so that taking them
// out of the server's counts leaves the operator's: a GET of one Secret stays a GET, a GET of a
// collection is a LIST, whatever the resource. (GETs of one Secret, counted as LISTs, were once
// left in the operator's figures.)
func TestTheBenchmarksRequestsAreCountedAsTheServerCountsThem(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/api/v1/namespaces/landlord-system/secrets/landlord-backup-0123", "GET secrets"},
		{"GET", "/api/v1/namespaces/landlord-system/secrets", "LIST secrets"},
		{"GET", "/apis/tenancy.landlord.dev/v1alpha1/tenantbackups", "LIST tenantbackups"},
		{"GET", "/apis/tenancy.landlord.dev/v1alpha1/tenants/bench-00001", "GET tenants"},
		{"GET", "/apis/tenancy.landlord.dev/v1alpha1/tenants", "LIST tenants"},
		{"GET", "/api/v1/namespaces", "LIST namespaces"},
		{"GET", "/api/v1/namespaces/tenant-a", "GET namespaces"},
		{"PUT", "/apis/batch/v1/namespaces/landlord-system/jobs/landlord-backup-0123/status", "PUT jobs/status"},
		{"POST", "/apis/tenancy.landlord.dev/v1alpha1/tenantbackupschedules", "POST tenantbackupschedules"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			if got := testenv.ServerKey(tc.method, tc.path); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
