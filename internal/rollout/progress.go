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
)

// ProgressOf says where t stands in the rollout, and for a failed tenant why. A tenant is done
// when its status reports the rollout's version applied and ready; skipped when it is no longer
// chosen (follows is false), or a higher rollout (named in superseded) has moved it; ahead when
// it runs a higher version that the rollout may not move it down from (Moves); failed when it is
// Stalled, or still not done past the progress deadline counted from its wave's start.
func ProgressOf(ro *tenancyv1alpha1.ComponentRollout, follows bool, superseded map[string]bool, t *tenancyv1alpha1.Tenant, started time.Time, now time.Time) (Progress, tenancyv1alpha1.RolloutFailure) {
	if !follows {
		return Skipped, tenancyv1alpha1.RolloutFailure{}
	}
	i := slices.IndexFunc(t.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool { return c.Name == ro.Spec.Component })
	if i >= 0 {
		st := t.Status.Components[i]
		if st.Version == ro.Spec.Version && st.Ready {
			return Done, tenancyv1alpha1.RolloutFailure{}
		}
		if superseded[st.Rollout] {
			return Skipped, tenancyv1alpha1.RolloutFailure{}
		}
	}
	if running, current := Running(t, ro.Spec.Component); !Moves(ro, running, current) {
		return Ahead, tenancyv1alpha1.RolloutFailure{}
	}
	ready := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	message := ""
	if ready != nil {
		message = ready.Message
	}
	// A stall counts once it began after the wave did: a tenant stalled before, for reasons of
	// its own, is given until the deadline. (Times are kept to the second.)
	if stalled := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.StalledCondition); stalled != nil && stalled.Status == metav1.ConditionTrue &&
		!stalled.LastTransitionTime.Time.Before(started.Truncate(time.Second)) {
		return Failed, tenancyv1alpha1.RolloutFailure{Tenant: t.Name, Reason: stalled.Reason, Message: Clip(stalled.Message), OwnCause: OwnCause(ro, t)}
	}
	deadline := ProgressDeadline(ro)
	if now.Sub(started) > deadline {
		return Failed, tenancyv1alpha1.RolloutFailure{Tenant: t.Name, Reason: tenancyv1alpha1.ReasonProgressDeadlineExceeded,
			Message:  Clip(fmt.Sprintf("not running %s %s Ready %s after its wave started: %s", ro.Spec.Component, ro.Spec.Version, deadline, message)),
			OwnCause: OwnCause(ro, t)}
	}
	return Pending, tenancyv1alpha1.RolloutFailure{}
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
var waitingReasons = []string{tenancyv1alpha1.ReasonNamespaceNotReady, tenancyv1alpha1.ReasonDomainsNotReady, tenancyv1alpha1.ReasonWorkloadsNotReady}

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
