package rollout_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

func waveTenants(waves []tenancyv1alpha1.RolloutWave) [][]string {
	out := make([][]string, len(waves))
	for i, w := range waves {
		out[i] = w.Tenants
	}
	return out
}

func TestPlanWaves(t *testing.T) {
	ten := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d", prefix, i))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		batch    *intstr.IntOrString
		canaries []string
		planned  [][]string
		chosen   []string
		want     [][]string
	}{
		{"without a batch size, a tenth of the tenants moves at a time", nil, nil, nil, ten("t", 20)[:12], [][]string{{"t0", "t1"}, {"t10", "t11"}, {"t2", "t3"}, {"t4", "t5"}, {"t6", "t7"}, {"t8", "t9"}}},
		{"tenants are taken by name in batches", &intstr.IntOrString{IntVal: 2}, nil, nil, []string{"c", "a", "e", "b", "d"}, [][]string{{"a", "b"}, {"c", "d"}, {"e"}}},
		{"a percentage is of the tenants chosen, rounded up", ptrIntStr("30%"), nil, nil, ten("t", 5), [][]string{{"t0", "t1"}, {"t2", "t3"}, {"t4"}}},
		{"canaries go first in a wave of their own, in the order given", &intstr.IntOrString{IntVal: 2}, []string{"t3", "gone", "t1"}, nil, ten("t", 4), [][]string{{"t3", "t1"}, {"t0", "t2"}}},
		{"planned waves never change; tenants chosen later are added at the end", &intstr.IntOrString{IntVal: 2}, []string{"t9"}, [][]string{{"t1", "t0"}}, []string{"t0", "t9", "t2", "t1"}, [][]string{{"t1", "t0"}, {"t2", "t9"}}},
		{"a tenant no longer chosen stays in its wave", &intstr.IntOrString{IntVal: 2}, nil, [][]string{{"t0", "t1"}}, []string{"t1"}, [][]string{{"t0", "t1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := &tenancyv1alpha1.ComponentRollout{Spec: tenancyv1alpha1.ComponentRolloutSpec{Strategy: tenancyv1alpha1.RolloutStrategy{BatchSize: tc.batch, Canaries: tc.canaries}}}
			var waves []tenancyv1alpha1.RolloutWave
			for _, p := range tc.planned {
				waves = append(waves, tenancyv1alpha1.RolloutWave{Tenants: p})
			}
			got := waveTenants(rollout.PlanWaves(ro, waves, tc.chosen))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("waves %v, want %v", got, tc.want)
			}
		})
	}
}

func ptrIntStr(s string) *intstr.IntOrString {
	v := intstr.FromString(s)
	return &v
}
