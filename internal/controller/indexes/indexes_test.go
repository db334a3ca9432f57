package indexes

import (
	"slices"
	"testing"

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
