package rollout

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// PlanWaves adds to waves the chosen tenants no wave holds yet. The first plan takes the
// canaries first, as a wave of their own, then the others by name in waves of the batch size.
// Tenants chosen later (new tenants, relabelled ones) join the last wave, but the canaries', until
// it holds a batch, and only then start a new wave: a rollout's waves grow by one per batch of
// late tenants, never by one each, however many arrive one reconcile at a time, and its status
// stays bounded. A last wave already released that takes late tenants starts again at now: its
// progress deadline counts from then, and it is judged again until it is done. A released wave
// takes late tenants only while the rollout may move tenants (mayMove: not halted, within its
// failure budget, no pause between waves pending); otherwise they wait in a wave of their own,
// released as any other. Nothing planned
// is reordered or taken out, so a restarted operator, or a tenant chosen late, never changes
// what was promised to the tenants already planned.
func PlanWaves(ro *tenancyv1alpha1.ComponentRollout, waves []tenancyv1alpha1.RolloutWave, chosen []string, now time.Time, mayMove bool) []tenancyv1alpha1.RolloutWave {
	planned := map[string]bool{}
	for _, w := range waves {
		for _, name := range w.Tenants {
			planned[name] = true
		}
	}
	var fresh []string
	for _, name := range chosen {
		if !planned[name] {
			fresh = append(fresh, name)
		}
	}
	if len(fresh) == 0 {
		return waves
	}
	slices.Sort(fresh)
	size := BatchSize(ro.Spec.Strategy.BatchSize, len(planned)+len(fresh))
	waves = slices.Clone(waves)
	if len(waves) == 0 {
		var canaries []string
		for _, name := range ro.Spec.Strategy.Canaries {
			if i := slices.Index(fresh, name); i >= 0 {
				canaries = append(canaries, name)
				fresh = slices.Delete(fresh, i, i+1)
			}
		}
		if len(canaries) > 0 {
			waves = append(waves, tenancyv1alpha1.RolloutWave{Tenants: canaries})
		}
	} else if last := &waves[len(waves)-1]; (len(waves) > 1 || !isCanaries(ro, *last)) && (last.StartedAt == nil || mayMove) {
		if n := min(size-len(last.Tenants), len(fresh)); n > 0 {
			last.Tenants = append(slices.Clone(last.Tenants), fresh[:n]...)
			fresh = fresh[n:]
			if last.StartedAt != nil {
				last.StartedAt = &metav1.Time{Time: now}
				last.CompletedAt = nil
			}
		}
	}
	for len(fresh) > 0 {
		n := min(size, len(fresh))
		waves = append(waves, tenancyv1alpha1.RolloutWave{Tenants: slices.Clone(fresh[:n])})
		fresh = fresh[n:]
	}
	return waves
}

// isCanaries reports whether w, the first wave, is the canaries': the first plan puts the
// canaries it finds in a wave of their own, and only them.
func isCanaries(ro *tenancyv1alpha1.ComponentRollout, w tenancyv1alpha1.RolloutWave) bool {
	canaries := ro.Spec.Strategy.Canaries
	return len(canaries) > 0 && !slices.ContainsFunc(w.Tenants, func(name string) bool { return !slices.Contains(canaries, name) })
}

// DefaultBatchSize is the batch size of a rollout that sets none: ten waves, whatever the
// number of tenants, so that the rollout's status stays small.
const DefaultBatchSize = "10%"

// BatchSize resolves the strategy's batch size against the number of tenants chosen: at least 1.
func BatchSize(v *intstr.IntOrString, total int) int {
	if v == nil {
		v = ptr.To(intstr.FromString(DefaultBatchSize))
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Forget takes out of the completed waves the tenants that no longer exist, and the completed
// waves left empty, so that a rollout kept for the tenants that keep arriving does not gather
// the name of every tenant deleted since: its status stays bounded by the tenants that exist. A
// completed wave's counts are what it achieved and stay; a wave under way or not released keeps
// every name, since it is still judged. It returns the waves and the number released.
func Forget(waves []tenancyv1alpha1.RolloutWave, released int32, exists func(string) bool) ([]tenancyv1alpha1.RolloutWave, int32) {
	var out []tenancyv1alpha1.RolloutWave
	for i, w := range waves {
		if w.CompletedAt == nil || i >= int(released) {
			out = append(out, w)
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(w.Tenants), func(name string) bool { return !exists(name) })
		if len(kept) == 0 {
			released--
			continue
		}
		w.Tenants = kept
		w.Failed = slices.DeleteFunc(slices.Clone(w.Failed), func(f tenancyv1alpha1.RolloutFailure) bool { return !exists(f.Tenant) })
		out = append(out, w)
	}
	return out, released
}

// NextWave says whether the rollout releases its next wave now, given its last status (the
// waves planned, how many are released) and the failures counted against maxFailures; when it
// may not yet only because of spec.strategy.pauseBetweenWaves, wait is how long until it may.
// The operator releases wave after wave while this says so, counting again after each (a wave
// whose tenants already run the version is done at once).
func NextWave(ro *tenancyv1alpha1.ComponentRollout, waves []tenancyv1alpha1.RolloutWave, released int32, failed int, now time.Time) (release bool, wait time.Duration) {
	if ro.Spec.Halted || int(released) >= len(waves) || failed > int(ro.Spec.Strategy.MaxFailures) {
		return false, 0
	}
	if released == 0 {
		return true, 0
	}
	last := waves[released-1]
	if last.CompletedAt == nil {
		return false, 0
	}
	if p := ro.Spec.Strategy.PauseBetweenWaves; p != nil {
		if left := last.CompletedAt.Add(p.Duration).Sub(now); left > 0 {
			return false, left
		}
	}
	return true, 0
}
