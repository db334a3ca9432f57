package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// DefaultProgressDeadline is how long a tenant of a wave may take when the rollout sets none.
const DefaultProgressDeadline = 10 * time.Minute

// ProgressDeadline is how long a tenant of one of the rollout's waves may take.
func ProgressDeadline(ro *tenancyv1alpha1.ComponentRollout) time.Duration {
	if d := ro.Spec.Strategy.ProgressDeadline; d != nil {
		return d.Duration
	}
	return DefaultProgressDeadline
}

// Progress is where one tenant of a released wave stands.
type Progress int

const (
	// Pending: still moving, within its progress deadline.
	Pending Progress = iota
	// Done: runs the rollout's version, Ready.
	Done
	// Failed: Stalled since its wave started, or not done past the progress deadline.
	Failed
	// Skipped: no longer chosen, or moved by a higher rollout.
	Skipped
	// Ahead: runs a higher version, which the rollout may not move it down from.
	Ahead
	// Waiting: pending, and not moving until its next maintenance window opens (MayMoveNow).
	Waiting
)

// Standing is where a tenant of a released wave stands (ProgressOf), and what the rollout's
// status says of it.
type Standing struct {
	Progress Progress
	// Failure is why a Failed tenant failed.
	Failure tenancyv1alpha1.RolloutFailure
	// Deadline is when a Pending tenant's progress deadline passes.
	Deadline time.Time
	// NextWindow is when a Waiting tenant's next maintenance window opens.
	NextWindow time.Time
}

// ProgressOf says where t stands in the rollout. A tenant is done when its status reports the
// rollout's version applied and ready; skipped when it is no longer chosen (follows is false),
// or a higher rollout (named in superseded) has moved it; ahead when it runs a higher version
// that the rollout may not move it down from (Moves); waiting when its maintenance windows keep
// the rollout from moving it now (MayMoveNow), whatever else holds it; failed when it is
// Stalled, or still not done past the progress deadline. The deadline counts from its wave's
// start (started), or from the opening of the maintenance window it moves in when that is later.
func ProgressOf(ro *tenancyv1alpha1.ComponentRollout, follows bool, superseded map[string]bool, t *tenancyv1alpha1.Tenant, started time.Time, now time.Time) Standing {
	if !follows {
		return Standing{Progress: Skipped}
	}
	i := slices.IndexFunc(t.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool { return c.Name == ro.Spec.Component })
	if i >= 0 {
		st := t.Status.Components[i]
		if st.Version == ro.Spec.Version && st.Ready {
			return Standing{Progress: Done}
		}
		if superseded[st.Rollout] {
			return Standing{Progress: Skipped}
		}
	}
	if running, current := Running(t, ro.Spec.Component); !Moves(ro, running, current) {
		return Standing{Progress: Ahead}
	}
	if ok, next := MayMoveNow(ro, t, now); !ok {
		return Standing{Progress: Waiting, NextWindow: next}
	}
	since := "its wave started"
	if windowed := len(t.Spec.MaintenanceWindows) > 0 && !ro.Spec.Strategy.IgnoreMaintenanceWindows; windowed {
		// The window it moves in: open now, or the last one, in which it began.
		since = "its wave started and its maintenance window opened"
		if opened := WindowsAt(t.Spec.MaintenanceWindows, now).Opened; opened.After(started) {
			started = opened
		}
	}
	if i >= 0 {
		if m := t.Status.Components[i].Migration; m != nil && m.To == ro.Spec.Version &&
			(m.Phase == tenancyv1alpha1.MigrationPre || m.Phase == tenancyv1alpha1.MigrationPost) {
			if m.Job == "" {
				// Its migration waits its turn on a database server (or for another move's
				// Job): a queue the rollout itself made, which says nothing of the version or
				// the tenant. Its deadline counts once its Job starts.
				return Standing{Progress: Pending, Deadline: now.Add(ProgressDeadline(ro))}
			}
			if m.StepStartedAt != nil && m.StepStartedAt.After(started) {
				started, since = m.StepStartedAt.Time, "its migration's Job started"
			}
		}
	}
	ready := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	message := ""
	if ready != nil {
		message = ready.Message
	}
	// A stall counts once it began after the wave (or its window) did: a tenant stalled before,
	// for reasons of its own, is given until the deadline. (Times are kept to the second.)
	if stalled := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.StalledCondition); stalled != nil && stalled.Status == metav1.ConditionTrue &&
		!stalled.LastTransitionTime.Time.Before(started.Truncate(time.Second)) {
		return Standing{Progress: Failed, Failure: tenancyv1alpha1.RolloutFailure{Tenant: t.Name, Reason: stalled.Reason, Message: Clip(stalled.Message), OwnCause: OwnCause(ro, t)}}
	}
	deadline := ProgressDeadline(ro)
	if now.Sub(started) > deadline {
		return Standing{Progress: Failed, Failure: tenancyv1alpha1.RolloutFailure{Tenant: t.Name, Reason: tenancyv1alpha1.ReasonProgressDeadlineExceeded,
			Message:  Clip(fmt.Sprintf("not running %s %s Ready %s after %s: %s", ro.Spec.Component, ro.Spec.Version, deadline, since, message)),
			OwnCause: OwnCause(ro, t)}}
	}
	return Standing{Progress: Pending, Deadline: started.Add(deadline)}
}

// OwnCause reports whether a failed tenant never took the rollout's version up for a reason of
// its own: the version was not applied, and its components phase did not get to try (a phase it
// waits for has not converged: a domain another tenant holds, a namespace being deleted). Such
// a failure says nothing of the version, and counts against no failure budget: otherwise a
// tenant's own trouble, which whoever may stall the tenant can cause, would halt the fleet's
// rollout. So is a version applied whose pods the tenant's own pods leave no room for in its
// quota (the component's status reason is ReasonQuotaExceeded, which the tenant reconciler sets
// only when the version's replicas would fit the quota and Landlord's own pods would have left
// room for the refused one). A version that was applied and fails otherwise, or that does not
// render or apply, is the version's failure.
func OwnCause(ro *tenancyv1alpha1.ComponentRollout, t *tenancyv1alpha1.Tenant) bool {
	if i := slices.IndexFunc(t.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool {
		return c.Name == ro.Spec.Component && c.Version == ro.Spec.Version
	}); i >= 0 {
		// Applied: the version's own failure, unless it is the rollout's component that the
		// tenant's own pods keep from running.
		return t.Status.Components[i].Reason == tenancyv1alpha1.ReasonQuotaExceeded
	}
	c := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ComponentsReadyCondition)
	return c != nil && slices.Contains(waitingReasons, c.Reason)
}

// waitingReasons are the reasons of a components phase that waits for another phase.
var waitingReasons = []string{tenancyv1alpha1.ReasonNamespaceNotReady, tenancyv1alpha1.ReasonDomainsNotReady, tenancyv1alpha1.ReasonWorkloadsNotReady,
	// A migration whose Job never got a pod: the tenant's namespace refused it.
	tenancyv1alpha1.ReasonMigrationNotStarted}

// VersionFailures counts the failures of the version itself among a wave's, and those of
// tenants for reasons of their own.
func VersionFailures(failed []tenancyv1alpha1.RolloutFailure) (version, own int32) {
	for _, f := range failed {
		if f.OwnCause {
			own++
		} else {
			version++
		}
	}
	return version, own
}

// FailedNames lists the failed tenants of the released waves for a message, at most ten: those
// that failed for reasons of their own (own), or the version's failures.
func FailedNames(waves []tenancyv1alpha1.RolloutWave, own bool) string {
	var names []string
	for _, w := range waves {
		for _, f := range w.Failed {
			if f.OwnCause == own {
				names = append(names, fmt.Sprintf("%s (%s)", f.Tenant, f.Reason))
			}
		}
	}
	if len(names) > 10 {
		names = append(names[:10], fmt.Sprintf("and %d more", len(names)-10))
	}
	return strings.Join(names, ", ")
}

// Clip cuts a tenant's message for the rollout's status, which lists every failed tenant.
func Clip(message string) string {
	const limit = 256
	if len(message) <= limit {
		return message
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + "…"
}
