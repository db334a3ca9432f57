package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The VERSIONS column says what each component runs: a ComponentRollout moves a component
// without writing the tenant's spec, so the spec's version is only where it started.
func TestGetTenantsShowsTheVersionEachComponentRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   []tenancyv1alpha1.Component
		status []tenancyv1alpha1.ComponentStatus
		want   string
	}{
		{
			"a component a rollout moved shows the version it runs, not its spec's",
			[]tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0", FollowRollouts: true}},
			[]tenancyv1alpha1.ComponentStatus{{Name: "web", Version: "1.1.0", Rollout: "web-1.1.0", Ready: true}},
			"web=1.1.0",
		},
		{
			"a pinned component whose new version is not applied yet shows the version it still runs",
			[]tenancyv1alpha1.Component{{Name: "web", Version: "1.2.0"}},
			[]tenancyv1alpha1.ComponentStatus{{Name: "web", Version: "1.1.0", Ready: true}},
			"web=1.1.0",
		},
		{
			"a component not reported yet shows its spec's version",
			[]tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0"}, {Name: "api", Version: "2.0.0"}},
			[]tenancyv1alpha1.ComponentStatus{{Name: "web", Version: "1.0.0", Ready: true}},
			"web=1.0.0,api=2.0.0",
		},
		{
			"components keep the spec's order",
			[]tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0"}, {Name: "api", Version: "2.0.0", FollowRollouts: true}},
			[]tenancyv1alpha1.ComponentStatus{{Name: "api", Version: "2.1.0", Rollout: "api-2.1.0"}, {Name: "web", Version: "1.0.0"}},
			"web=1.0.0,api=2.1.0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := tenancyv1alpha1.Tenant{
				ObjectMeta: metav1.ObjectMeta{Name: "acme"},
				Spec:       tenancyv1alpha1.TenantSpec{Components: tc.spec},
				Status:     tenancyv1alpha1.TenantStatus{Components: tc.status},
			}
			table := tenantTable([]tenancyv1alpha1.Tenant{tenant})
			column := -1
			for i, c := range table.ColumnDefinitions {
				if c.Name == "Versions" {
					column = i
				}
			}
			if got := table.Rows[0].Cells[column]; got != tc.want {
				t.Errorf("VERSIONS %q, want %q", got, tc.want)
			}
		})
	}
}
