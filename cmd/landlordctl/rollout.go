package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

var (
	componentName    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	componentVersion = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// rolloutOptions are the flags of `rollout`: they describe one ComponentRollout, created in each
// context in turn.
type rolloutOptions struct {
	component   string
	version     string
	selector    string
	name        string
	canaries    []string
	batch       string
	pause       time.Duration
	maxFailures int
	timeout     time.Duration
	rollback    bool
	contexts    []string
	dryRun      bool
	noWait      bool

	// Flags of earlier releases, kept so that scripts get a clear answer: --server-side is what
	// every rollout is now; --tenants, --force and --output have no ComponentRollout equivalent.
	serverSide bool
	tenants    []string
	force      bool
	output     string

	// timeoutSet is whether --timeout was given: without it the rollout leaves the progress
	// deadline to the operator's default, as a rollout declared in Git without one does.
	timeoutSet bool
}

func newRolloutCommand(root *rootOptions) *cobra.Command {
	o := &rolloutOptions{}
	cmd := &cobra.Command{
		Use:   "rollout --component NAME --version V",
		Short: "Move one component of many tenants to a version, wave by wave, through a ComponentRollout.",
		Long: `Move one component of the tenants a label selector chooses (--selector; every tenant without it)
to a version, by creating a ComponentRollout that the operator runs, and follow it wave by wave
until it is done.

A ComponentRollout only moves components that set followRollouts
(spec.components[].followRollouts: true), of Active tenants that are not suspended, and never
writes a tenant's spec: the version a tenant runs is in its status, which "get tenants" shows.
A pinned component (without followRollouts) is never moved; change its version where the
tenant's spec is kept (in Git). Of the rollouts that reach a tenant the highest version wins,
and none moves a tenant down but a rollback (--rollback).

The operator plans the waves (the --canaries first, then batches of --batch, by default 10% of
the tenants chosen) and starts each once the last is done, after --pause. A tenant fails when it
stalls after its wave started, or does not run the version Ready within --timeout; more than
--max-failures failed tenants stop the rollout until enough of them recover. The rollout carries
on when the command or the operator stops: "rollout status NAME" follows it again, "rollout halt
NAME" and "rollout resume NAME" set its spec.halted. Run again, the command follows the
ComponentRollout of that name if it has the same spec, and refuses one with another spec.

--context may be repeated: the rollout is created in each context in turn, the next once the
last is done, and one that stalls stops the rest. --dry-run has the API server validate the
ComponentRollout, shows the waves the operator would plan now and the tenants it would leave
alone and why (by the operator's own rules), and changes nothing.`,
		Example: `  landlordctl rollout --component web --version 1.2.0 --selector plan=trial --batch 25% --dry-run
  landlordctl rollout --component web --version 1.2.0 --selector plan=trial --batch 25% --canaries acme-internal
  landlordctl rollout --component api --version 2.0.1 --context eu-1 --context us-1 --max-failures 2
  landlordctl rollout --component web --version 1.1.0 --rollback --name web-1.1.0-rollback
  landlordctl rollout status web-1.2.0
  landlordctl rollout halt web-1.2.0`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.timeoutSet = cmd.Flags().Changed("timeout")
			return runRollout(cmd.Context(), root, o)
		},
	}
	cmd.AddCommand(newRolloutHaltCommand(root), newRolloutResumeCommand(root), newRolloutStatusCommand(root))
	f := cmd.Flags()
	f.StringVar(&o.component, "component", "", "Component to roll out (required).")
	f.StringVar(&o.version, "version", "", "Version to move the component to (required).")
	f.StringVarP(&o.selector, "selector", "l", "", "Only tenants whose labels match this selector, e.g. plan=trial (spec.selector).")
	f.StringVar(&o.name, "name", "", "The ComponentRollout's name (default <component>-<version>).")
	f.StringSliceVar(&o.canaries, "canaries", nil, "Tenants moved first, in a wave of their own (comma separated; spec.strategy.canaries).")
	f.StringVar(&o.batch, "batch", "", "Tenants per wave: a number, or a percentage of the tenants chosen, rounded up (spec.strategy.batchSize; default 10%).")
	f.DurationVar(&o.pause, "pause", 0, "How long to wait after a wave is done before the next starts (spec.strategy.pauseBetweenWaves).")
	f.IntVar(&o.maxFailures, "max-failures", 0, "Failed tenants tolerated before the rollout stops, in each context (spec.strategy.maxFailures).")
	f.DurationVar(&o.timeout, "timeout", rollout.DefaultProgressDeadline, "How long each tenant may take, from its wave's start, to run the version Ready (spec.strategy.progressDeadline).")
	f.BoolVar(&o.rollback, "rollback", false, "A rollback, which may move tenants down to --version (spec.rollback); delete the rollout of the version rolled back from first.")
	f.StringArrayVar(&o.contexts, "context", nil, "Kubeconfig context to roll out to (repeatable, in order; default: the current context).")
	f.BoolVar(&o.dryRun, "dry-run", false, "Validate the ComponentRollout, show the waves the operator would plan, and change nothing.")
	f.BoolVar(&o.noWait, "no-wait", false, "Create the ComponentRollout in each context and return.")

	f.BoolVar(&o.serverSide, "server-side", false, "Every rollout is a ComponentRollout the operator runs: this flag does nothing.")
	_ = f.MarkDeprecated("server-side", "every rollout is now a ComponentRollout the operator runs; the flag does nothing and will be removed")
	f.StringSliceVar(&o.tenants, "tenants", nil, "Not supported: a ComponentRollout chooses tenants by --selector.")
	f.BoolVar(&o.force, "force", false, "Not supported: a ComponentRollout never writes a tenant's spec.")
	f.StringVarP(&o.output, "output", "o", "", "Not supported: read the ComponentRollout with kubectl get componentrollout NAME -o yaml.")
	for _, name := range []string{"tenants", "force", "output"} {
		_ = f.MarkHidden(name)
	}
	_ = cmd.MarkFlagRequired("component")
	_ = cmd.MarkFlagRequired("version")
	_ = cmd.RegisterFlagCompletionFunc("component", completeComponents(root))
	_ = cmd.RegisterFlagCompletionFunc("version", completeVersions(root))
	_ = cmd.RegisterFlagCompletionFunc("canaries", completeNamesOf(root, kindOf("Tenant"), 0))
	_ = cmd.RegisterFlagCompletionFunc("context", completeContexts(root))
	return cmd
}

// validate refuses flags that cannot make a ComponentRollout before any cluster is read, with
// what to do instead.
func (o *rolloutOptions) validate() error {
	switch {
	case len(o.tenants) > 0:
		label := "rollout=" + o.component + "-" + o.version
		return fmt.Errorf("--tenants: a ComponentRollout chooses its tenants by label, not by name: label them "+
			"(kubectl label tenant %s %s) and use --selector %s, or name them with --canaries to move them first",
			strings.Join(o.tenants, " "), label, label)
	case o.force:
		return errors.New("--force: a ComponentRollout never writes a tenant's spec, so there is no version to take over: " +
			"it moves the components that set followRollouts, and a pinned component's version is changed where its spec is kept (in Git)")
	case o.output != "":
		return errors.New("--output: the rollout is a ComponentRollout: read it with landlordctl get rollout NAME -o yaml (kubectl get componentrollout NAME -o yaml)")
	case !componentName.MatchString(o.component) || len(o.component) > 40:
		return fmt.Errorf("--component %q: want a DNS label (lowercase letters, digits and '-')", o.component)
	case !componentVersion.MatchString(o.version) || len(o.version) > 63:
		return fmt.Errorf("--version %q: want lowercase letters, digits, '-' and '.', starting and ending with a letter or digit", o.version)
	case o.maxFailures < 0:
		return errors.New("--max-failures must not be negative")
	case o.timeout <= 0:
		return errors.New("--timeout must be positive")
	case o.pause < 0:
		return errors.New("--pause must not be negative")
	}
	_, err := parseBatch(o.batch)
	return err
}

// parseBatch is --batch as spec.strategy.batchSize: nil when not given (the operator's default,
// 10%), else a number of at least 1 or a percentage from 1% to 100%, as the API validates it.
func parseBatch(s string) (*intstr.IntOrString, error) {
	if s == "" {
		return nil, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 || strconv.Itoa(n) != p {
			return nil, fmt.Errorf("--batch %q: want a percentage from 1%% to 100%%", s)
		}
		v := intstr.FromString(s)
		return &v, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1<<30 {
		return nil, fmt.Errorf("--batch %q: want a number of tenants (at least 1) or a percentage such as 25%%", s)
	}
	v := intstr.FromInt32(int32(n))
	return &v, nil
}

// runRollout creates the ComponentRollout in each context in turn and, unless --no-wait, follows
// it wave by wave until it is done; one that stalls stops the contexts after it.
func runRollout(ctx context.Context, root *rootOptions, o *rolloutOptions) error {
	if err := o.validate(); err != nil {
		return asUsage(err)
	}
	selector, err := metav1.ParseToLabelSelector(o.selector)
	if err != nil {
		return usageErrorf("--selector: %w", err)
	}
	ro := rolloutObject(o, *selector)
	targets, err := clusters(root, o.contexts)
	if err != nil {
		return err
	}
	for i, cl := range targets {
		if err := createAndFollow(ctx, root.out, cl, ro.DeepCopy(), o); err != nil {
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

// rolloutObject is the ComponentRollout the flags describe. What the flags leave out is left out
// of the spec too, for the operator's defaults, as in a rollout declared in Git.
func rolloutObject(o *rolloutOptions, selector metav1.LabelSelector) *tenancyv1alpha1.ComponentRollout {
	name := o.name
	if name == "" {
		name = o.component + "-" + o.version
	}
	batch, _ := parseBatch(o.batch)
	ro := &tenancyv1alpha1.ComponentRollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: "ComponentRollout"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{
			Component: o.component, Version: o.version, Selector: selector, Rollback: o.rollback,
			Strategy: tenancyv1alpha1.RolloutStrategy{Canaries: o.canaries, BatchSize: batch, MaxFailures: int32(o.maxFailures)},
		},
	}
	if o.timeoutSet {
		ro.Spec.Strategy.ProgressDeadline = &metav1.Duration{Duration: o.timeout}
	}
	if o.pause > 0 {
		ro.Spec.Strategy.PauseBetweenWaves = &metav1.Duration{Duration: o.pause}
	}
	return ro
}

// createAndFollow creates the rollout in one context (with --dry-run, validates it and shows its
// plan) and follows it. One that exists already is followed as it is when it has the same spec:
// rerunning the command after an interruption picks up where it was.
func createAndFollow(ctx context.Context, out io.Writer, cl cluster, ro *tenancyv1alpha1.ComponentRollout, o *rolloutOptions) error {
	opts := []client.CreateOption{client.FieldOwner(fieldManager)}
	if o.dryRun {
		opts = append(opts, client.DryRunAll)
	}
	switch err := cl.client.Create(ctx, ro, opts...); {
	case apierrors.IsAlreadyExists(err):
		have := &tenancyv1alpha1.ComponentRollout{}
		if err := cl.client.Get(ctx, client.ObjectKeyFromObject(ro), have); err != nil {
			return err
		}
		// Only the same rollout is followed: one that differs in what it moves, or how, would
		// report done for tenants this command was never asked about, or not for those it was.
		if !sameRollout(ro.Spec, have.Spec) {
			return fmt.Errorf("ComponentRollout %s exists with another spec (%s → %s, selector %s, strategy %s): choose another --name",
				ro.Name, have.Spec.Component, have.Spec.Version, orNone(metav1.FormatLabelSelector(&have.Spec.Selector)), strategyOf(have.Spec.Strategy))
		}
		if o.dryRun {
			fmt.Fprintf(out, "context %s: ComponentRollout %s exists as described (%d of %d waves released); nothing was changed\n",
				cl.name, ro.Name, have.Status.Released, len(have.Status.Waves))
			return nil
		}
		fmt.Fprintf(out, "context %s: ComponentRollout %s exists; following it\n", cl.name, ro.Name)
	case err != nil:
		return fmt.Errorf("creating ComponentRollout %s: %w", ro.Name, err)
	case o.dryRun:
		p, err := readPreview(ctx, cl.client, ro)
		if err != nil {
			return err
		}
		p.print(out, cl.name, ro)
		return nil
	default:
		fmt.Fprintf(out, "context %s: ComponentRollout %s created (%s → %s)\n", cl.name, ro.Name, ro.Spec.Component, ro.Spec.Version)
	}
	if o.noWait {
		return nil
	}
	return followRollout(ctx, out, cl, ro.Name)
}

// sameRollout reports whether two specs describe the same rollout, whatever halts it and
// whether the operator's defaults are spelled out.
func sameRollout(a, b tenancyv1alpha1.ComponentRolloutSpec) bool {
	normal := func(s tenancyv1alpha1.ComponentRolloutSpec) tenancyv1alpha1.ComponentRolloutSpec {
		s = *s.DeepCopy()
		s.Halted = false
		if s.Strategy.BatchSize == nil {
			s.Strategy.BatchSize = ptr.To(intstr.FromString(rollout.DefaultBatchSize))
		}
		s.Strategy.ProgressDeadline = &metav1.Duration{Duration: rollout.ProgressDeadline(&tenancyv1alpha1.ComponentRollout{Spec: s})}
		if s.Strategy.PauseBetweenWaves != nil && s.Strategy.PauseBetweenWaves.Duration == 0 {
			s.Strategy.PauseBetweenWaves = nil
		}
		return s
	}
	return equality.Semantic.DeepEqual(normal(a), normal(b))
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
