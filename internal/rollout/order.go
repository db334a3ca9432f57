// Package rollout holds the rules of a ComponentRollout, as pure functions of the rollout, the
// tenants and the other rollouts: which rollout wins a tenant, which tenants a rollout moves, in
// which waves, and where each tenant stands. The operator's two reconcilers (the tenant's, which
// moves a tenant, and the rollout's, which counts it) and landlordctl's preview of a rollout use
// the same rules, so they never disagree on a tenant: a rollout that counted a tenant another
// rule never moves would wait on it for nothing.
package rollout

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// CompareVersions orders two versions of a component: -1, 0 or +1. Two semantic versions (an
// optional leading "v") compare by semver precedence, so 1.10.0 is above 1.9.0 and a release
// above its pre-releases. Otherwise, as `sort -V` does, the versions compare run by run: runs of
// digits as numbers (2026.11.10 is above 2026.11.9), other runs as text, digits below letters,
// and a version that is a prefix of the other below it. Versions equal by these rules compare 0.
func CompareVersions(a, b string) int {
	if va, err := version.ParseSemantic(a); err == nil {
		if vb, err := version.ParseSemantic(b); err == nil {
			switch {
			case va.LessThan(vb):
				return -1
			case va.GreaterThan(vb):
				return 1
			}
			return 0
		}
	}
	return compareNatural(strings.TrimPrefix(a, "v"), strings.TrimPrefix(b, "v"))
}

// compareNatural compares a and b run by run, as CompareVersions describes.
func compareNatural(a, b string) int {
	for a != "" && b != "" {
		ra, rb := leadingRun(a), leadingRun(b)
		da, db := isDigit(ra[0]), isDigit(rb[0])
		var c int
		switch {
		case da && db:
			na, nb := strings.TrimLeft(ra, "0"), strings.TrimLeft(rb, "0")
			c = cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb))
		case da:
			c = -1
		case db:
			c = 1
		default:
			c = strings.Compare(ra, rb)
		}
		if c != 0 {
			return c
		}
		a, b = a[len(ra):], b[len(rb):]
	}
	return cmp.Compare(len(a), len(b))
}

// leadingRun is the run of digits, or of anything else, that s starts with.
func leadingRun(s string) string {
	digits := isDigit(s[0])
	i := 1
	for i < len(s) && isDigit(s[i]) == digits {
		i++
	}
	return s[:i]
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Compare orders rollouts of one component, highest first wins: by version
// (CompareVersions), then, for equal versions, by creation, then by name. Creation only breaks
// ties between equal versions, so re-creating an old rollout, or creating two in one second,
// never puts an older version above a newer one.
func Compare(a, b *tenancyv1alpha1.ComponentRollout) int {
	if c := CompareVersions(a.Spec.Version, b.Spec.Version); c != 0 {
		return c
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Running is what the rollout rules take a component of t to run: the version a rollout gave
// it, with that status entry; else its spec's version (and no entry), which it runs or is
// about to.
func Running(t *tenancyv1alpha1.Tenant, component string) (string, *tenancyv1alpha1.ComponentStatus) {
	for i := range t.Status.Components {
		if st := &t.Status.Components[i]; st.Name == component && st.Rollout != "" && st.Version != "" {
			return st.Version, st
		}
	}
	if i := slices.IndexFunc(t.Spec.Components, func(c tenancyv1alpha1.Component) bool { return c.Name == component }); i >= 0 {
		return t.Spec.Components[i].Version, nil
	}
	return "", nil
}

// Moves reports whether ro may move a component that runs the version running (given by
// the rollout st names, when st is not nil) to ro's version. Up, or to an equal version, always.
// Down only when ro is a rollback, and then only from a version that a rollout created no later
// than ro gave (or the spec's): a rollout created after the rollback, deleted later, leaves its
// tenants where they are, as deleting any rollout does. (Creation times are kept to the second:
// a rollback applied in the same second as the rollout it undoes still undoes it.)
func Moves(ro *tenancyv1alpha1.ComponentRollout, running string, st *tenancyv1alpha1.ComponentStatus) bool {
	if CompareVersions(ro.Spec.Version, running) >= 0 {
		return true
	}
	if !ro.Spec.Rollback {
		return false
	}
	return st == nil || st.RolloutCreated == nil || !ro.CreationTimestamp.Before(st.RolloutCreated)
}
