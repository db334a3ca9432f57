package rollout_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

// The release rule the operator applies wave after wave: the next wave goes once the one before
// is done and any pause between waves has passed, and never while the rollout is halted, past
// its failure budget, or out of waves.
func TestNextWave(t *testing.T) {
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	done := func(ago time.Duration) tenancyv1alpha1.RolloutWave {
		return tenancyv1alpha1.RolloutWave{Tenants: []string{"a"}, StartedAt: &metav1.Time{Time: now.Add(-time.Hour)}, CompletedAt: &metav1.Time{Time: now.Add(-ago)}}
	}
	running := tenancyv1alpha1.RolloutWave{Tenants: []string{"b"}, StartedAt: &metav1.Time{Time: now.Add(-time.Minute)}}
	planned := tenancyv1alpha1.RolloutWave{Tenants: []string{"c"}}
	rollout10m := func(mutate ...func(*tenancyv1alpha1.ComponentRollout)) *tenancyv1alpha1.ComponentRollout {
		ro := &tenancyv1alpha1.ComponentRollout{Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "1.1.0",
			Strategy: tenancyv1alpha1.RolloutStrategy{MaxFailures: 1, PauseBetweenWaves: &metav1.Duration{Duration: 10 * time.Minute}}}}
		for _, m := range mutate {
			m(ro)
		}
		return ro
	}
	for _, tc := range []struct {
		name     string
		ro       *tenancyv1alpha1.ComponentRollout
		waves    []tenancyv1alpha1.RolloutWave
		released int32
		failed   int
		release  bool
		wait     time.Duration
	}{
		{name: "the first wave goes at once", ro: rollout10m(), waves: []tenancyv1alpha1.RolloutWave{planned}, release: true},
		{name: "the next wave waits for the one before to be done", ro: rollout10m(), waves: []tenancyv1alpha1.RolloutWave{running, planned}, released: 1},
		{name: "the next wave waits out the pause after the one before, and says how long", ro: rollout10m(), waves: []tenancyv1alpha1.RolloutWave{done(4 * time.Minute), planned}, released: 1, wait: 6 * time.Minute},
		{name: "the next wave goes once the pause has passed", ro: rollout10m(), waves: []tenancyv1alpha1.RolloutWave{done(11 * time.Minute), planned}, released: 1, release: true},
		{name: "without a pause the next wave goes as soon as the one before is done", ro: rollout10m(func(ro *tenancyv1alpha1.ComponentRollout) { ro.Spec.Strategy.PauseBetweenWaves = nil }), waves: []tenancyv1alpha1.RolloutWave{done(0), planned}, released: 1, release: true},
		{name: "a halted rollout releases nothing", ro: rollout10m(func(ro *tenancyv1alpha1.ComponentRollout) { ro.Spec.Halted = true }), waves: []tenancyv1alpha1.RolloutWave{planned}},
		{name: "failures within the budget release the next wave", ro: rollout10m(), waves: []tenancyv1alpha1.RolloutWave{done(time.Hour), planned}, released: 1, failed: 1, release: true},
		{name: "failures past the budget release nothing", ro: rollout10m(), waves: []tenancyv1alpha1.RolloutWave{done(time.Hour), planned}, released: 1, failed: 2},
		{name: "a rollout with every wave released releases nothing", ro: rollout10m(), waves: []tenancyv1alpha1.RolloutWave{done(time.Hour)}, released: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release, wait := rollout.NextWave(tc.ro, tc.waves, tc.released, tc.failed, now)
			if release != tc.release || wait != tc.wait {
				t.Errorf("NextWave = %t, %s; want %t, %s", release, wait, tc.release, tc.wait)
			}
		})
	}
}

// What a rollout makes of each tenant, which the operator plans by and a preview shows: the
// planned ones with the version they run, and the rest with the reason.
func TestChoose(t *testing.T) {
	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1.1.0"},
		Spec:       tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "1.1.0"},
	}
	tenant := func(name, runs string, mutate ...func(*tenancyv1alpha1.Tenant)) tenancyv1alpha1.Tenant {
		t := tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "web", Version: runs, FollowRollouts: true}}}}
		if runs != "" {
			t.Status.Components = []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: runs, Ready: true}}
		}
		for _, m := range mutate {
			m(&t)
		}
		return t
	}
	got := rollout.Choose(ro, labels.Everything(), nil, []tenancyv1alpha1.Tenant{
		tenant("behind", "1.0.0"),
		tenant("there", "1.1.0"),
		tenant("ahead", "1.2.0"),
		tenant("frozen", "1.0.0", func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StateFrozen }),
		tenant("pinned", "1.0.0", func(t *tenancyv1alpha1.Tenant) { t.Spec.Components[0].FollowRollouts = false }),
	})
	want := []rollout.Choice{
		{Tenant: "behind", Running: "1.0.0"},
		{Tenant: "there", Running: "1.1.0"},
		{Tenant: "ahead", Running: "1.2.0", Stays: true},
		{Tenant: "frozen", Why: "Frozen"},
		{Tenant: "pinned", Why: "component web is pinned (it does not set followRollouts)"},
	}
	if len(got) != len(want) {
		t.Fatalf("Choose = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Choose[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}
