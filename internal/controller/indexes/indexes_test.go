package indexes

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// A tenant holding a domain is found under every key another domain that can name the same host
// looks it up by, and under none of a domain that cannot.
func TestOverlappingDomainsFindEachOthersHolders(t *testing.T) {
	cases := []struct {
		held, asked string
		found       bool
	}{
		{"shop.example.com", "shop.example.com", true},
		{"*.example.com", "shop.example.com", true},
		{"shop.example.com", "*.example.com", true},
		{"*.example.com", "*.example.com", true},
		{"a.shop.example.com", "*.example.com", false},
		{"example.com", "*.example.com", false},
		{"shop.example.com", "bank.example.com", false},
		{"*.shop.example.com", "*.example.com", false},
	}
	for _, tc := range cases {
		verdict := map[bool]string{true: " finds ", false: " does not find "}[tc.found]
		t.Run("asking for "+tc.asked+verdict+"the holder of "+tc.held, func(t *testing.T) {
			holder := &tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{Domains: []tenancyv1alpha1.Domain{tenancyv1alpha1.Domain(tc.held)}}}
			keys := tenantDomains(holder)
			found := slices.ContainsFunc(OverlapKeys(tc.asked), func(k string) bool { return slices.Contains(keys, k) })
			if found != tc.found {
				t.Errorf("held under %v, asked by %v: found %t", keys, OverlapKeys(tc.asked), found)
			}
		})
	}
}

// Only the tenants of released waves are found, under their component.
func TestOnlyReleasedWavesAreIndexed(t *testing.T) {
	ro := &tenancyv1alpha1.ComponentRollout{
		Spec:   tenancyv1alpha1.ComponentRolloutSpec{Component: "web"},
		Status: tenancyv1alpha1.ComponentRolloutStatus{Released: 1, Waves: []tenancyv1alpha1.RolloutWave{{Tenants: []string{"a", "b"}}, {Tenants: []string{"c"}}}},
	}
	if got, want := rolloutReleased(ro), []string{RolloutKey("web", "a"), RolloutKey("web", "b")}; !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
}

// A tenant is found among those waiting for a database server while it has databases and its
// DatabasesReady condition is not True, and only then.
func TestTenantsWaitingForDatabasesAreIndexed(t *testing.T) {
	postgres := tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "main"}}}
	mysql := tenancyv1alpha1.Databases{MySQL: []tenancyv1alpha1.Database{{Name: "main"}}}
	databasesReady := func(status metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: tenancyv1alpha1.DatabasesReadyCondition, Status: status}}
	}
	for _, tc := range []struct {
		name       string
		databases  tenancyv1alpha1.Databases
		conditions []metav1.Condition
		waiting    bool
	}{
		{"a tenant with no database waits for no server", tenancyv1alpha1.Databases{}, databasesReady(metav1.ConditionFalse), false},
		{"a new tenant with a PostgreSQL database waits", postgres, nil, true},
		{"a tenant whose MySQL database is not ready waits", mysql, databasesReady(metav1.ConditionFalse), true},
		{"a tenant whose databases are unknown waits", postgres, databasesReady(metav1.ConditionUnknown), true},
		{"a tenant whose databases are ready does not wait", postgres, databasesReady(metav1.ConditionTrue), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := &tenancyv1alpha1.Tenant{
				Spec:   tenancyv1alpha1.TenantSpec{Databases: tc.databases},
				Status: tenancyv1alpha1.TenantStatus{Conditions: tc.conditions},
			}
			want := []string(nil)
			if tc.waiting {
				want = []string{NotReady}
			}
			if got := tenantDatabasesNotReady(tenant); !slices.Equal(got, want) {
				t.Errorf("keys %v, want %v", got, want)
			}
		})
	}
}

// A tenant is found under each component it lets rollouts move, and not under one it pins.
func TestTenantsAreIndexedByTheComponentsTheyLetRolloutsMove(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{
		{Name: "web", Version: "1.0.0", FollowRollouts: true},
		{Name: "api", Version: "1.0.0"},
		{Name: "jobs", Version: "1.0.0", FollowRollouts: true},
	}}}
	if got, want := tenantFollowedComponents(tenant), []string{"web", "jobs"}; !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
}
