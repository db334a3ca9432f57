package componentrollout

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/rollout"
)

// observation is what one reconcile of a rollout read: why its spec cannot be acted on (a
// selector that does not parse, a version whose template is not published), or else the
// tenants that follow its component (by name), the higher rollouts of the component (by name),
// the tenants it chooses, the waves of its last status less the tenants deleted since, and the
// time it looked.
type observation struct {
	invalidSelector error
	missingTemplate string

	selector   labels.Selector
	tenants    map[string]*tenancyv1alpha1.Tenant
	superseded map[string]bool
	chosen     []string
	waves      []tenancyv1alpha1.RolloutWave
	released   int32
	now        time.Time
}

// computeStatus is the rollout's status after a reconcile, following kstatus, and how long
// until it must look again (a pause between waves ending, a pending tenant's progress deadline
// passing; 0 for none). It plans the chosen tenants into waves, counts where the tenants of the
// released waves stand, and releases wave after wave while the last one is done. Ready once
// every wave is released and done; Stalled while spec.selector does not parse, the version's
// template is not published, or more tenants failed than maxFailures; Ready False alone, without
// Reconciling, while spec.halted stops it with waves to go; Reconciling while a wave moves or
// the pause between waves runs. observedGeneration is always the current generation: every
// reconcile reaches a verdict on the spec it read.
func computeStatus(ro *tenancyv1alpha1.ComponentRollout, o observation) (tenancyv1alpha1.ComponentRolloutStatus, time.Duration) {
	s := *ro.Status.DeepCopy()
	s.ObservedGeneration = ro.Generation
	c := conditions.For(&s.Conditions, ro.Generation)
	switch {
	case o.invalidSelector != nil:
		c.Stalled(tenancyv1alpha1.ReasonInvalidObject, fmt.Sprintf("spec.selector: %v", o.invalidSelector))
		return s, 0
	case o.missingTemplate != "":
		c.Stalled(tenancyv1alpha1.ReasonTemplateNotFound, fmt.Sprintf("ComponentTemplate %s not found: publish it, and the rollout starts", o.missingTemplate))
		return s, 0
	}

	// The observation's waves stay as they were: the status gets copies.
	s.Waves = nil
	for i := range o.waves {
		s.Waves = append(s.Waves, *o.waves[i].DeepCopy())
	}
	s.Released = o.released
	now := o.now
	s.Waves = rollout.PlanWaves(ro, s.Waves, o.chosen, now, mayMove(ro, &s, now))

	var requeue time.Duration
	wake := func(d time.Duration) {
		if d > 0 && (requeue == 0 || d < requeue) {
			requeue = d
		}
	}
	// Count the released waves, then release the next while the last one is done: a wave whose
	// tenants already run the version is done at once.
	failed := count(ro, o.selector, o.superseded, &s, o.tenants, now, wake)
	for {
		release, wait := rollout.NextWave(ro, s.Waves, s.Released, failed, now)
		wake(wait)
		if !release {
			break
		}
		s.Waves[s.Released].StartedAt = &metav1.Time{Time: now}
		s.Released++
		failed = count(ro, o.selector, o.superseded, &s, o.tenants, now, wake)
	}

	progress := fmt.Sprintf("%d of %d waves released; %d tenants done, %d pending, %d failed, %d skipped", s.Released, len(s.Waves), s.Done, s.Pending, s.Failed, s.Skipped)
	switch {
	case s.Ahead > 0 && ro.Spec.Rollback:
		progress += fmt.Sprintf(", %d ahead (a rollout created after this rollback moved them to a higher version, and they stay there)", s.Ahead)
	case s.Ahead > 0:
		progress += fmt.Sprintf(", %d ahead (they run a higher version, and stay there: only a rollout with spec.rollback moves them down)", s.Ahead)
	}
	if s.Blocked > 0 {
		progress += fmt.Sprintf(", %d failed for reasons of their own, not counted against maxFailures: %s", s.Blocked, rollout.FailedNames(s.Waves, true))
	}
	allDone := int(s.Released) == len(s.Waves) && s.Pending == 0
	switch {
	case failed > int(ro.Spec.Strategy.MaxFailures):
		c.Stalled(tenancyv1alpha1.ReasonTooManyFailures, fmt.Sprintf("%d tenants failed, more than maxFailures (%d): %s; the rollout goes on once they run %s %s Ready. %s",
			failed, ro.Spec.Strategy.MaxFailures, rollout.FailedNames(s.Waves, false), ro.Spec.Component, ro.Spec.Version, progress))
	case allDone:
		c.Ready(tenancyv1alpha1.ReasonRolloutComplete, progress)
	case ro.Spec.Halted:
		c.Set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ReasonHaltedBySpec, "spec.halted is true: no wave starts. "+progress)
		c.Remove(tenancyv1alpha1.ReconcilingCondition, tenancyv1alpha1.StalledCondition)
	case s.Released > 0 && s.Waves[s.Released-1].CompletedAt != nil:
		c.Reconciling(tenancyv1alpha1.ReasonPausedBetweenWaves, progress)
	default:
		c.Reconciling(tenancyv1alpha1.ReasonWaveInProgress, progress)
	}
	return s, requeue
}

// mayMove is whether the rollout may move tenants now, as its last status says: not halted,
// within its failure budget, and no pause between waves pending. Only then may a tenant chosen
// late join a wave already released, which would move it at once.
func mayMove(ro *tenancyv1alpha1.ComponentRollout, s *tenancyv1alpha1.ComponentRolloutStatus, now time.Time) bool {
	if ro.Spec.Halted || s.Failed > ro.Spec.Strategy.MaxFailures {
		return false
	}
	if p := ro.Spec.Strategy.PauseBetweenWaves; p != nil && s.Released > 0 {
		if done := s.Waves[s.Released-1].CompletedAt; done != nil && now.Before(done.Add(p.Duration)) {
			return false
		}
	}
	return true
}

// maxWaiting is how many of a wave's tenants waiting for their maintenance window its status
// names.
const maxWaiting = 50

// count works out where every tenant of the released waves stands, records it in s (tenants
// of waves not released yet count as pending), marks the waves now done, and returns how many
// tenants failed. A tenant waiting for its maintenance window is pending, and named in its
// wave's waiting list (the first maxWaiting by name). wake hears how long until a pending
// tenant's progress deadline passes, or a waiting tenant's window opens.
func count(ro *tenancyv1alpha1.ComponentRollout, selector labels.Selector, superseded map[string]bool, s *tenancyv1alpha1.ComponentRolloutStatus, byName map[string]*tenancyv1alpha1.Tenant, now time.Time, wake func(time.Duration)) int {
	s.Done, s.Pending, s.Failed, s.Skipped, s.Ahead, s.Blocked = 0, 0, 0, 0, 0, 0
	for i := range s.Waves {
		w := &s.Waves[i]
		switch {
		case i >= int(s.Released):
			s.Pending += int32(len(w.Tenants))
			continue
		case w.CompletedAt != nil:
			// A finished wave is not judged again: a tenant of it that is briefly not Ready
			// months later is its own matter, not the rollout's. Only its failed tenants are
			// looked at, to be counted done once they recover.
			recount(ro, selector, superseded, w, byName, now)
			s.Done += w.Done
			s.Skipped += w.Skipped
			s.Ahead += w.Ahead
			version, own := rollout.VersionFailures(w.Failed)
			s.Failed += version
			s.Blocked += own
			continue
		}
		started := now
		if w.StartedAt != nil {
			started = w.StartedAt.Time
		}
		// A failure once counted as the version's stays the version's, in the wave being judged
		// as in a finished one (recount).
		versionFailed := map[string]bool{}
		for _, f := range w.Failed {
			versionFailed[f.Tenant] = !f.OwnCause
		}
		w.Done, w.Pending, w.Skipped, w.Ahead, w.Failed, w.Waiting = 0, 0, 0, 0, nil, nil
		for _, name := range w.Tenants {
			t := byName[name]
			standing := rollout.ProgressOf(ro, rollout.Follows(ro, selector, t), superseded, t, started, now)
			switch standing.Progress {
			case rollout.Done:
				w.Done++
			case rollout.Skipped:
				w.Skipped++
			case rollout.Ahead:
				w.Ahead++
			case rollout.Failed:
				failure := standing.Failure
				if versionFailed[name] {
					failure.OwnCause = false
				}
				w.Failed = append(w.Failed, failure)
			case rollout.Waiting:
				w.Pending++
				w.Waiting = append(w.Waiting, tenancyv1alpha1.RolloutWaiting{Tenant: name, NextWindow: metav1.NewTime(standing.NextWindow.UTC())})
				wake(standing.NextWindow.Sub(now) + time.Second)
			default:
				w.Pending++
				wake(standing.Deadline.Sub(now) + time.Second)
			}
		}
		slices.SortFunc(w.Waiting, func(a, b tenancyv1alpha1.RolloutWaiting) int { return cmp.Compare(a.Tenant, b.Tenant) })
		if len(w.Waiting) > maxWaiting {
			w.Waiting = w.Waiting[:maxWaiting]
		}
		if w.Pending == 0 && w.CompletedAt == nil {
			w.CompletedAt = &metav1.Time{Time: now}
		}
		s.Done += w.Done
		s.Pending += w.Pending
		s.Skipped += w.Skipped
		s.Ahead += w.Ahead
		version, own := rollout.VersionFailures(w.Failed)
		s.Failed += version
		s.Blocked += own
	}
	return int(s.Failed)
}

// recount counts the failed tenants of a finished wave that recovered as done.
func recount(ro *tenancyv1alpha1.ComponentRollout, selector labels.Selector, superseded map[string]bool, w *tenancyv1alpha1.RolloutWave, byName map[string]*tenancyv1alpha1.Tenant, now time.Time) {
	started := now
	if w.StartedAt != nil {
		started = w.StartedAt.Time
	}
	failed := w.Failed[:0:0]
	for _, f := range w.Failed {
		t := byName[f.Tenant]
		switch current := rollout.ProgressOf(ro, rollout.Follows(ro, selector, t), superseded, t, started, now); current.Progress {
		case rollout.Done:
			w.Done++
		case rollout.Skipped:
			w.Skipped++
		case rollout.Ahead:
			w.Ahead++
		case rollout.Failed:
			// Why it failed is kept; whose the cause is follows the tenant, but a failure once
			// counted as the version's stays the version's: a tenant whose pods failed the
			// version must not turn that into a trouble of its own (by filling its quota) and
			// so release a halted rollout.
			f.OwnCause = f.OwnCause && current.Failure.OwnCause
			failed = append(failed, f)
		default:
			failed = append(failed, f)
		}
	}
	w.Failed = failed
}
