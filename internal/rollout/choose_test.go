package rollout_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

func TestFollowsRollout(t *testing.T) {
	ro := &tenancyv1alpha1.ComponentRollout{Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web"}}
	selector := labels.SelectorFromSet(labels.Set{"plan": "trial"})
	tenant := func(mutate func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
		t := &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "acme", Labels: map[string]string{"plan": "trial"}},
			Spec:       tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0", FollowRollouts: true}}},
		}
		mutate(t)
		return t
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		tenant *tenancyv1alpha1.Tenant
		why    string
	}{
		{"an Active tenant following rollouts, chosen by the selector, is moved", tenant(func(*tenancyv1alpha1.Tenant) {}), ""},
		{"a tenant in state Active spelled out is moved", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StateActive }), ""},
		{"a pinned component is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Components[0].FollowRollouts = false }), "component web is pinned (it does not set followRollouts)"},
		{"a tenant without the component is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Components[0].Name = "api" }), "has no component web"},
		{"a tenant the selector does not choose is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Labels["plan"] = "gold" }), "not chosen by the selector"},
		{"a Frozen tenant is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StateFrozen }), "Frozen"},
		{"an Archived tenant, which runs nothing, is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StateArchived }), "Archived"},
		{"a Purged tenant is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StatePurged }), "Purged"},
		{"a suspended tenant is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Suspend = true }), "suspended"},
		{"a tenant being deleted is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.DeletionTimestamp = &now }), "being deleted"},
		{"a tenant that is gone is not", nil, "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := rollout.Follows(ro, selector, tc.tenant), tc.why == ""; got != want {
				t.Errorf("Follows = %t, want %t", got, want)
			}
			if got := rollout.Excluded(ro, selector, tc.tenant); got != tc.why {
				t.Errorf("Excluded = %q, want %q", got, tc.why)
			}
		})
	}
}

func TestARolloutTakesNoTenantAHigherRolloutChooses(t *testing.T) {
	created := metav1.Now()
	newRollout := func(name, version string, selector map[string]string) tenancyv1alpha1.ComponentRollout {
		return tenancyv1alpha1.ComponentRollout{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created},
			Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: version,
				Selector: metav1.LabelSelector{MatchLabels: selector}},
		}
	}
	all := []tenancyv1alpha1.ComponentRollout{
		newRollout("web-1.2.0", "1.2.0", nil),
		newRollout("web-1.3.0-gold", "1.3.0", map[string]string{"plan": "gold"}),
		newRollout("web-1.1.0", "1.1.0", nil),
		newRollout("api-9.0.0", "9.0.0", nil),
		newRollout("web-2.0.0-broken", "2.0.0", map[string]string{"plan": "in valid"}),
	}
	all[3].Spec.Component = "api"
	all[4].Spec.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "plan", Operator: "Bogus"}}}
	ro := &all[0]
	higher := rollout.Higher(ro, all)
	var names []string
	for _, h := range higher {
		names = append(names, h.Rollout.Name)
	}
	if want := []string{"web-1.3.0-gold", "web-2.0.0-broken"}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("Higher = %v, want %v: only rollouts of the same component that rank above", names, want)
	}
	tenant := func(plan string) *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: plan, Labels: map[string]string{"plan": plan}},
			Spec:       tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0", FollowRollouts: true}}},
		}
	}
	for _, tc := range []struct {
		name    string
		tenant  *tenancyv1alpha1.Tenant
		takenBy string
	}{
		{"a tenant no higher rollout chooses is taken", tenant("trial"), ""},
		{"a tenant a higher rollout chooses is that rollout's", tenant("gold"), "web-1.3.0-gold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			by := ""
			if h := rollout.TakenBy(higher, tc.tenant); h != nil {
				by = h.Name
			}
			if by != tc.takenBy {
				t.Errorf("TakenBy = %q, want %q", by, tc.takenBy)
			}
			choice := rollout.Choose(ro, labels.Everything(), higher, []tenancyv1alpha1.Tenant{*tc.tenant})[0]
			if got, want := choice.Why == "", tc.takenBy == ""; got != want {
				t.Errorf("Choose planned it: %t (%q), want %t", got, choice.Why, want)
			}
		})
	}
}
