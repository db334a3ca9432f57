package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
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
			got := waveTenants(planWaves(ro, waves, tc.chosen))
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

func TestProgressOf(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2"},
		Spec:       tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "2.0.0"},
	}
	tenant := func(version, rollout string, ready bool, conds ...metav1.Condition) *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "acme", Generation: 3},
			Status: tenancyv1alpha1.TenantStatus{ObservedGeneration: 3, Conditions: conds,
				Components: []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: version, Rollout: rollout, Ready: ready}}},
		}
	}
	stalled := metav1.Condition{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonRenderFailed, Message: "boom",
		LastTransitionTime: metav1.NewTime(start.Add(time.Minute))}
	stalledBefore := stalled
	stalledBefore.LastTransitionTime = metav1.NewTime(start.Add(-time.Hour))
	for _, tc := range []struct {
		name       string
		follows    bool
		tenant     *tenancyv1alpha1.Tenant
		after      time.Duration
		want       tenantProgress
		wantReason string
	}{
		{"a tenant running the version Ready is done", true, tenant("2.0.0", "web-2", true), time.Minute, tenantDone, ""},
		{"a tenant still rolling the version out is pending", true, tenant("2.0.0", "web-2", false), time.Minute, tenantPending, ""},
		{"a tenant no longer chosen is skipped", false, tenant("1.0.0", "", true), time.Minute, tenantSkipped, ""},
		{"a tenant a higher rollout moved is skipped", true, tenant("3.0.0", "web-3", true), time.Minute, tenantSkipped, ""},
		{"a tenant running a higher version the rollout may not move it down from is ahead", true, tenant("2.5.0", "web-2-5", true), time.Minute, tenantAhead, ""},
		{"a Stalled tenant has failed, with its reason", true, tenant("1.0.0", "", false, stalled), time.Minute, tenantFailed, tenancyv1alpha1.ReasonRenderFailed},
		{"a tenant stalled before its wave started is given until the deadline", true, tenant("1.0.0", "", false, stalledBefore), 2 * time.Minute, tenantPending, ""},
		{"a tenant not done past the deadline has failed", true, tenant("1.0.0", "", true), 11 * time.Minute, tenantFailed, tenancyv1alpha1.ReasonProgressDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, failure := progressOf(ro, tc.follows, map[string]bool{"web-3": true}, tc.tenant, start, start.Add(tc.after))
			if got != tc.want || failure.Reason != tc.wantReason {
				t.Errorf("progress %d (%q), want %d (%q)", got, failure.Reason, tc.want, tc.wantReason)
			}
		})
	}
}

func TestClipKeepsMessagesShortAndWhole(t *testing.T) {
	long := strings.Repeat("é", 200)
	got := clip(long)
	if len(got) > 260 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("clip gave %d bytes, valid UTF-8 %t", len(got), utf8.ValidString(got))
	}
	if clip("short") != "short" {
		t.Error("a short message was changed")
	}
}

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
		want   bool
	}{
		{"an Active tenant following rollouts, chosen by the selector, is moved", tenant(func(*tenancyv1alpha1.Tenant) {}), true},
		{"a pinned component is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Components[0].FollowRollouts = false }), false},
		{"a tenant without the component is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Components[0].Name = "api" }), false},
		{"a tenant the selector does not choose is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Labels["plan"] = "gold" }), false},
		{"a Frozen tenant is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StateFrozen }), false},
		{"a suspended tenant is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Suspend = true }), false},
		{"a tenant being deleted is not", tenant(func(t *tenancyv1alpha1.Tenant) { t.DeletionTimestamp = &now }), false},
		{"a tenant that is gone is not", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := followsRollout(ro, selector, tc.tenant); got != tc.want {
				t.Errorf("followsRollout = %t, want %t", got, tc.want)
			}
		})
	}
}
