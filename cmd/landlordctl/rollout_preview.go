package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

// preview is what the operator would plan for a new rollout if it were created now, by its own
// rules (internal/rollout): the waves, the tenants of the selector that run the component and
// that it leaves alone, and why.
type preview struct {
	waves [][]string
	// skipped are the tenants the rollout does not plan: not Active, suspended, pinned, or
	// taken by a rollout that ranks higher.
	skipped []outcome
	// ahead are planned tenants that run a higher version, where the rollout leaves them.
	ahead []outcome
	// already counts planned tenants that run the version: done as soon as their wave starts.
	already int
}

// outcome is a tenant and why the rollout does not move it.
type outcome struct {
	tenant string
	reason string
}

func (p preview) tenants() int {
	n := 0
	for _, w := range p.waves {
		n += len(w)
	}
	return n
}

// readPreview reads the tenants the rollout's selector chooses and the other rollouts, and
// previews the rollout against them.
func readPreview(ctx context.Context, c client.Client, ro *tenancyv1alpha1.ComponentRollout) (preview, error) {
	selector, err := metav1.LabelSelectorAsSelector(&ro.Spec.Selector)
	if err != nil {
		return preview{}, fmt.Errorf("spec.selector: %w", err)
	}
	tenants := &tenancyv1alpha1.TenantList{}
	if err := c.List(ctx, tenants, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return preview{}, fmt.Errorf("listing tenants: %w", err)
	}
	rollouts := &tenancyv1alpha1.ComponentRolloutList{}
	if err := c.List(ctx, rollouts); err != nil {
		return preview{}, fmt.Errorf("listing component rollouts: %w", err)
	}
	return previewRollout(ro, selector, tenants.Items, rollouts.Items, time.Now()), nil
}

// previewRollout is the plan the operator would make for ro, created at now, among the other
// rollouts. Tenants the selector does not choose, or that do not run the component, are left
// out of it: they are none of the rollout's business.
func previewRollout(ro *tenancyv1alpha1.ComponentRollout, selector labels.Selector, tenants []tenancyv1alpha1.Tenant,
	others []tenancyv1alpha1.ComponentRollout, now time.Time) preview {
	ro = ro.DeepCopy()
	// Created now, it is the newest of its version.
	ro.CreationTimestamp = metav1.NewTime(now)
	others = slices.DeleteFunc(slices.Clone(others), func(o tenancyv1alpha1.ComponentRollout) bool { return o.Name == ro.Name })
	tenants = slices.DeleteFunc(slices.Clone(tenants), func(t tenancyv1alpha1.Tenant) bool {
		return !selector.Matches(labels.Set(t.Labels)) ||
			!slices.ContainsFunc(t.Spec.Components, func(c tenancyv1alpha1.Component) bool { return c.Name == ro.Spec.Component })
	})
	var p preview
	var chosen []string
	for _, c := range rollout.Choose(ro, selector, rollout.Higher(ro, others), tenants) {
		switch {
		case c.Why != "":
			p.skipped = append(p.skipped, outcome{c.Tenant, c.Why})
			continue
		case c.Running == ro.Spec.Version:
			p.already++
		case c.Stays:
			p.ahead = append(p.ahead, outcome{c.Tenant, fmt.Sprintf("runs %s, a higher version, and stays there (only a rollback moves it down)", c.Running)})
		}
		chosen = append(chosen, c.Tenant)
	}
	for _, w := range rollout.PlanWaves(ro, nil, chosen, now, true) {
		p.waves = append(p.waves, w.Tenants)
	}
	byName := func(a, b outcome) int { return strings.Compare(a.tenant, b.tenant) }
	slices.SortFunc(p.skipped, byName)
	slices.SortFunc(p.ahead, byName)
	return p
}

func (p preview) print(out io.Writer, context string, ro *tenancyv1alpha1.ComponentRollout) {
	fmt.Fprintf(out, "context %s: ComponentRollout %s would move %s to %s: %d tenants in %d waves (dry run)\n",
		context, ro.Name, ro.Spec.Component, ro.Spec.Version, p.tenants(), len(p.waves))
	for i, w := range p.waves {
		fmt.Fprintf(out, "  wave %d/%d: %s\n", i+1, len(p.waves), strings.Join(w, ", "))
	}
	if p.already > 0 {
		fmt.Fprintf(out, "  %d already run %s: done as soon as their wave starts\n", p.already, ro.Spec.Version)
	}
	for _, a := range p.ahead {
		fmt.Fprintf(out, "  ahead %s: %s\n", a.tenant, a.reason)
	}
	for _, s := range p.skipped {
		fmt.Fprintf(out, "  skip %s: %s\n", s.tenant, s.reason)
	}
	fmt.Fprintf(out, "context %s: nothing was changed\n", context)
}
