package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

var (
	componentName    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	componentVersion = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

type rolloutOptions struct {
	component   string
	version     string
	selector    string
	tenants     []string
	batch       string
	maxFailures int
	timeout     time.Duration
	contexts    []string
	dryRun      bool
	output      string
	force       bool
	serverSide  serverSideOptions
}

func newRolloutCommand(root *rootOptions) *cobra.Command {
	o := &rolloutOptions{}
	cmd := &cobra.Command{
		Use:   "rollout --component NAME --version V",
		Short: "Move one component of many tenants to a version, batch by batch.",
		Long: `Move one component of the selected tenants (all tenants, --selector, --tenants, or both) to a
version, in batches: each batch is applied, then every tenant of it must report the component at
the version, ready, and the tenant Ready before the next batch starts. A tenant that stalls or
is not Ready within --timeout fails; once more than --max-failures tenants failed, the rollout
stops and reports what succeeded, what failed and why, and what was not started.

Only the component's version is written, with server-side apply under the field manager
landlordctl-rollout-<component>, so rollouts of different components run side by side. A tenant
whose version is owned by another manager (a GitOps controller, the tool that created it) is
refused, since that manager would put its own version back; --force takes the version over. A
suspended tenant is refused too, --force or not: it would report no version until resumed.

Each batch's tenants are watched (not polled) until the operator reports them; while they are
pending, the reasons their Ready conditions give are printed as they change, and each batch
ends with a line of progress. --context may be repeated to roll out to several clusters in
turn; the other connection flags (--kubeconfig, --as, ...) apply to every one of them.

With --server-side, the rollout is a ComponentRollout object that the operator runs: it moves
only components with followRollouts, never writes a tenant's spec, and carries on after the
command or the operator stops. The command creates it in each context in turn (a rerun follows
the one it created) and prints each wave as it starts, fails and ends. "rollout status NAME"
follows an existing one; "rollout halt NAME" and "rollout resume NAME" set its spec.halted.`,
		Example: `  landlordctl rollout --component web --version 1.2.0 --selector plan=trial --batch 25% --server-side
  landlordctl rollout halt web-1.2.0
  landlordctl rollout --component web --version 1.2.0 --selector plan=trial --batch 25% --dry-run
  landlordctl rollout --component web --version 1.2.0 --tenants acme,globex --batch 1
  landlordctl rollout --component api --version 2.0.1 --context eu-1 --context us-1 --max-failures 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.serverSide.enabled {
				o.serverSide.batchSet = cmd.Flags().Changed("batch")
				return runServerSideRollout(cmd.Context(), root, o)
			}
			return runRollout(cmd.Context(), root, o, cmd.ErrOrStderr())
		},
	}
	cmd.AddCommand(newRolloutHaltCommand(root), newRolloutResumeCommand(root), newRolloutStatusCommand(root))
	f := cmd.Flags()
	f.StringVar(&o.component, "component", "", "Component to roll out (required).")
	f.StringVar(&o.version, "version", "", "Version to move the component to (required).")
	f.StringVarP(&o.selector, "selector", "l", "", "Only tenants whose labels match this selector, e.g. plan=trial.")
	f.StringSliceVar(&o.tenants, "tenants", nil, "Only these tenants (comma separated).")
	f.StringVar(&o.batch, "batch", "1", "Tenants per batch: a number, or a percentage of the tenants to change, rounded up")
	f.IntVar(&o.maxFailures, "max-failures", 0, "Failed tenants tolerated before the rollout stops, across all contexts.")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "How long each batch may take to become Ready.")
	f.StringArrayVar(&o.contexts, "context", nil, "Kubeconfig context to roll out to (repeatable, in order; default: the current context).")
	f.BoolVar(&o.dryRun, "dry-run", false, "Print the plan and change nothing.")
	f.BoolVar(&o.force, "force", false, "Take the version over from any other field manager.")
	f.StringVarP(&o.output, "output", "o", "", "Print the outcome as json|yaml on stdout (the progress then goes to stderr).")
	f.BoolVar(&o.serverSide.enabled, "server-side", false, "Create a ComponentRollout that the operator runs, and follow it wave by wave (--timeout is each tenant's progress deadline).")
	f.StringVar(&o.serverSide.name, "name", "", "With --server-side: the ComponentRollout's name (default <component>-<version>).")
	f.StringSliceVar(&o.serverSide.canaries, "canaries", nil, "With --server-side: tenants moved first, in a wave of their own (comma separated).")
	f.DurationVar(&o.serverSide.pause, "pause", 0, "With --server-side: how long to wait between waves.")
	f.BoolVar(&o.serverSide.noWait, "no-wait", false, "With --server-side: create the ComponentRollout and return.")
	f.BoolVar(&o.serverSide.rollback, "rollback", false, "With --server-side: a rollback, which may move tenants down to --version (spec.rollback); delete the rollout of the version rolled back from first.")
	_ = cmd.MarkFlagRequired("component")
	_ = cmd.MarkFlagRequired("version")
	return cmd
}

// batchSize is --batch: a count of tenants, or a percentage of the tenants to change.
type batchSize struct {
	count   int
	percent int
}

func parseBatch(s string) (batchSize, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 {
			return batchSize{}, fmt.Errorf("--batch %q: want a percentage from 1%% to 100%%", s)
		}
		return batchSize{percent: n}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return batchSize{}, fmt.Errorf("--batch %q: want a number of tenants (at least 1) or a percentage such as 25%%", s)
	}
	return batchSize{count: n}, nil
}

// of is the size of each batch when total tenants are to change.
func (b batchSize) of(total int) int {
	if b.percent == 0 {
		return b.count
	}
	return max(1, (total*b.percent+99)/100)
}

// action is what a rollout does with one tenant.
type action int

const (
	actionChange action = iota
	actionSkip
	actionRefuse
)

// verdict is what the rollout will do with a tenant, and why.
type verdict struct {
	action action
	reason string
}

// rolloutFieldManager owns the versions a rollout of component sets. One per component, so that
// a rollout of web and one of api own different fields and never undo each other.
func rolloutFieldManager(component string) string { return "landlordctl-rollout-" + component }

// classify decides whether a tenant takes the version. It is asked once for the plan and again
// just before the tenant's apply, since a tenant may change while earlier batches roll out.
func classify(t *tenancyv1alpha1.Tenant, component, version string, force bool) verdict {
	switch {
	case t.DeletionTimestamp != nil:
		return verdict{actionSkip, "being deleted"}
	case t.Spec.State == tenancyv1alpha1.StatePurged:
		return verdict{actionSkip, "Purged"}
	}
	i := slices.IndexFunc(t.Spec.Components, func(c tenancyv1alpha1.Component) bool { return c.Name == component })
	if i < 0 {
		return verdict{actionSkip, "has no component " + component}
	}
	if t.Spec.Components[i].Version == version {
		return verdict{actionSkip, "already at " + version}
	}
	if t.Spec.Suspend {
		// It would take the version and never report it: the batch would wait its whole
		// timeout. Not even --force: resuming is a decision about the whole tenant.
		return verdict{actionRefuse, fmt.Sprintf("suspended (landlordctl resume %s first)", t.Name)}
	}
	if owners := versionOwners(t, component); len(owners) > 0 && !force {
		return verdict{actionRefuse, managedByMessage(component, owners)}
	}
	return verdict{actionChange, ""}
}

func managedByMessage(component string, managers []string) string {
	return fmt.Sprintf("version of component %s is managed by %s; change it in Git, or use --force to take it over",
		component, strings.Join(managers, ", "))
}

// versionOwners are the field managers other than the component's rollout manager that own the
// version of the tenant's component entry, f:spec/f:components/k:{"name":...}/f:version. Such a
// manager would set its own version again (a GitOps controller on its next sync), so the rollout
// leaves the tenant alone unless told to take the field over.
func versionOwners(t *tenancyv1alpha1.Tenant, component string) []string {
	ours := rolloutFieldManager(component)
	path := fieldpath.MakePathOrDie("spec", "components", fieldpath.KeyByFields("name", component), "version")
	return fieldOwners(t, path, func(mf metav1.ManagedFieldsEntry) bool { return mf.Manager != ours })
}

// fieldOwners are the field managers of the tenant's spec (not of a subresource) that own the
// field at path and that count says count, sorted.
func fieldOwners(t *tenancyv1alpha1.Tenant, path fieldpath.Path, count func(metav1.ManagedFieldsEntry) bool) []string {
	var owners []string
	for _, mf := range t.ManagedFields {
		if mf.Subresource != "" || mf.FieldsV1 == nil || !count(mf) || slices.Contains(owners, mf.Manager) {
			continue
		}
		var owned fieldpath.Set
		if owned.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)) == nil && owned.Has(path) {
			owners = append(owners, mf.Manager)
		}
	}
	slices.Sort(owners)
	return owners
}

// outcome is a tenant and what happened to it, or why nothing did.
type outcome struct {
	tenant string
	reason string
}

// plan is a rollout in one cluster.
type plan struct {
	batches [][]string
	skipped []outcome
	refused []outcome
}

func (p plan) tenants() int {
	n := 0
	for _, b := range p.batches {
		n += len(b)
	}
	return n
}

// planRollout selects the tenants (all, those matching selector, those named, or both), sorted by
// name, and cuts those taking the version into batches.
func planRollout(all []tenancyv1alpha1.Tenant, selector labels.Selector, names []string, o *rolloutOptions, size batchSize) plan {
	byName := map[string]*tenancyv1alpha1.Tenant{}
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
	var p plan
	var selected []*tenancyv1alpha1.Tenant
	if len(names) > 0 {
		for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
			t, ok := byName[n]
			switch {
			case !ok:
				p.skipped = append(p.skipped, outcome{n, "not found"})
			case !selector.Matches(labels.Set(t.Labels)):
				p.skipped = append(p.skipped, outcome{n, "does not match --selector " + selector.String()})
			default:
				selected = append(selected, t)
			}
		}
	} else {
		for i := range all {
			if selector.Matches(labels.Set(all[i].Labels)) {
				selected = append(selected, &all[i])
			}
		}
	}
	slices.SortFunc(selected, func(a, b *tenancyv1alpha1.Tenant) int { return strings.Compare(a.Name, b.Name) })

	var change []string
	for _, t := range selected {
		switch v := classify(t, o.component, o.version, o.force); v.action {
		case actionChange:
			change = append(change, t.Name)
		case actionSkip:
			p.skipped = append(p.skipped, outcome{t.Name, v.reason})
		case actionRefuse:
			p.refused = append(p.refused, outcome{t.Name, v.reason})
		}
	}
	sortOutcomes(p.skipped)
	if len(change) > 0 {
		p.batches = slices.Collect(slices.Chunk(change, size.of(len(change))))
	}
	return p
}

func sortOutcomes(o []outcome) {
	slices.SortStableFunc(o, func(a, b outcome) int { return strings.Compare(a.tenant, b.tenant) })
}

// progressState is where a tenant is after its apply.
type progressState int

const (
	progressWaiting progressState = iota
	progressReady
	progressStalled
)

// progress reads a tenant's status against the generation the rollout's apply produced. kstatus
// judges the tenant as a whole, as Flux's health checks and kubectl wait do: Failed (Stalled) at
// the generation fails it, Current (observed at its latest generation and Ready) lets it pass.
// On top, the operator must have observed the applied generation and report the component at
// the version and ready.
func progress(t *tenancyv1alpha1.Tenant, component, version string, generation int64) (progressState, string) {
	ready := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	// The Ready message is what a person can act on; the rest says which part is missing.
	waiting := func(why string) (progressState, string) {
		if ready != nil && ready.Status != metav1.ConditionTrue {
			why += "; " + conditionMessage(ready)
		}
		return progressWaiting, why
	}
	if t.Status.ObservedGeneration < generation {
		return waiting(fmt.Sprintf("generation %d not observed yet (at %d)", generation, t.Status.ObservedGeneration))
	}
	res, err := kstatusOf(t, "Tenant")
	if err != nil {
		return waiting(err.Error())
	}
	switch res.Status {
	case kstatus.FailedStatus:
		if stalled := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.StalledCondition); stalled != nil {
			return progressStalled, conditionMessage(stalled)
		}
		return progressStalled, res.Message
	case kstatus.TerminatingStatus:
		return progressStalled, "tenant is being deleted"
	}
	i := slices.IndexFunc(t.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool { return c.Name == component })
	switch {
	case i < 0:
		return waiting("component " + component + " not reported yet")
	case t.Status.Components[i].Version != version || !t.Status.Components[i].Ready:
		c := t.Status.Components[i]
		why := fmt.Sprintf("component %s reported at %q, ready=%t", component, c.Version, c.Ready)
		if c.Message != "" {
			why += ": " + c.Message
		}
		return waiting(why)
	case ready == nil:
		// kstatus takes a resource without conditions for Current; Landlord always sets Ready.
		return waiting("no Ready condition yet")
	case ready.Status != metav1.ConditionTrue:
		return progressWaiting, conditionMessage(ready)
	case res.Status != kstatus.CurrentStatus:
		return waiting(fmt.Sprintf("%s: %s", res.Status, res.Message))
	}
	return progressReady, ""
}

func conditionMessage(c *metav1.Condition) string {
	return fmt.Sprintf("%s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
}

// cluster is one kubeconfig context taking part in the rollout.
type cluster struct {
	name   string
	client client.WithWatch
	// host is the API server's URL, which names the cluster whatever a kubeconfig calls it.
	host string
}

// clusters connects to every context before anything changes, so a misspelled last context does
// not leave a fleet half rolled out. No context means the one the flags name.
func clusters(root *rootOptions, contexts []string) ([]cluster, error) {
	if len(contexts) == 0 {
		contexts = []string{""}
	}
	var out []cluster
	for _, name := range contexts {
		restCfg, err := root.restConfigFor(name)
		if err != nil {
			if name != "" {
				return nil, fmt.Errorf("context %s: %w", name, err)
			}
			return nil, err
		}
		if name == "" {
			if name = root.contextName(); name == "" {
				name = restCfg.Host
			}
		}
		c, err := client.NewWithWatch(restCfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
		if err != nil {
			return nil, fmt.Errorf("context %s: %w", name, err)
		}
		out = append(out, cluster{name: name, client: c, host: restCfg.Host})
	}
	return out, nil
}

// rollout is one run of the command, across contexts.
type rollout struct {
	o        *rolloutOptions
	out      io.Writer
	size     batchSize
	selector labels.Selector
	// failed counts failed tenants across contexts, against --max-failures.
	failed  int
	totals  counts
	summary rolloutSummary
}

// rolloutSummary is the outcome of a rollout, as -o json|yaml prints it.
type rolloutSummary struct {
	Component string           `json:"component"`
	Version   string           `json:"version"`
	DryRun    bool             `json:"dryRun,omitempty"`
	Contexts  []contextSummary `json:"contexts"`
	Totals    summaryTotals    `json:"totals"`
}

type contextSummary struct {
	Name       string          `json:"name"`
	Batches    [][]string      `json:"batches"`
	Succeeded  []string        `json:"succeeded,omitempty"`
	Failed     []tenantOutcome `json:"failed,omitempty"`
	Refused    []tenantOutcome `json:"refused,omitempty"`
	Skipped    []tenantOutcome `json:"skipped,omitempty"`
	NotStarted []string        `json:"notStarted,omitempty"`
}

type tenantOutcome struct {
	Tenant string `json:"tenant"`
	Reason string `json:"reason"`
}

type summaryTotals struct {
	Ready      int `json:"ready"`
	Failed     int `json:"failed"`
	Refused    int `json:"refused"`
	NotStarted int `json:"notStarted"`
	Skipped    int `json:"skipped"`
}

func outcomes(o []outcome) []tenantOutcome {
	out := make([]tenantOutcome, 0, len(o))
	for _, x := range o {
		out = append(out, tenantOutcome{Tenant: x.tenant, Reason: x.reason})
	}
	return out
}

type counts struct{ ready, failed, refused, notStarted, skipped int }

func runRollout(ctx context.Context, root *rootOptions, o *rolloutOptions, stderr io.Writer) error {
	switch {
	case o.output != "" && o.output != "json" && o.output != "yaml":
		return fmt.Errorf("--output %q: want json or yaml", o.output)
	case !componentName.MatchString(o.component) || len(o.component) > 40:
		return fmt.Errorf("--component %q: want a DNS label (lowercase letters, digits and '-')", o.component)
	case !componentVersion.MatchString(o.version) || len(o.version) > 63:
		return fmt.Errorf("--version %q: want lowercase letters, digits, '-' and '.', starting and ending with a letter or digit", o.version)
	case o.maxFailures < 0:
		return errors.New("--max-failures must not be negative")
	case o.timeout <= 0:
		return errors.New("--timeout must be positive")
	}
	size, err := parseBatch(o.batch)
	if err != nil {
		return err
	}
	selector, err := labels.Parse(o.selector)
	if err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	targets, err := clusters(root, o.contexts)
	if err != nil {
		return err
	}
	r := &rollout{o: o, out: root.out, size: size, selector: selector}
	if o.output != "" {
		// stdout is for the outcome, that scripts read.
		r.out = stderr
		defer func() {
			r.summary.Component, r.summary.Version, r.summary.DryRun = o.component, o.version, o.dryRun
			t := r.totals
			r.summary.Totals = summaryTotals{Ready: t.ready, Failed: t.failed, Refused: t.refused, NotStarted: t.notStarted, Skipped: t.skipped}
			_ = printData(root.out, o.output, r.summary)
		}()
	}
	var halted error
	for i, cl := range targets {
		if halted = r.cluster(ctx, cl); halted != nil {
			if rest := targets[i+1:]; len(rest) > 0 {
				names := make([]string, len(rest))
				for j, c := range rest {
					names[j] = c.name
				}
				fmt.Fprintf(r.out, "contexts not started: %s\n", strings.Join(names, ", "))
			}
			break
		}
	}
	t := r.totals
	if o.dryRun {
		fmt.Fprintf(r.out, "dry run: %s → %s would change %d tenants (%d refused, %d skipped); nothing was changed\n",
			o.component, o.version, t.notStarted, t.refused, t.skipped)
		return nil
	}
	fmt.Fprintf(r.out, "rollout %s → %s: %d ready, %d failed, %d refused, %d not started, %d skipped\n",
		o.component, o.version, t.ready, t.failed, t.refused, t.notStarted, t.skipped)
	switch {
	case halted != nil:
		return halted
	case t.failed > 0 || t.refused > 0:
		return fmt.Errorf("rollout of %s to %s is incomplete: %d failed, %d refused", o.component, o.version, t.failed, t.refused)
	}
	return nil
}

// cluster rolls out to one context. An error stops the rollout: the context's tenants could not
// be read, failures went over the limit, or the command was interrupted.
func (r *rollout) cluster(ctx context.Context, cl cluster) error {
	tenants, err := r.read(ctx, cl.client)
	if err != nil {
		return fmt.Errorf("context %s: %w", cl.name, err)
	}
	p := planRollout(tenants, r.selector, r.o.tenants, r.o, r.size)
	r.printPlan(cl.name, p)
	r.totals.skipped += len(p.skipped)
	r.totals.refused += len(p.refused)
	if r.o.dryRun {
		r.totals.notStarted += p.tenants()
		r.summary.Contexts = append(r.summary.Contexts, contextSummary{Name: cl.name, Batches: p.batches,
			Skipped: outcomes(p.skipped), Refused: outcomes(p.refused)})
		return nil
	}

	rep := &report{}
	defer r.add(rep)
	defer func() {
		r.summary.Contexts = append(r.summary.Contexts, contextSummary{Name: cl.name, Batches: p.batches,
			Succeeded: rep.succeeded, Failed: outcomes(rep.failed), Refused: outcomes(append(slices.Clone(p.refused), rep.refused...)),
			Skipped: outcomes(append(slices.Clone(p.skipped), rep.skipped...)), NotStarted: rep.notStarted})
	}()
	for i, batch := range p.batches {
		if r.failed > r.o.maxFailures {
			for _, b := range p.batches[i:] {
				rep.notStarted = append(rep.notStarted, b...)
			}
			break
		}
		if err := ctx.Err(); err != nil {
			for _, b := range p.batches[i:] {
				rep.notStarted = append(rep.notStarted, b...)
			}
			rep.print(r.out, cl.name)
			return fmt.Errorf("rollout interrupted in context %s: %w", cl.name, err)
		}
		label := fmt.Sprintf("batch %d/%d", i+1, len(p.batches))
		r.batch(ctx, cl, label, batch, rep)
		done := len(rep.succeeded) + len(rep.failed) + len(rep.refused) + len(rep.skipped)
		fmt.Fprintf(r.out, "%s done in context %s: %d of %d tenants finished (%d ready, %d failed)\n",
			label, cl.name, done, p.tenants(), len(rep.succeeded), len(rep.failed))
	}
	if len(rep.failed)+len(rep.refused)+len(rep.notStarted) > 0 {
		rep.print(r.out, cl.name)
	}
	if len(rep.notStarted) > 0 {
		return fmt.Errorf("rollout halted in context %s: %d tenants failed, more than --max-failures %d",
			cl.name, r.failed, r.o.maxFailures)
	}
	return nil
}

// read returns the named tenants, or those matching the selector. Named tenants are read one by
// one, so that one outside the selector is reported as such rather than as missing.
func (r *rollout) read(ctx context.Context, c client.Client) ([]tenancyv1alpha1.Tenant, error) {
	if len(r.o.tenants) == 0 {
		list := &tenancyv1alpha1.TenantList{}
		if err := c.List(ctx, list, client.MatchingLabelsSelector{Selector: r.selector}); err != nil {
			return nil, fmt.Errorf("listing tenants: %w", err)
		}
		return list.Items, nil
	}
	var tenants []tenancyv1alpha1.Tenant
	for _, name := range r.o.tenants {
		t := tenancyv1alpha1.Tenant{}
		switch err := c.Get(ctx, client.ObjectKey{Name: name}, &t); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading tenant %s: %w", name, err)
		default:
			tenants = append(tenants, t)
		}
	}
	return tenants, nil
}

func (r *rollout) add(rep *report) {
	r.totals.ready += len(rep.succeeded)
	r.totals.failed += len(rep.failed)
	r.totals.refused += len(rep.refused)
	r.totals.skipped += len(rep.skipped)
	r.totals.notStarted += len(rep.notStarted)
}

func (r *rollout) printPlan(context string, p plan) {
	mode := ""
	if r.o.dryRun {
		mode = " (dry run)"
	}
	fmt.Fprintf(r.out, "context %s: %s → %s for %d tenants in %d batches%s\n",
		context, r.o.component, r.o.version, p.tenants(), len(p.batches), mode)
	for i, b := range p.batches {
		fmt.Fprintf(r.out, "  batch %d/%d: %s\n", i+1, len(p.batches), strings.Join(b, ", "))
	}
	for _, s := range p.skipped {
		fmt.Fprintf(r.out, "  skip %s: %s\n", s.tenant, s.reason)
	}
	for _, s := range p.refused {
		fmt.Fprintf(r.out, "  refuse %s: %s\n", s.tenant, s.reason)
	}
}

// report is what happened to the tenants of one context.
type report struct {
	succeeded  []string
	failed     []outcome
	refused    []outcome
	skipped    []outcome
	notStarted []string
}

func (rep *report) print(out io.Writer, context string) {
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	fmt.Fprintf(out, "context %s:\n  succeeded: %s\n", context, list(rep.succeeded))
	fmt.Fprintf(out, "  failed: %d\n", len(rep.failed))
	for _, f := range rep.failed {
		fmt.Fprintf(out, "    %s: %s\n", f.tenant, f.reason)
	}
	for _, f := range rep.refused {
		fmt.Fprintf(out, "  refused %s: %s\n", f.tenant, f.reason)
	}
	fmt.Fprintf(out, "  not started: %s\n", list(rep.notStarted))
}

// batch applies the version to each tenant of a batch, then waits until each is Ready or failed.
func (r *rollout) batch(ctx context.Context, cl cluster, label string, names []string, rep *report) {
	generations := map[string]int64{}
	for _, name := range names {
		prefix := fmt.Sprintf("%s: %s → %s", label, name, r.o.version)
		gen, v, err := r.apply(ctx, cl.client, name)
		switch {
		case err != nil:
			r.fail(rep, name, err.Error())
			fmt.Fprintf(r.out, "%s ... failed: %v\n", prefix, err)
		case v.action == actionSkip:
			rep.skipped = append(rep.skipped, outcome{name, v.reason})
			fmt.Fprintf(r.out, "%s ... skipped: %s\n", prefix, v.reason)
		case v.action == actionRefuse:
			rep.refused = append(rep.refused, outcome{name, v.reason})
			fmt.Fprintf(r.out, "%s ... refused: %s\n", prefix, v.reason)
		default:
			generations[name] = gen
			fmt.Fprintf(r.out, "%s ... applied (generation %d)\n", prefix, gen)
		}
	}
	if len(generations) == 0 {
		return
	}
	r.wait(ctx, cl.client, label, generations, rep)
}

func (r *rollout) fail(rep *report, name, reason string) {
	rep.failed = append(rep.failed, outcome{name, reason})
	r.failed++
}

// apply sets the component's version with server-side apply of that one field: no read-modify-
// write, so a concurrent change to anything else in the tenant is neither lost nor a conflict.
// The tenant is read first only to check it still takes the version.
func (r *rollout) apply(ctx context.Context, c client.Client, name string) (int64, verdict, error) {
	live := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			// Applying now would create a tenant holding nothing but this component.
			return 0, verdict{actionSkip, "no longer exists"}, nil
		}
		return 0, verdict{}, err
	}
	if v := classify(live, r.o.component, r.o.version, r.o.force); v.action != actionChange {
		return 0, v, nil
	}
	patch, err := json.Marshal(map[string]any{
		"apiVersion": tenancyv1alpha1.GroupVersion.String(),
		"kind":       "Tenant",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{"components": []map[string]string{
			{"name": r.o.component, "version": r.o.version},
		}},
	})
	if err != nil {
		return 0, verdict{}, err
	}
	opts := []client.PatchOption{client.FieldOwner(rolloutFieldManager(r.o.component))}
	if r.o.force {
		opts = append(opts, client.ForceOwnership)
	}
	applied := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Patch(ctx, applied, client.RawPatch(types.ApplyPatchType, patch), opts...); err != nil {
		if apierrors.IsConflict(err) {
			// Another manager took the version between the read and the apply: name it, from
			// the tenant's managed fields as they are now.
			if managers, readErr := r.versionOwnersNow(ctx, c, name); readErr == nil && len(managers) > 0 {
				return 0, verdict{actionRefuse, managedByMessage(r.o.component, managers)}, nil
			}
		}
		return 0, verdict{}, fmt.Errorf("applying: %w", err)
	}
	return applied.Generation, verdict{actionChange, ""}, nil
}

// versionOwnersNow reads the tenant again and returns the managers other than the rollout's
// that own the component's version.
func (r *rollout) versionOwnersNow(ctx context.Context, c client.Client, name string) ([]string, error) {
	live := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
		return nil, err
	}
	return versionOwners(live, r.o.component), nil
}

// wait watches the batch's tenants until each is ready or failed, or the batch's time is up.
// A batch of one watches that tenant alone; a larger batch watches the tenants the rollout
// selected (one list, then changes as they happen). Whenever a pending tenant's Ready
// condition says something new, it is printed: that is what a person watching acts on.
func (r *rollout) wait(parent context.Context, c client.WithWatch, label string, generations map[string]int64, rep *report) {
	ctx, cancel := context.WithTimeout(parent, r.o.timeout)
	defer cancel()
	pending := map[string]string{} // tenant → what it is waiting for
	said := map[string]string{}    // tenant → the Ready reason and message last printed
	for name := range generations {
		pending[name] = "not read yet"
	}
	prefix := func(name string) string { return fmt.Sprintf("%s: %s → %s ...", label, name, r.o.version) }
	seen := func(obj runtime.Object, deleted bool) (bool, error) {
		t, ok := obj.(*tenancyv1alpha1.Tenant)
		if !ok {
			return false, nil
		}
		if _, waiting := pending[t.Name]; !waiting {
			return len(pending) == 0, nil
		}
		if deleted {
			delete(pending, t.Name)
			r.fail(rep, t.Name, "tenant was deleted")
			fmt.Fprintf(r.out, "%s failed: tenant was deleted\n", prefix(t.Name))
			return len(pending) == 0, nil
		}
		switch state, msg := progress(t, r.o.component, r.o.version, generations[t.Name]); state {
		case progressReady:
			delete(pending, t.Name)
			rep.succeeded = append(rep.succeeded, t.Name)
			fmt.Fprintf(r.out, "%s ready\n", prefix(t.Name))
		case progressStalled:
			delete(pending, t.Name)
			r.fail(rep, t.Name, msg)
			fmt.Fprintf(r.out, "%s failed: %s\n", prefix(t.Name), msg)
		default:
			pending[t.Name] = msg
			if ready := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ReadyCondition); ready != nil &&
				ready.Status != metav1.ConditionTrue && said[t.Name] != ready.Reason+ready.Message {
				said[t.Name] = ready.Reason + ready.Message
				fmt.Fprintf(r.out, "%s: %s pending: %s\n", label, t.Name, conditionMessage(ready))
			}
		}
		return len(pending) == 0, nil
	}
	// Tenants the first list did not return were deleted since their apply.
	settle := func(store cache.Store) (bool, error) {
		for _, name := range sortedNames(pending) {
			if _, exists, _ := store.GetByKey(name); !exists {
				if _, err := seen(&tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}, true); err != nil {
					return false, err
				}
			}
		}
		return len(pending) == 0, nil
	}
	scope := watchScope{list: &tenancyv1alpha1.TenantList{}, labels: r.selector}
	if len(generations) == 1 {
		for name := range generations {
			scope = watchScope{list: &tenancyv1alpha1.TenantList{}, fields: fields.OneTermEqualSelector("metadata.name", name)}
		}
	}
	err := watchUntil(ctx, c, scope, &tenancyv1alpha1.Tenant{}, seen, settle)
	if len(pending) == 0 {
		return
	}
	why := fmt.Sprintf("not ready after %s", r.o.timeout)
	switch {
	case parent.Err() != nil:
		why = "interrupted"
	case ctx.Err() == nil && err != nil:
		why = "watch failed: " + err.Error()
	}
	for _, name := range sortedNames(pending) {
		msg := why + ": " + pending[name]
		r.fail(rep, name, msg)
		fmt.Fprintf(r.out, "%s failed: %s\n", prefix(name), msg)
	}
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
