package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The preview of --dry-run plans a tenant only when the operator would move it, by the operator's
// own rules: a tenant that could never run the version (Archived, Frozen, suspended, or whose
// component is pinned) is listed as left alone, with why, rather than planned into a wave that
// would wait for it.
func TestThePreviewPlansOnlyTheTenantsTheOperatorWouldMove(t *testing.T) {
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1.2.0"},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "1.2.0",
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "shared"}}},
	}
	higher := tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2.0.0-gold", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "2.0.0",
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"plan": "gold"}}},
	}
	selector, err := metav1.LabelSelectorAsSelector(&ro.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	tenant := func(mutate func(*tenancyv1alpha1.Tenant)) tenancyv1alpha1.Tenant {
		t := tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "acme", Labels: map[string]string{"tier": "shared", "plan": "trial"}},
			Spec:       tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0", FollowRollouts: true}}},
		}
		mutate(&t)
		return t
	}
	for _, tc := range []struct {
		name    string
		tenant  tenancyv1alpha1.Tenant
		planned bool
		skip    string
		ahead   string
		already int
	}{
		{"an Active tenant whose component follows rollouts is planned", tenant(func(*tenancyv1alpha1.Tenant) {}), true, "", "", 0},
		{"an Archived tenant is left alone", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StateArchived }), false, "Archived", "", 0},
		{"a Frozen tenant is left alone", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StateFrozen }), false, "Frozen", "", 0},
		{"a suspended tenant is left alone", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Suspend = true }), false, "suspended", "", 0},
		{"a tenant whose component is pinned is left alone", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Components[0].FollowRollouts = false }), false,
			"component web is pinned (it does not set followRollouts)", "", 0},
		{"a tenant a higher rollout chooses is that rollout's", tenant(func(t *tenancyv1alpha1.Tenant) { t.Labels["plan"] = "gold" }), false,
			"ComponentRollout web-2.0.0-gold (web 2.0.0) ranks higher and takes it", "", 0},
		{"a tenant the selector does not choose is not listed", tenant(func(t *tenancyv1alpha1.Tenant) { t.Labels["tier"] = "dedicated" }), false, "", "", 0},
		{"a tenant without the component is not listed", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Components[0].Name = "api" }), false, "", "", 0},
		{"a tenant already running the version is planned, and counted", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Components[0].Version = "1.2.0" }), true, "", "", 1},
		{"a tenant a rollout moved to a higher version is planned, and stays ahead", tenant(func(t *tenancyv1alpha1.Tenant) {
			t.Status.Components = []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: "1.5.0", Rollout: "web-1.5.0", Ready: true}}
		}), true, "", "runs 1.5.0, a higher version, and stays there (only a rollback moves it down)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := previewRollout(ro, selector, []tenancyv1alpha1.Tenant{tc.tenant}, []tenancyv1alpha1.ComponentRollout{higher}, now)
			if planned := slices.ContainsFunc(p.waves, func(w []string) bool { return slices.Contains(w, "acme") }); planned != tc.planned {
				t.Errorf("planned = %t, want %t (waves %v)", planned, tc.planned, p.waves)
			}
			if got, want := fmt.Sprint(p.skipped), fmt.Sprint(outcomes(tc.skip)); got != want {
				t.Errorf("skipped %s, want %s", got, want)
			}
			if got, want := fmt.Sprint(p.ahead), fmt.Sprint(outcomes(tc.ahead)); got != want {
				t.Errorf("ahead %s, want %s", got, want)
			}
			if p.already != tc.already {
				t.Errorf("already %d, want %d", p.already, tc.already)
			}
		})
	}
}

// outcomes is acme's outcome for reason, or none.
func outcomes(reason string) []outcome {
	if reason == "" {
		return nil
	}
	return []outcome{{"acme", reason}}
}

// The preview's waves are the operator's: canaries first, then the others by name in batches.
func TestThePreviewPlansWavesAsTheOperatorDoes(t *testing.T) {
	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1.2.0"},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "1.2.0",
			Strategy: tenancyv1alpha1.RolloutStrategy{Canaries: []string{"umbrella"}, BatchSize: ptr.To(intstr.FromString("40%"))}},
	}
	var tenants []tenancyv1alpha1.Tenant
	for _, name := range []string{"umbrella", "initech", "acme", "hooli", "globex", "cyberdyne"} {
		tenants = append(tenants, tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0", FollowRollouts: true}}},
		})
	}
	p := previewRollout(ro, labels.Everything(), tenants, nil, time.Now())
	if got, want := fmt.Sprint(p.waves), fmt.Sprint([][]string{{"umbrella"}, {"acme", "cyberdyne", "globex"}, {"hooli", "initech"}}); got != want {
		t.Errorf("waves %s, want %s", got, want)
	}
}
