package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// followRollout watches a ComponentRollout and prints each wave as it starts and ends, until the
// rollout is done (nil) or stalls (an error naming why); with each wave, its tenants waiting for
// their maintenance window and how many of them migrate. Driven by watches, of the rollout and of
// the tenants its selector chooses: nothing is polled.
func followRollout(ctx context.Context, out io.Writer, cl cluster, name string) error {
	ctx, cancel := context.WithCancel(ctx)
	f := newRolloutFollower(out, fmt.Sprintf("context %s: %s", cl.name, name))
	// The tenants' watch ends with the rollout's, before the command goes on.
	defer f.wait()
	defer cancel()
	var result error
	seen := func(obj runtime.Object, deleted bool) (bool, error) {
		ro, ok := obj.(*tenancyv1alpha1.ComponentRollout)
		if !ok || ro.Name != name {
			return false, nil
		}
		if deleted {
			return false, fmt.Errorf("ComponentRollout %s was deleted", name)
		}
		f.rolloutSeen(ro)
		if ro.Status.ObservedGeneration != ro.Generation {
			f.followTenants(ctx, cl.client, ro)
			return false, nil
		}
		ready := meta.FindStatusCondition(ro.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		stalled := meta.FindStatusCondition(ro.Status.Conditions, tenancyv1alpha1.StalledCondition)
		switch {
		case ready != nil && ready.Status == metav1.ConditionTrue:
			f.report("%s: done: %s", f.prefix, ready.Message)
			return true, nil
		case stalled != nil && stalled.Status == metav1.ConditionTrue:
			result = fmt.Errorf("ComponentRollout %s stalled: %s: %s", name, stalled.Reason, stalled.Message)
			return true, nil
		case ready != nil && ready.Reason == tenancyv1alpha1.ReasonHaltedBySpec:
			result = fmt.Errorf("ComponentRollout %s is halted (spec.halted): landlordctl rollout resume %s", name, name)
			return true, nil
		}
		f.followTenants(ctx, cl.client, ro)
		return false, nil
	}
	scope := watchScope{list: &tenancyv1alpha1.ComponentRolloutList{}, fields: fields.OneTermEqualSelector("metadata.name", name)}
	settle := func(store cache.Store) (bool, error) {
		if len(store.List()) == 0 {
			return false, kindOf("ComponentRollout").notFound("", name)
		}
		return false, nil
	}
	if err := watchUntil(ctx, cl.client, scope, &tenancyv1alpha1.ComponentRollout{}, seen, settle); err != nil {
		return err
	}
	return result
}

// newRolloutHaltCommand and newRolloutResumeCommand set a ComponentRollout's spec.halted.
func newRolloutHaltCommand(root *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "halt NAME",
		Short: "Stop a ComponentRollout from starting another wave.",
		Long: `Set the ComponentRollout's spec.halted. No wave starts until it is resumed; the tenants already
moved stay moved. A rollout applied from Git keeps this as long as its manifest does not set
spec.halted; if it does, halt it in Git.`,
		Example:           `  landlordctl rollout halt web-1.3.0`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("ComponentRollout"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setHalted(cmd.Context(), root, args[0], true)
		},
	}
}

func newRolloutResumeCommand(root *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:               "resume NAME",
		Short:             "Let a halted ComponentRollout start its next wave.",
		Example:           `  landlordctl rollout resume web-1.3.0`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("ComponentRollout"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setHalted(cmd.Context(), root, args[0], false)
		},
	}
}

func newRolloutStatusCommand(root *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status NAME",
		Short: "Follow a ComponentRollout wave by wave until it is done or stalls.",
		Long: `Follow a ComponentRollout wave by wave until it is done, stalls or is halted (which fail the command).

For each wave released it says when it started, its tenants waiting for their maintenance window
and when each window opens (the first 50 by name, as the rollout names them), each tenant that
failed and why, how many of its tenants migrate and how many failed migrating (MigrationFailed),
again whenever those counts change, and when the wave is done. A tenant migrates while its
ComponentsReady reason is Migrating or its migration to the rollout's version runs; the tenants
are read by one list and a watch of those the rollout's selector chooses, as the rollout itself
is: nothing is polled.`,
		Example: `  landlordctl rollout status web-1.3.0
  landlordctl rollout status web-1.3.0 --context eu-1`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("ComponentRollout"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			targets, err := clusters(root, nil)
			if err != nil {
				return err
			}
			return followRollout(cmd.Context(), root.out, targets[0], args[0])
		},
	}
}

func setHalted(ctx context.Context, root *rootOptions, name string, halted bool) error {
	c, err := root.client()
	if err != nil {
		return err
	}
	ro := &tenancyv1alpha1.ComponentRollout{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, ro); err != nil {
		return kindOf("ComponentRollout").wrapNotFound("", name, err)
	}
	// Read before the write, which takes the field over: a GitOps tool that applies
	// spec.halted takes it back, with its own value, at its next run.
	var appliers []string
	for _, e := range ro.ManagedFields {
		if e.Manager != fieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.FieldsV1 != nil &&
			strings.Contains(e.FieldsV1.GetRawString(), `"f:halted"`) {
			appliers = append(appliers, e.Manager)
		}
	}
	patch := fmt.Appendf(nil, `{"spec":{"halted":%t}}`, halted)
	if err := c.Patch(ctx, ro, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldManager)); err != nil {
		return kindOf("ComponentRollout").wrapNotFound("", name, err)
	}
	verb := "resumed"
	if halted {
		verb = "halted"
	}
	fmt.Fprintf(root.out, "componentrollout/%s %s\n", name, verb)
	for _, m := range appliers {
		fmt.Fprintf(root.out, "warning: %s also sets spec.halted of componentrollout/%s, and may set it back: halt or resume it where %s's manifests are (in Git)\n", m, name, m)
	}
	return nil
}
