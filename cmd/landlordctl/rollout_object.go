package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// serverSideOptions are the rollout flags of a rollout the operator runs (--server-side).
type serverSideOptions struct {
	enabled  bool
	name     string
	canaries []string
	pause    time.Duration
	noWait   bool
	rollback bool
	// batchSet is whether --batch was given: a ComponentRollout's own default (10%) keeps its
	// status small, where the client-side rollout's (1) would plan a wave per tenant.
	batchSet bool
}

// runServerSideRollout creates a ComponentRollout in each context in turn and, unless --no-wait,
// follows it wave by wave until it is done; a rollout that stalls stops the contexts after it.
func runServerSideRollout(ctx context.Context, root *rootOptions, o *rolloutOptions) error {
	switch {
	case len(o.tenants) > 0:
		return errors.New("--tenants: a ComponentRollout chooses its tenants by --selector; name the tenants to move first with --canaries")
	case o.force:
		return errors.New("--force: a ComponentRollout never writes a tenant's spec, so there is no version to take over; only components with followRollouts are moved")
	case o.output != "":
		return errors.New("--output: with --server-side, read the rollout with kubectl get componentrollout NAME -o yaml")
	}
	if _, err := parseBatch(o.batch); err != nil {
		return err
	}
	selector, err := metav1.ParseToLabelSelector(o.selector)
	if err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	targets, err := clusters(root, o.contexts)
	if err != nil {
		return err
	}
	ro := rolloutObject(o, *selector)
	for i, cl := range targets {
		err := createAndFollow(ctx, root.out, cl, ro.DeepCopy(), o)
		if err != nil {
			if rest := targets[i+1:]; len(rest) > 0 {
				names := make([]string, len(rest))
				for j, c := range rest {
					names[j] = c.name
				}
				fmt.Fprintf(root.out, "contexts not started: %s\n", strings.Join(names, ", "))
			}
			return fmt.Errorf("context %s: %w", cl.name, err)
		}
	}
	return nil
}

// rolloutObject is the ComponentRollout the flags describe.
func rolloutObject(o *rolloutOptions, selector metav1.LabelSelector) *tenancyv1alpha1.ComponentRollout {
	name := o.serverSide.name
	if name == "" {
		name = o.component + "-" + o.version
	}
	var batch *intstr.IntOrString
	if o.serverSide.batchSet {
		b := intstr.Parse(o.batch)
		batch = &b
	}
	ro := &tenancyv1alpha1.ComponentRollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: "ComponentRollout"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{
			Component: o.component, Version: o.version, Selector: selector, Rollback: o.serverSide.rollback,
			Strategy: tenancyv1alpha1.RolloutStrategy{
				Canaries: o.serverSide.canaries, BatchSize: batch, MaxFailures: int32(o.maxFailures),
				ProgressDeadline: &metav1.Duration{Duration: o.timeout},
			},
		},
	}
	if o.serverSide.pause > 0 {
		ro.Spec.Strategy.PauseBetweenWaves = &metav1.Duration{Duration: o.serverSide.pause}
	}
	return ro
}

// createAndFollow creates the rollout in one context (a dry run with --dry-run) and follows it.
// One that exists already is followed as it is, when it moves the same component to the same
// version: rerunning the command after an interruption picks up where it was.
func createAndFollow(ctx context.Context, out io.Writer, cl cluster, ro *tenancyv1alpha1.ComponentRollout, o *rolloutOptions) error {
	var opts []client.CreateOption
	if o.dryRun {
		opts = append(opts, client.DryRunAll)
	}
	opts = append(opts, client.FieldOwner(fieldManager))
	switch err := cl.client.Create(ctx, ro, opts...); {
	case apierrors.IsAlreadyExists(err):
		have := &tenancyv1alpha1.ComponentRollout{}
		if err := cl.client.Get(ctx, client.ObjectKeyFromObject(ro), have); err != nil {
			return err
		}
		// Only the same rollout is followed: one that differs in what it moves, or how, would
		// report done for tenants this command was never asked about, or not for those it was.
		want, got := ro.Spec, have.Spec
		want.Halted, got.Halted = false, false
		if !equality.Semantic.DeepEqual(want, got) {
			return fmt.Errorf("ComponentRollout %s exists with another spec (%s → %s, selector %s, strategy %s): choose another --name",
				ro.Name, have.Spec.Component, have.Spec.Version, metav1.FormatLabelSelector(&have.Spec.Selector), strategyOf(have.Spec.Strategy))
		}
		if o.dryRun {
			fmt.Fprintf(out, "context %s: ComponentRollout %s exists as described; nothing was changed\n", cl.name, ro.Name)
			return nil
		}
		fmt.Fprintf(out, "context %s: ComponentRollout %s exists; following it\n", cl.name, ro.Name)
	case err != nil:
		return fmt.Errorf("creating ComponentRollout %s: %w", ro.Name, err)
	case o.dryRun:
		fmt.Fprintf(out, "context %s: ComponentRollout %s (%s → %s) would be created; nothing was changed\n", cl.name, ro.Name, ro.Spec.Component, ro.Spec.Version)
		return nil
	default:
		fmt.Fprintf(out, "context %s: ComponentRollout %s created (%s → %s)\n", cl.name, ro.Name, ro.Spec.Component, ro.Spec.Version)
	}
	if o.serverSide.noWait {
		return nil
	}
	return followRollout(ctx, out, cl, ro.Name)
}

// strategyOf sums a strategy up for a message.
func strategyOf(s tenancyv1alpha1.RolloutStrategy) string {
	parts := []string{}
	if s.BatchSize != nil {
		parts = append(parts, "batch "+s.BatchSize.String())
	}
	if len(s.Canaries) > 0 {
		parts = append(parts, "canaries "+strings.Join(s.Canaries, ","))
	}
	if s.PauseBetweenWaves != nil {
		parts = append(parts, "pause "+s.PauseBetweenWaves.Duration.String())
	}
	parts = append(parts, fmt.Sprintf("max failures %d", s.MaxFailures))
	if s.ProgressDeadline != nil {
		parts = append(parts, "deadline "+s.ProgressDeadline.Duration.String())
	}
	return strings.Join(parts, ", ")
}

// followRollout watches a ComponentRollout and prints each wave as it starts and ends, until the
// rollout is done (nil) or stalls (an error naming why). Driven by a watch: nothing is polled.
func followRollout(ctx context.Context, out io.Writer, cl cluster, name string) error {
	prefix := fmt.Sprintf("context %s: %s", cl.name, name)
	// Lines already printed: the watch may hand over an earlier state of the rollout after the
	// list showed a later one, and nothing is said twice.
	printed := map[string]bool{}
	var result error
	seen := func(obj runtime.Object, deleted bool) (bool, error) {
		ro, ok := obj.(*tenancyv1alpha1.ComponentRollout)
		if !ok || ro.Name != name {
			return false, nil
		}
		if deleted {
			return false, fmt.Errorf("ComponentRollout %s was deleted", name)
		}
		printWaves(out, prefix, printed, ro)
		if ro.Status.ObservedGeneration != ro.Generation {
			return false, nil
		}
		ready := meta.FindStatusCondition(ro.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		stalled := meta.FindStatusCondition(ro.Status.Conditions, tenancyv1alpha1.StalledCondition)
		switch {
		case ready != nil && ready.Status == metav1.ConditionTrue:
			fmt.Fprintf(out, "%s: done: %s\n", prefix, ready.Message)
			return true, nil
		case stalled != nil && stalled.Status == metav1.ConditionTrue:
			result = fmt.Errorf("ComponentRollout %s stalled: %s: %s", name, stalled.Reason, stalled.Message)
			return true, nil
		case ready != nil && ready.Reason == tenancyv1alpha1.ReasonHaltedBySpec:
			result = fmt.Errorf("ComponentRollout %s is halted (spec.halted): landlordctl rollout resume %s", name, name)
			return true, nil
		}
		return false, nil
	}
	scope := watchScope{list: &tenancyv1alpha1.ComponentRolloutList{}, fields: fields.OneTermEqualSelector("metadata.name", name)}
	settle := func(store cache.Store) (bool, error) {
		if len(store.List()) == 0 {
			return false, fmt.Errorf("ComponentRollout %s not found", name)
		}
		return false, nil
	}
	if err := watchUntil(ctx, cl.client, scope, &tenancyv1alpha1.ComponentRollout{}, seen, settle); err != nil {
		return err
	}
	return result
}

// printWaves prints each wave of the rollout that started, failed a tenant or ended, unless
// printed already.
func printWaves(out io.Writer, prefix string, printed map[string]bool, ro *tenancyv1alpha1.ComponentRollout) {
	say := func(format string, args ...any) {
		if line := fmt.Sprintf(format, args...); !printed[line] {
			printed[line] = true
			fmt.Fprintln(out, line)
		}
	}
	total := len(ro.Status.Waves)
	for i, w := range ro.Status.Waves {
		if w.StartedAt != nil {
			say("%s: wave %d/%d started: %s", prefix, i+1, total, strings.Join(w.Tenants, ", "))
		}
		for _, f := range w.Failed {
			say("%s: wave %d/%d: %s failed: %s: %s", prefix, i+1, total, f.Tenant, f.Reason, f.Message)
		}
		if w.CompletedAt != nil {
			say("%s: wave %d/%d done: %d done, %d failed, %d skipped", prefix, i+1, total, w.Done, len(w.Failed), w.Skipped)
		}
	}
}

// newRolloutHaltCommand and newRolloutResumeCommand set a ComponentRollout's spec.halted.
func newRolloutHaltCommand(root *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "halt NAME",
		Short: "Stop a ComponentRollout from starting another wave.",
		Long: `Set the ComponentRollout's spec.halted. No wave starts until it is resumed; the tenants already
moved stay moved. A rollout applied from Git keeps this as long as its manifest does not set
spec.halted; if it does, halt it in Git.`,
		Example: `  landlordctl rollout halt web-1.3.0`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setHalted(cmd.Context(), root, args[0], true)
		},
	}
}

func newRolloutResumeCommand(root *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "resume NAME",
		Short:   "Let a halted ComponentRollout start its next wave.",
		Example: `  landlordctl rollout resume web-1.3.0`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setHalted(cmd.Context(), root, args[0], false)
		},
	}
}

func newRolloutStatusCommand(root *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status NAME",
		Short: "Follow a ComponentRollout wave by wave until it is done or stalls.",
		Example: `  landlordctl rollout status web-1.3.0
  landlordctl rollout status web-1.3.0 --context eu-1`,
		Args: cobra.ExactArgs(1),
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
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ComponentRollout %s not found", name)
		}
		return err
	}
	// Read before the write, which takes the field over: a GitOps tool that applies
	// spec.halted takes it back, with its own value, at its next run.
	var appliers []string
	for _, e := range ro.ManagedFields {
		if e.Manager != fieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.FieldsV1 != nil &&
			strings.Contains(string(e.FieldsV1.Raw), `"f:halted"`) {
			appliers = append(appliers, e.Manager)
		}
	}
	patch := fmt.Appendf(nil, `{"spec":{"halted":%t}}`, halted)
	if err := c.Patch(ctx, ro, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldManager)); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ComponentRollout %s not found", name)
		}
		return err
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
