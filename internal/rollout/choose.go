package rollout

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Follows reports whether the rollout may move t: chosen by its selector, Active, not suspended
// (Landlord changes nothing of it), not being deleted, and running the component with
// followRollouts. Excluded says why not.
func Follows(ro *tenancyv1alpha1.ComponentRollout, selector labels.Selector, t *tenancyv1alpha1.Tenant) bool {
	return Excluded(ro, selector, t) == ""
}

// Excluded says why the rollout may not move t, or "" when it may (Follows): a person previewing
// a rollout sees which tenants it leaves alone, and why, by the rules the operator applies.
func Excluded(ro *tenancyv1alpha1.ComponentRollout, selector labels.Selector, t *tenancyv1alpha1.Tenant) string {
	switch {
	case t == nil:
		return "gone"
	case !t.DeletionTimestamp.IsZero():
		return "being deleted"
	case !selector.Matches(labels.Set(t.Labels)):
		return "not chosen by the selector"
	case t.Spec.Suspend:
		return "suspended"
	case t.Spec.State != "" && t.Spec.State != tenancyv1alpha1.StateActive:
		// An Archived tenant runs nothing, a Frozen one nothing that could become Ready.
		return string(t.Spec.State)
	}
	i := slices.IndexFunc(t.Spec.Components, func(c tenancyv1alpha1.Component) bool { return c.Name == ro.Spec.Component })
	switch {
	case i < 0:
		return "has no component " + ro.Spec.Component
	case !t.Spec.Components[i].FollowRollouts:
		return "component " + ro.Spec.Component + " is pinned (it does not set followRollouts)"
	}
	return ""
}

// Chooser is a rollout with its parsed selector.
type Chooser struct {
	Rollout  *tenancyv1alpha1.ComponentRollout
	Selector labels.Selector
}

// Higher lists the rollouts of ro's component among all that rank above it (Compare): a tenant
// one of them chooses is not ro's to take, and one that such a rollout has moved runs its
// version and is no longer ro's to move. (A rollout whose selector does not parse chooses no
// tenant.)
func Higher(ro *tenancyv1alpha1.ComponentRollout, all []tenancyv1alpha1.ComponentRollout) []Chooser {
	var higher []Chooser
	for i := range all {
		other := &all[i]
		if other.Spec.Component != ro.Spec.Component || Compare(other, ro) <= 0 {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(&other.Spec.Selector)
		if err != nil {
			selector = labels.Nothing()
		}
		higher = append(higher, Chooser{Rollout: other, Selector: selector})
	}
	return higher
}

// Takes reports whether ro plans t into its waves: it follows ro, and no rollout that ranks
// higher (higher, from Higher) chooses it. A tenant that a rollout of a higher version chooses
// is that rollout's: ro finishes what it planned and takes no more of them, rather than move
// them twice.
func Takes(ro *tenancyv1alpha1.ComponentRollout, selector labels.Selector, higher []Chooser, t *tenancyv1alpha1.Tenant) bool {
	return Follows(ro, selector, t) && TakenBy(higher, t) == nil
}

// TakenBy is the first of higher that t follows, or nil.
func TakenBy(higher []Chooser, t *tenancyv1alpha1.Tenant) *tenancyv1alpha1.ComponentRollout {
	for _, h := range higher {
		if Follows(h.Rollout, h.Selector, t) {
			return h.Rollout
		}
	}
	return nil
}
