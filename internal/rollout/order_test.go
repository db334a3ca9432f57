package rollout_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

func TestRolloutOrder(t *testing.T) {
	start := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	newRollout := func(name, version string, created time.Duration) *tenancyv1alpha1.ComponentRollout {
		return &tenancyv1alpha1.ComponentRollout{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(start.Add(created))},
			Spec:       tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: version},
		}
	}
	for _, tc := range []struct {
		name          string
		higher, lower *tenancyv1alpha1.ComponentRollout
	}{
		{"two rollouts created in the same second rank by version, not by name", newRollout("web-1.10.0", "1.10.0", 0), newRollout("web-1.9.0", "1.9.0", 0)},
		{"an old version applied again later ranks below a newer version", newRollout("web-2", "2.0.0", 0), newRollout("web-1", "1.0.0", time.Hour)},
		{"a release ranks above its pre-releases", newRollout("a", "2.0.0", 0), newRollout("b", "2.0.0-rc.2", time.Hour)},
		{"pre-releases rank by their numbers", newRollout("a", "2.0.0-rc.10", 0), newRollout("b", "2.0.0-rc.9", time.Hour)},
		{"a leading v is allowed", newRollout("a", "v1.10.0", 0), newRollout("b", "1.9.0", time.Hour)},
		{"versions that are not semver compare their numbers as numbers", newRollout("a", "2026.11.10", 0), newRollout("b", "2026.11.9", time.Hour)},
		{"a semver version and one that is not compare their numbers as numbers too", newRollout("a", "1.10", 0), newRollout("b", "1.9.0", time.Hour)},
		{"a version with more numbers ranks above its prefix", newRollout("a", "1.9.1.2", 0), newRollout("b", "1.9.1", time.Hour)},
		{"identical versions rank by creation", newRollout("a", "1.0.0", time.Hour), newRollout("b", "1.0.0", 0)},
		{"identical versions created in the same second rank by name", newRollout("b", "1.0.0", 0), newRollout("a", "1.0.0", 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if rollout.Compare(tc.higher, tc.lower) <= 0 {
				t.Errorf("%s (%s) does not rank above %s (%s)", tc.higher.Name, tc.higher.Spec.Version, tc.lower.Name, tc.lower.Spec.Version)
			}
			if rollout.Compare(tc.lower, tc.higher) >= 0 {
				t.Errorf("%s (%s) ranks above %s (%s)", tc.lower.Name, tc.lower.Spec.Version, tc.higher.Name, tc.higher.Spec.Version)
			}
		})
	}
}

func TestRolloutMoves(t *testing.T) {
	created := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	newRollout := func(version string, rollback bool) *tenancyv1alpha1.ComponentRollout {
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
		{"a rollout moves a tenant up", newRollout("1.10.0", false), "1.9.0", givenBy("1.9.0", -time.Hour), true},
		{"a rollout of the version the tenant runs takes it over", newRollout("1.9.0", false), "1.9.0", givenBy("1.9.0", time.Hour), true},
		{"a rollout does not move a tenant down", newRollout("1.9.0", false), "1.10.0", givenBy("1.10.0", -time.Hour), false},
		{"a rollout does not move a tenant down from its spec's version", newRollout("1.9.0", false), "1.10.0", nil, false},
		{"a rollback moves a tenant down from a version a rollout created before it gave", newRollout("1.9.0", true), "1.10.0", givenBy("1.10.0", -time.Hour), true},
		{"a rollback moves a tenant down from a version a rollout created in the same second gave", newRollout("1.9.0", true), "1.10.0", givenBy("1.10.0", 0), true},
		{"a rollback moves a tenant down from its spec's version", newRollout("1.9.0", true), "1.10.0", nil, true},
		{"a rollback leaves a tenant that a rollout created after it moved up", newRollout("1.9.0", true), "1.10.0", givenBy("1.10.0", time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rollout.Moves(tc.rollout, tc.running, tc.st); got != tc.want {
				t.Errorf("Moves = %t, want %t", got, tc.want)
			}
		})
	}
}

func ptrTime(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
