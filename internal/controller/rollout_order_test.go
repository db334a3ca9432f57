package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestRolloutOrder(t *testing.T) {
	start := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	rollout := func(name, version string, created time.Duration) *tenancyv1alpha1.ComponentRollout {
		return &tenancyv1alpha1.ComponentRollout{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(start.Add(created))},
			Spec:       tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: version},
		}
	}
	for _, tc := range []struct {
		name          string
		higher, lower *tenancyv1alpha1.ComponentRollout
	}{
		{"two rollouts created in the same second rank by version, not by name", rollout("web-1.10.0", "1.10.0", 0), rollout("web-1.9.0", "1.9.0", 0)},
		{"an old version applied again later ranks below a newer version", rollout("web-2", "2.0.0", 0), rollout("web-1", "1.0.0", time.Hour)},
		{"a release ranks above its pre-releases", rollout("a", "2.0.0", 0), rollout("b", "2.0.0-rc.2", time.Hour)},
		{"pre-releases rank by their numbers", rollout("a", "2.0.0-rc.10", 0), rollout("b", "2.0.0-rc.9", time.Hour)},
		{"a leading v is allowed", rollout("a", "v1.10.0", 0), rollout("b", "1.9.0", time.Hour)},
		{"versions that are not semver compare their numbers as numbers", rollout("a", "2026.11.10", 0), rollout("b", "2026.11.9", time.Hour)},
		{"a semver version and one that is not compare their numbers as numbers too", rollout("a", "1.10", 0), rollout("b", "1.9.0", time.Hour)},
		{"a version with more numbers ranks above its prefix", rollout("a", "1.9.1.2", 0), rollout("b", "1.9.1", time.Hour)},
		{"identical versions rank by creation", rollout("a", "1.0.0", time.Hour), rollout("b", "1.0.0", 0)},
		{"identical versions created in the same second rank by name", rollout("b", "1.0.0", 0), rollout("a", "1.0.0", 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if compareRollouts(tc.higher, tc.lower) <= 0 {
				t.Errorf("%s (%s) does not rank above %s (%s)", tc.higher.Name, tc.higher.Spec.Version, tc.lower.Name, tc.lower.Spec.Version)
			}
			if compareRollouts(tc.lower, tc.higher) >= 0 {
				t.Errorf("%s (%s) ranks above %s (%s)", tc.lower.Name, tc.lower.Spec.Version, tc.higher.Name, tc.higher.Spec.Version)
			}
		})
	}
}

func TestRolloutMoves(t *testing.T) {
	created := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	rollout := func(version string, rollback bool) *tenancyv1alpha1.ComponentRollout {
		return &tenancyv1alpha1.ComponentRollout{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + version, CreationTimestamp: metav1.NewTime(created)},
			Spec:       tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: version, Rollback: rollback},
		}
	}
	givenBy := func(version string, at time.Duration) *tenancyv1alpha1.ComponentStatus {
		return &tenancyv1alpha1.ComponentStatus{Name: "web", Version: version, Rollout: "web-" + version, RolloutCreated: ptrTime(created.Add(at))}
	}
	for _, tc := range []struct {
		name    string
		rollout *tenancyv1alpha1.ComponentRollout
		running string
		st      *tenancyv1alpha1.ComponentStatus
		want    bool
	}{
		{"a rollout moves a tenant up", rollout("1.10.0", false), "1.9.0", givenBy("1.9.0", -time.Hour), true},
		{"a rollout of the version the tenant runs takes it over", rollout("1.9.0", false), "1.9.0", givenBy("1.9.0", time.Hour), true},
		{"a rollout does not move a tenant down", rollout("1.9.0", false), "1.10.0", givenBy("1.10.0", -time.Hour), false},
		{"a rollout does not move a tenant down from its spec's version", rollout("1.9.0", false), "1.10.0", nil, false},
		{"a rollback moves a tenant down from a version a rollout created before it gave", rollout("1.9.0", true), "1.10.0", givenBy("1.10.0", -time.Hour), true},
		{"a rollback moves a tenant down from a version a rollout created in the same second gave", rollout("1.9.0", true), "1.10.0", givenBy("1.10.0", 0), true},
		{"a rollback moves a tenant down from its spec's version", rollout("1.9.0", true), "1.10.0", nil, true},
		{"a rollback leaves a tenant that a rollout created after it moved up", rollout("1.9.0", true), "1.10.0", givenBy("1.10.0", time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rolloutMoves(tc.rollout, tc.running, tc.st); got != tc.want {
				t.Errorf("rolloutMoves = %t, want %t", got, tc.want)
			}
		})
	}
}

func ptrTime(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
