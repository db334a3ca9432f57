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

// TakenBy is the first of higher that t follows, or nil.
func TakenBy(higher []Chooser, t *tenancyv1alpha1.Tenant) *tenancyv1alpha1.ComponentRollout {
	for _, h := range higher {
		if Follows(h.Rollout, h.Selector, t) {
			return h.Rollout
		}
	}
	return nil
}

// Choice is what a rollout makes of one tenant: planned into its waves (Why empty), or left
// alone and why; and, for a planned tenant, the version it runs and whether the rollout moves it.
type Choice struct {
	Tenant string
	// Why the rollout leaves the tenant alone: Excluded's reason, or the higher rollout that
	// takes it; empty for a planned tenant.
	Why string
	// Running is the version of the component the tenant runs ("" when none yet).
	Running string
	// Stays is a planned tenant that runs a higher version, where the rollout leaves it (only a
	// rollback moves it down).
	Stays bool
}

// Choose is what the rollout makes of each tenant, in the tenants' order: the operator plans the
// tenants it takes, and a preview shows the rest with the reason, by the same rule. A tenant
// that follows ro is planned unless a rollout that ranks higher (higher, from Higher) chooses it:
// that one is the higher rollout's, and ro finishes what it planned and takes no more of them,
// rather than move them twice.
func Choose(ro *tenancyv1alpha1.ComponentRollout, selector labels.Selector, higher []Chooser, tenants []tenancyv1alpha1.Tenant) []Choice {
	out := make([]Choice, 0, len(tenants))
	for i := range tenants {
		t := &tenants[i]
		c := Choice{Tenant: t.Name}
		if c.Why = Excluded(ro, selector, t); c.Why == "" {
			if h := TakenBy(higher, t); h != nil {
				c.Why = "ComponentRollout " + h.Name + " (" + h.Spec.Component + " " + h.Spec.Version + ") ranks higher and takes it"
			}
		}
		if c.Why == "" {
			running, st := Running(t, ro.Spec.Component)
			c.Running = running
			c.Stays = running != ro.Spec.Version && !Moves(ro, running, st)
		}
		out = append(out, c)
	}
	return out
}
