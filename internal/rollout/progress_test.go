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
	rollouts := map[bool]*tenancyv1alpha1.ComponentRollout{}
	for _, ignore := range []bool{false, true} {
		rollouts[ignore] = &tenancyv1alpha1.ComponentRollout{
			ObjectMeta: metav1.ObjectMeta{Name: "web-2"},
			Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "2.0.0",
				Strategy: tenancyv1alpha1.RolloutStrategy{IgnoreMaintenanceWindows: ignore}},
		}
	}
	tenant := func(version, rollout string, ready bool, conds ...metav1.Condition) *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "acme", Generation: 3},
			Status: tenancyv1alpha1.TenantStatus{ObservedGeneration: 3, Conditions: conds,
				Components: []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: version, Rollout: rollout, Ready: ready}}},
		}
	}
	// windowed is t with a daily window of an hour from at (UTC).
	windowed := func(t *tenancyv1alpha1.Tenant, at string) *tenancyv1alpha1.Tenant {
		t.Spec.MaintenanceWindows = []tenancyv1alpha1.MaintenanceWindow{window(at, time.Hour, "")}
		return t
	}
	migrating := tenant("1.0.0", "", true)
	migrating.Status.Components[0].Migration = &tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0", Phase: tenancyv1alpha1.MigrationPre, Job: "migrate-web-1"}
	// Its migration waits its turn on a database server: no Job yet.
	queued := tenant("1.0.0", "", true)
	queued.Status.Components[0].Migration = &tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0", Phase: tenancyv1alpha1.MigrationPre}
	// Its migration's Job started 50 minutes into the wave, after a long wait for its turn.
	stepLate := tenant("1.0.0", "", true)
	stepLate.Status.Components[0].Migration = &tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0", Phase: tenancyv1alpha1.MigrationPre,
		Job: "migrate-web-1", StepStartedAt: &metav1.Time{Time: start.Add(50 * time.Minute)}}
	stalled := metav1.Condition{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonRenderFailed, Message: "boom",
		LastTransitionTime: metav1.NewTime(start.Add(time.Minute))}
	stalledBefore := stalled
	stalledBefore.LastTransitionTime = metav1.NewTime(start.Add(-time.Hour))
	for _, tc := range []struct {
		name       string
		follows    bool
		ignore     bool
		tenant     *tenancyv1alpha1.Tenant
		after      time.Duration
		want       rollout.Progress
		wantReason string
		// wantTime is a pending tenant's deadline, or a waiting one's next window.
		wantTime time.Time
	}{
		{name: "a tenant running the version Ready is done", follows: true, tenant: tenant("2.0.0", "web-2", true), after: time.Minute, want: rollout.Done},
		{name: "a tenant still rolling the version out is pending", follows: true, tenant: tenant("2.0.0", "web-2", false), after: time.Minute,
			want: rollout.Pending, wantTime: start.Add(10 * time.Minute)},
		{name: "a tenant no longer chosen is skipped", tenant: tenant("1.0.0", "", true), after: time.Minute, want: rollout.Skipped},
		{name: "a tenant a higher rollout moved is skipped", follows: true, tenant: tenant("3.0.0", "web-3", true), after: time.Minute, want: rollout.Skipped},
		{name: "a tenant running a higher version the rollout may not move it down from is ahead", follows: true, tenant: tenant("2.5.0", "web-2-5", true),
			after: time.Minute, want: rollout.Ahead},
		{name: "a Stalled tenant has failed, with its reason", follows: true, tenant: tenant("1.0.0", "", false, stalled), after: time.Minute,
			want: rollout.Failed, wantReason: tenancyv1alpha1.ReasonRenderFailed},
		{name: "a tenant stalled before its wave started is given until the deadline", follows: true, tenant: tenant("1.0.0", "", false, stalledBefore),
			after: 2 * time.Minute, want: rollout.Pending, wantTime: start.Add(10 * time.Minute)},
		{name: "a tenant not done past the deadline has failed", follows: true, tenant: tenant("1.0.0", "", true), after: 11 * time.Minute,
			want: rollout.Failed, wantReason: tenancyv1alpha1.ReasonProgressDeadlineExceeded},

		// Maintenance windows.
		{name: "a tenant outside its window waits for it, past the deadline too", follows: true, tenant: windowed(tenant("1.0.0", "", true), "02:00"),
			after: time.Hour, want: rollout.Waiting, wantTime: time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)},
		{name: "a tenant outside its window waits rather than fail for a stall of its own", follows: true, tenant: windowed(tenant("1.0.0", "", false, stalled), "02:00"),
			after: time.Minute, want: rollout.Waiting, wantTime: time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)},
		{name: "an urgent rollout does not wait for the window", follows: true, ignore: true, tenant: windowed(tenant("1.0.0", "", true), "02:00"),
			after: 11 * time.Minute, want: rollout.Failed, wantReason: tenancyv1alpha1.ReasonProgressDeadlineExceeded},
		{name: "a tenant in its window counts its deadline from the wave's start when the window opened before", follows: true,
			tenant: windowed(tenant("1.0.0", "", true), "11:30"), after: 5 * time.Minute, want: rollout.Pending, wantTime: start.Add(10 * time.Minute)},
		{name: "a tenant counts its deadline from its window's opening when the wave started before", follows: true,
			tenant: windowed(tenant("1.0.0", "", true), "12:30"), after: 35 * time.Minute, want: rollout.Pending, wantTime: start.Add(40 * time.Minute)},
		{name: "a tenant not done past the deadline counted from its window's opening has failed", follows: true,
			tenant: windowed(tenant("1.0.0", "", true), "12:30"), after: 41 * time.Minute, want: rollout.Failed, wantReason: tenancyv1alpha1.ReasonProgressDeadlineExceeded},
		{name: "a move begun in the window is judged after it closes, against the deadline from its opening", follows: true,
			tenant: windowed(tenant("2.0.0", "web-2", false), "12:30"), after: 95 * time.Minute, want: rollout.Failed, wantReason: tenancyv1alpha1.ReasonProgressDeadlineExceeded},
		{name: "a migration begun in the window is judged after it closes, not waiting", follows: true,
			tenant: windowed(migrating, "11:55"), after: 61 * time.Minute, want: rollout.Failed, wantReason: tenancyv1alpha1.ReasonProgressDeadlineExceeded},
		{name: "a tenant whose migration waits its turn on a database server is pending past the deadline", follows: true,
			tenant: queued, after: 3 * time.Hour, want: rollout.Pending, wantTime: start.Add(3*time.Hour + 10*time.Minute)},
		{name: "a migration's deadline counts from its Job's start, not from the wave's", follows: true,
			tenant: stepLate, after: 55 * time.Minute, want: rollout.Pending, wantTime: start.Add(60 * time.Minute)},
		{name: "a migration's Job running past the deadline from its start fails the tenant", follows: true,
			tenant: stepLate, after: 61 * time.Minute, want: rollout.Failed, wantReason: tenancyv1alpha1.ReasonProgressDeadlineExceeded},
		{name: "a tenant running the version Ready outside its window is done", follows: true, tenant: windowed(tenant("2.0.0", "web-2", true), "02:00"),
			after: time.Minute, want: rollout.Done},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rollout.ProgressOf(rollouts[tc.ignore], tc.follows, map[string]bool{"web-3": true}, tc.tenant, start, start.Add(tc.after))
			if got.Progress != tc.want || got.Failure.Reason != tc.wantReason {
				t.Errorf("progress %d (%q: %s), want %d (%q)", got.Progress, got.Failure.Reason, got.Failure.Message, tc.want, tc.wantReason)
			}
			gotTime := map[rollout.Progress]time.Time{rollout.Pending: got.Deadline, rollout.Waiting: got.NextWindow}[got.Progress]
			if !gotTime.Equal(tc.wantTime) {
				t.Errorf("deadline or next window %s, want %s", gotTime, tc.wantTime)
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
		{"a migration that ran and failed is the version's", waiting(tenancyv1alpha1.ReasonMigrationFailed), false},
		{"a migration whose Job the tenant's namespace never let run is its own cause", waiting(tenancyv1alpha1.ReasonMigrationNotStarted), true},
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
