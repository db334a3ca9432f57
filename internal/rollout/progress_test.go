package rollout_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

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
		want       rollout.Progress
		wantReason string
	}{
		{"a tenant running the version Ready is done", true, tenant("2.0.0", "web-2", true), time.Minute, rollout.Done, ""},
		{"a tenant still rolling the version out is pending", true, tenant("2.0.0", "web-2", false), time.Minute, rollout.Pending, ""},
		{"a tenant no longer chosen is skipped", false, tenant("1.0.0", "", true), time.Minute, rollout.Skipped, ""},
		{"a tenant a higher rollout moved is skipped", true, tenant("3.0.0", "web-3", true), time.Minute, rollout.Skipped, ""},
		{"a tenant running a higher version the rollout may not move it down from is ahead", true, tenant("2.5.0", "web-2-5", true), time.Minute, rollout.Ahead, ""},
		{"a Stalled tenant has failed, with its reason", true, tenant("1.0.0", "", false, stalled), time.Minute, rollout.Failed, tenancyv1alpha1.ReasonRenderFailed},
		{"a tenant stalled before its wave started is given until the deadline", true, tenant("1.0.0", "", false, stalledBefore), 2 * time.Minute, rollout.Pending, ""},
		{"a tenant not done past the deadline has failed", true, tenant("1.0.0", "", true), 11 * time.Minute, rollout.Failed, tenancyv1alpha1.ReasonProgressDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, failure := rollout.ProgressOf(ro, tc.follows, map[string]bool{"web-3": true}, tc.tenant, start, start.Add(tc.after))
			if got != tc.want || failure.Reason != tc.wantReason {
				t.Errorf("progress %d (%q), want %d (%q)", got, failure.Reason, tc.want, tc.wantReason)
			}
		})
	}
}

// A tenant whose components phase never got to try the version failed for a reason of its own,
// whichever phase it waited for; one that applied the version failed for the version's.
func TestOwnCause(t *testing.T) {
	ro := &tenancyv1alpha1.ComponentRollout{Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "2.0.0"}}
	waiting := func(reason string) *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{
			Components: []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: "1.0.0"}},
			Conditions: []metav1.Condition{{Type: tenancyv1alpha1.ComponentsReadyCondition, Status: metav1.ConditionFalse, Reason: reason}},
		}}
	}
	applied := &tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{
		Components: []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: "2.0.0", Reason: tenancyv1alpha1.ReasonProgressDeadlineExceeded}},
	}}
	for _, tc := range []struct {
		name   string
		tenant *tenancyv1alpha1.Tenant
		want   bool
	}{
		{"waiting for its namespace is its own cause", waiting(tenancyv1alpha1.ReasonNamespaceNotReady), true},
		{"waiting for a domain another tenant holds is its own cause", waiting(tenancyv1alpha1.ReasonDomainsNotReady), true},
		{"waiting for its workloads is its own cause", waiting(tenancyv1alpha1.ReasonWorkloadsNotReady), true},
		{"a version that does not render is the version's", waiting(tenancyv1alpha1.ReasonRenderFailed), false},
		{"a version applied that fails is the version's", applied, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rollout.OwnCause(ro, tc.tenant); got != tc.want {
				t.Errorf("OwnCause = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClipKeepsMessagesShortAndWhole(t *testing.T) {
	long := strings.Repeat("é", 200)
	got := rollout.Clip(long)
	if len(got) > 260 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("clip gave %d bytes, valid UTF-8 %t", len(got), utf8.ValidString(got))
	}
	if rollout.Clip("short") != "short" {
		t.Error("a short message was changed")
	}
}
