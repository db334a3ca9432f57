package rollout

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/intstr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// PlanWaves adds to waves the chosen tenants no wave holds yet: the canaries first, as a wave
// of their own, then the others by name in waves of the batch size. Waves already planned never
// change, so a restarted operator, or a tenant chosen late, never reorders what was promised.
func PlanWaves(ro *tenancyv1alpha1.ComponentRollout, waves []tenancyv1alpha1.RolloutWave, chosen []string) []tenancyv1alpha1.RolloutWave {
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
	}
	size := BatchSize(ro.Spec.Strategy.BatchSize, len(planned)+len(fresh))
	for len(fresh) > 0 {
		n := min(size, len(fresh))
		waves = append(waves, tenancyv1alpha1.RolloutWave{Tenants: slices.Clone(fresh[:n])})
		fresh = fresh[n:]
	}
	return waves
}

// defaultBatchSize is the batch size of a rollout that sets none: ten waves, whatever the
// number of tenants, so that the rollout's status stays small.
var defaultBatchSize = intstr.FromString("10%")

// BatchSize resolves the strategy's batch size against the number of tenants chosen: at least 1.
func BatchSize(v *intstr.IntOrString, total int) int {
	if v == nil {
		v = &defaultBatchSize
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
