package components

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/rollout"
)

// chosenVersion is the version a component of a tenant runs, and the ComponentRollout that
// chose it (empty when the spec did).
type chosenVersion struct {
	version string
	rollout string
	created *metav1.Time
}

// versionOf is the version a component of the tenant runs. One that follows rollouts runs the
// version of the highest rollout (rollout.Compare) that released it and may move it (its
// selector chooses the tenant, which is Active and not suspended), when that rollout may move it
// from the version it runs (rollout.Moves: never down, but for a rollback); else the version a
// rollout gave it before, kept when that rollout is deleted; else its spec's. So deleting a
// rollout, or applying an old one again, never moves a tenant back. A pinned component runs its
// spec's version, except that one a rollout moved keeps that version while its spec names a
// lower one: a tenant that stops following rollouts does not drop to the version it started from,
// against data the newer one may have migrated. Read from the cache's index: no request.
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
	var highest *tenancyv1alpha1.ComponentRollout
	for i := range list.Items {
		ro := &list.Items[i]
		if ro.Spec.Component != c.Name || !ro.DeletionTimestamp.IsZero() {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(&ro.Spec.Selector)
		if err != nil || !rollout.Follows(ro, selector, t) {
			continue
		}
		if highest == nil || rollout.Compare(ro, highest) > 0 {
			highest = ro
		}
	}
	if highest != nil && rollout.Moves(highest, running, current) {
		return chosenVersion{version: highest.Spec.Version, rollout: highest.Name, created: highest.CreationTimestamp.DeepCopy()}, nil
	}
	if current != nil {
		return chosenVersion{version: current.Version, rollout: current.Rollout, created: current.RolloutCreated}, nil
	}
	return chosenVersion{version: c.Version}, nil
}
