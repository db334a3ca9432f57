package components

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/rollout"
)

// chosenVersion is the version a component of a tenant runs, and the ComponentRollout that
// chose it (empty when the spec did); wait, when a higher rollout waits for the tenant's
// maintenance window, is how long until that window opens.
type chosenVersion struct {
	version string
	rollout string
	created *metav1.Time
	wait    time.Duration
}

// versionOf is the version a component of the tenant runs. One that follows rollouts runs the
// version of the highest rollout (rollout.Compare) that released it, may move it (its selector
// chooses the tenant, which is Active and not suspended) and may move it now (rollout.MayMoveNow:
// the rollout ignores maintenance windows, a window of the tenant is open, or the tenant has
// begun moving to its version), when that rollout may move it from the version it runs
// (rollout.Moves: never down, but for a rollback); else the version a rollout gave it before,
// kept when that rollout is deleted; else its spec's. So deleting a rollout, or applying an old
// one again, never moves a tenant back; and a rollout outside the tenant's windows leaves it on
// the version it runs, Ready, until the next window opens, when its reconcile comes back. A
// pinned component runs its spec's version, whatever the windows (a person chose it), except
// that one a rollout moved keeps that version while its spec names a lower one: a tenant that
// stops following rollouts does not drop to the version it started from, against data the newer
// one may have migrated. Read from the cache's index: no request.
func (e *Engine) versionOf(ctx context.Context, t *tenancyv1alpha1.Tenant, c tenancyv1alpha1.Component) (chosenVersion, error) {
	running, current := rollout.Running(t, c.Name)
	if !c.FollowRollouts {
		if current != nil && rollout.CompareVersions(c.Version, running) < 0 {
			return chosenVersion{version: current.Version, rollout: current.Rollout, created: current.RolloutCreated}, nil
		}
		return chosenVersion{version: c.Version}, nil
	}
	// Only read: no need for the cache's deep copy of the rollouts' statuses.
	list := &tenancyv1alpha1.ComponentRolloutList{}
	if err := e.Client.List(ctx, list, client.MatchingFields{indexes.RolloutReleased: indexes.RolloutKey(c.Name, t.Name)}, client.UnsafeDisableDeepCopy); err != nil {
		return chosenVersion{}, err
	}
	now := time.Now()
	// highest may move the tenant now; waiting is the highest that waits for its window.
	var highest, waiting *tenancyv1alpha1.ComponentRollout
	var nextWindow time.Time
	for i := range list.Items {
		ro := &list.Items[i]
		if ro.Spec.Component != c.Name || !ro.DeletionTimestamp.IsZero() {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(&ro.Spec.Selector)
		if err != nil || !rollout.Follows(ro, selector, t) {
			continue
		}
		if ok, next := rollout.MayMoveNow(ro, t, now); !ok {
			if rollout.Moves(ro, running, current) && (waiting == nil || rollout.Compare(ro, waiting) > 0) {
				waiting, nextWindow = ro, next
			}
			continue
		}
		if highest == nil || rollout.Compare(ro, highest) > 0 {
			highest = ro
		}
	}
	var wait time.Duration
	if waiting != nil && (highest == nil || rollout.Compare(waiting, highest) > 0) && !nextWindow.IsZero() {
		wait = max(nextWindow.Sub(now), time.Second)
	}
	if highest != nil && rollout.Moves(highest, running, current) {
		return chosenVersion{version: highest.Spec.Version, rollout: highest.Name, created: highest.CreationTimestamp.DeepCopy(), wait: wait}, nil
	}
	if current != nil {
		return chosenVersion{version: current.Version, rollout: current.Rollout, created: current.RolloutCreated, wait: wait}, nil
	}
	return chosenVersion{version: c.Version, wait: wait}, nil
}
