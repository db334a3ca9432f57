package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// defaultProgressDeadline is how long a tenant of a wave may take when the rollout sets none.
const defaultProgressDeadline = 10 * time.Minute

// progressDeadline is how long a tenant of one of the rollout's waves may take.
func progressDeadline(ro *tenancyv1alpha1.ComponentRollout) time.Duration {
	if d := ro.Spec.Strategy.ProgressDeadline; d != nil {
		return d.Duration
	}
	return defaultProgressDeadline
}

// followsRollout reports whether the rollout may move t: chosen by its selector, Active, not
// suspended (Landlord changes nothing of it), not being deleted, and running the component with
// followRollouts.
func followsRollout(ro *tenancyv1alpha1.ComponentRollout, selector labels.Selector, t *tenancyv1alpha1.Tenant) bool {
	if t == nil || !t.DeletionTimestamp.IsZero() || t.Spec.Suspend || !selector.Matches(labels.Set(t.Labels)) {
		return false
	}
	if t.Spec.State != "" && t.Spec.State != tenancyv1alpha1.StateActive {
		return false
	}
	i := slices.IndexFunc(t.Spec.Components, func(c tenancyv1alpha1.Component) bool { return c.Name == ro.Spec.Component })
	return i >= 0 && t.Spec.Components[i].FollowRollouts
}

// planWaves adds to waves the chosen tenants no wave holds yet: the canaries first, as a wave
// of their own, then the others by name in waves of the batch size. Waves already planned never
// change, so a restarted operator, or a tenant chosen late, never reorders what was promised.
func planWaves(ro *tenancyv1alpha1.ComponentRollout, waves []tenancyv1alpha1.RolloutWave, chosen []string) []tenancyv1alpha1.RolloutWave {
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
	size := batchSize(ro.Spec.Strategy.BatchSize, len(planned)+len(fresh))
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

// batchSize resolves the strategy's batch size against the number of tenants chosen: at least 1.
func batchSize(v *intstr.IntOrString, total int) int {
	if v == nil {
		v = &defaultBatchSize
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// tenantProgress is where one tenant of a released wave stands.
type tenantProgress int

const (
	tenantPending tenantProgress = iota
	tenantDone
	tenantFailed
	tenantSkipped
	tenantAhead
)

// progressOf says where t stands in the rollout, and for a failed tenant why. A tenant is done
// when its status reports the rollout's version applied and ready; skipped when it is no longer
// chosen, or a higher rollout (superseded) has moved it; ahead when it runs a higher version that
// the rollout may not move it down from (rolloutMoves); failed when it is Stalled, or still not
// done past the progress deadline counted from its wave's start.
func progressOf(ro *tenancyv1alpha1.ComponentRollout, follows bool, superseded map[string]bool, t *tenancyv1alpha1.Tenant, started time.Time, now time.Time) (tenantProgress, tenancyv1alpha1.RolloutFailure) {
	if !follows {
		return tenantSkipped, tenancyv1alpha1.RolloutFailure{}
	}
	i := slices.IndexFunc(t.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool { return c.Name == ro.Spec.Component })
	if i >= 0 {
		st := t.Status.Components[i]
		if st.Version == ro.Spec.Version && st.Ready {
			return tenantDone, tenancyv1alpha1.RolloutFailure{}
		}
		if superseded[st.Rollout] {
			return tenantSkipped, tenancyv1alpha1.RolloutFailure{}
		}
	}
	if running, current := runningOf(t, ro.Spec.Component); !rolloutMoves(ro, running, current) {
		return tenantAhead, tenancyv1alpha1.RolloutFailure{}
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
		return tenantFailed, tenancyv1alpha1.RolloutFailure{Tenant: t.Name, Reason: stalled.Reason, Message: clip(stalled.Message), OwnCause: ownCause(ro, t)}
	}
	deadline := progressDeadline(ro)
	if now.Sub(started) > deadline {
		return tenantFailed, tenancyv1alpha1.RolloutFailure{Tenant: t.Name, Reason: tenancyv1alpha1.ReasonProgressDeadlineExceeded,
			Message:  clip(fmt.Sprintf("not running %s %s Ready %s after its wave started: %s", ro.Spec.Component, ro.Spec.Version, deadline, message)),
			OwnCause: ownCause(ro, t)}
	}
	return tenantPending, tenancyv1alpha1.RolloutFailure{}
}

// ownCause reports whether a failed tenant never took the rollout's version up for a reason of
// its own: the version was not applied, and its components phase did not get to try (the
// namespace has not converged: a domain another tenant holds, a namespace being deleted). Such
// a failure says nothing of the version, and counts against no failure budget: otherwise a
// tenant's own trouble, which whoever may stall the tenant can cause, would halt the fleet's
// rollout. A version that was applied and fails, or that does not render or apply, is the
// version's failure.
func ownCause(ro *tenancyv1alpha1.ComponentRollout, t *tenancyv1alpha1.Tenant) bool {
	if slices.ContainsFunc(t.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool {
		return c.Name == ro.Spec.Component && c.Version == ro.Spec.Version
	}) {
		return false
	}
	c := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ComponentsReadyCondition)
	return c != nil && c.Reason == tenancyv1alpha1.ReasonNamespaceNotReady
}

// versionFailures counts the failures of the version itself among a wave's.
func versionFailures(failed []tenancyv1alpha1.RolloutFailure) (version, own int32) {
	for _, f := range failed {
		if f.OwnCause {
			own++
		} else {
			version++
		}
	}
	return version, own
}

// failedNames lists the failed tenants of the released waves for a message, at most ten: those
// that failed for reasons of their own (own), or the version's failures.
func failedNames(waves []tenancyv1alpha1.RolloutWave, own bool) string {
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

// clip cuts a tenant's message for the rollout's status, which lists every failed tenant.
func clip(message string) string {
	const max = 256
	if len(message) <= max {
		return message
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + "…"
}
