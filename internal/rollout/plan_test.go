package rollout_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		{"planned waves are never reordered; tenants chosen later come after them", &intstr.IntOrString{IntVal: 2}, []string{"t9"}, [][]string{{"t1", "t0"}}, []string{"t0", "t9", "t2", "t1"}, [][]string{{"t1", "t0"}, {"t2", "t9"}}},
		{"tenants chosen later fill the last wave to the batch size first", &intstr.IntOrString{IntVal: 3}, nil, [][]string{{"t0", "t1", "t2"}, {"t3"}}, []string{"t0", "t1", "t2", "t3", "t9", "t5", "t4", "t6"}, [][]string{{"t0", "t1", "t2"}, {"t3", "t4", "t5"}, {"t6", "t9"}}},
		{"a tenant no longer chosen stays in its wave", &intstr.IntOrString{IntVal: 2}, nil, [][]string{{"t0", "t1"}}, []string{"t1"}, [][]string{{"t0", "t1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := &tenancyv1alpha1.ComponentRollout{Spec: tenancyv1alpha1.ComponentRolloutSpec{Strategy: tenancyv1alpha1.RolloutStrategy{BatchSize: tc.batch, Canaries: tc.canaries}}}
			var waves []tenancyv1alpha1.RolloutWave
			for _, p := range tc.planned {
				waves = append(waves, tenancyv1alpha1.RolloutWave{Tenants: p})
			}
			got := waveTenants(rollout.PlanWaves(ro, waves, tc.chosen, time.Now(), true))
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

// Tenants keep arriving after a rollout was planned (signups, a pool's spares): each reconcile
// may find one more. They join the last wave until it holds a batch, so the rollout's status
// grows by a wave per batch of them, never by a wave each.
func TestTenantsChosenLateDoNotAddAWaveEach(t *testing.T) {
	names := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%04d", prefix, i))
		}
		return out
	}
	sizes := func(waves []tenancyv1alpha1.RolloutWave) []int {
		out := make([]int, len(waves))
		for i, w := range waves {
			out[i] = len(w.Tenants)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		batch     *intstr.IntOrString
		canaries  []string
		first     []string
		late      []string
		wantSizes []int
		maxWaves  int
	}{
		{"late tenants fill the last wave to the batch size before a new one starts", &intstr.IntOrString{IntVal: 5},
			nil, names("a", 12), names("late", 13), []int{5, 5, 5, 5, 5}, 5},
		{"late tenants never join the canaries' wave", &intstr.IntOrString{IntVal: 2},
			[]string{"a0000"}, names("a", 1), names("late", 3), []int{1, 2, 1}, 3},
		{"a thousand tenants arriving one at a time after the first make fifty waves at the default batch size", nil,
			nil, names("a", 1), names("late", 999), nil, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := &tenancyv1alpha1.ComponentRollout{Spec: tenancyv1alpha1.ComponentRolloutSpec{Strategy: tenancyv1alpha1.RolloutStrategy{BatchSize: tc.batch, Canaries: tc.canaries}}}
			chosen := slices.Clone(tc.first)
			waves := rollout.PlanWaves(ro, nil, chosen, time.Now(), true)
			for _, name := range tc.late {
				chosen = append(chosen, name)
				waves = rollout.PlanWaves(ro, waves, chosen, time.Now(), true)
			}
			if tc.wantSizes != nil && !slices.Equal(sizes(waves), tc.wantSizes) {
				t.Errorf("waves of %v tenants, want %v", sizes(waves), tc.wantSizes)
			}
			if len(waves) > tc.maxWaves {
				t.Errorf("%d waves for %d tenants, want at most %d", len(waves), len(chosen), tc.maxWaves)
			}
			if got := waveTenants(waves); len(slices.Concat(got...)) != len(chosen) {
				t.Errorf("the waves hold %d tenants, want each of the %d once", len(slices.Concat(got...)), len(chosen))
			}
		})
	}
}

// A late tenant that joins a wave already released starts it again: it is given the whole
// progress deadline, and the wave is judged until it is done again.
func TestALateTenantStartsAgainTheReleasedWaveItJoins(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC))
	now := then.Add(time.Hour)
	ro := &tenancyv1alpha1.ComponentRollout{Spec: tenancyv1alpha1.ComponentRolloutSpec{Strategy: tenancyv1alpha1.RolloutStrategy{BatchSize: &intstr.IntOrString{IntVal: 2}}}}
	for _, tc := range []struct {
		name                   string
		wave                   tenancyv1alpha1.RolloutWave
		wantStarted, wantEnded *metav1.Time
	}{
		{"a finished wave starts again, not finished", tenancyv1alpha1.RolloutWave{Tenants: []string{"a"}, StartedAt: &then, CompletedAt: &then, Done: 1},
			&metav1.Time{Time: now}, nil},
		{"a wave under way starts again", tenancyv1alpha1.RolloutWave{Tenants: []string{"a"}, StartedAt: &then, Pending: 1},
			&metav1.Time{Time: now}, nil},
		{"a wave not released yet stays so", tenancyv1alpha1.RolloutWave{Tenants: []string{"a"}},
			nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := []tenancyv1alpha1.RolloutWave{*tc.wave.DeepCopy()}
			got := rollout.PlanWaves(ro, before, []string{"a", "b"}, now, true)
			if len(got) != 1 || !slices.Equal(got[0].Tenants, []string{"a", "b"}) {
				t.Fatalf("waves %v, want b to join a's", waveTenants(got))
			}
			if !got[0].StartedAt.Equal(tc.wantStarted) || !got[0].CompletedAt.Equal(tc.wantEnded) {
				t.Errorf("started %v, completed %v; want %v, %v", got[0].StartedAt, got[0].CompletedAt, tc.wantStarted, tc.wantEnded)
			}
			if !equality.Semantic.DeepEqual(before[0], tc.wave) {
				t.Errorf("the waves passed in were changed: %+v", before[0])
			}
		})
	}
}

// A rollout halted, over its failure budget or pausing between waves moves no tenant: one chosen
// late waits in a wave of its own, not in the last wave already released, which would move it
// at once.
func TestALateTenantWaitsWhileTheRolloutMayNotMoveTenants(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC))
	ro := &tenancyv1alpha1.ComponentRollout{Spec: tenancyv1alpha1.ComponentRolloutSpec{Strategy: tenancyv1alpha1.RolloutStrategy{BatchSize: &intstr.IntOrString{IntVal: 2}}}}
	released := []tenancyv1alpha1.RolloutWave{{Tenants: []string{"a"}, StartedAt: &then, CompletedAt: &then, Done: 1}}
	got := rollout.PlanWaves(ro, released, []string{"a", "b", "c"}, then.Add(time.Hour), false)
	if !reflect.DeepEqual(waveTenants(got), [][]string{{"a"}, {"b", "c"}}) {
		t.Fatalf("waves %v, want the late tenants in a wave of their own", waveTenants(got))
	}
	if !got[0].StartedAt.Equal(&then) || got[0].CompletedAt == nil || got[1].StartedAt != nil {
		t.Errorf("the released wave was started again or the new one released: %+v", got)
	}
	// Once in a wave of their own, not released, later arrivals join it until it holds a batch.
	got = rollout.PlanWaves(ro, got, []string{"a", "b", "c", "d"}, then.Add(2*time.Hour), false)
	if !reflect.DeepEqual(waveTenants(got), [][]string{{"a"}, {"b", "c"}, {"d"}}) {
		t.Errorf("waves %v", waveTenants(got))
	}
}

// Tenants deleted after their wave completed leave the rollout's status, and so does a completed
// wave left empty; waves still judged keep every name.
func TestDeletedTenantsLeaveCompletedWaves(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC))
	waves := []tenancyv1alpha1.RolloutWave{
		{Tenants: []string{"gone-1"}, StartedAt: &then, CompletedAt: &then, Done: 1},
		{Tenants: []string{"a", "gone-2"}, StartedAt: &then, CompletedAt: &then, Done: 1,
			Failed: []tenancyv1alpha1.RolloutFailure{{Tenant: "gone-2"}}},
		{Tenants: []string{"b", "gone-3"}, StartedAt: &then},
		{Tenants: []string{"gone-4"}},
	}
	exists := func(name string) bool { return !strings.HasPrefix(name, "gone") }
	got, released := rollout.Forget(waves, 3, exists)
	if want := [][]string{{"a"}, {"b", "gone-3"}, {"gone-4"}}; !reflect.DeepEqual(waveTenants(got), want) {
		t.Errorf("waves %v, want %v", waveTenants(got), want)
	}
	if released != 2 {
		t.Errorf("released %d, want 2: the empty completed wave was released", released)
	}
	if len(got[0].Failed) != 0 || got[0].Done != 1 {
		t.Errorf("completed wave %+v: a deleted tenant's failure is forgotten, its counts kept", got[0])
	}
	if !reflect.DeepEqual(waves[1].Tenants, []string{"a", "gone-2"}) {
		t.Errorf("the waves passed in were changed: %v", waves[1].Tenants)
	}
}
