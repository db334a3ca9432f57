package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type describeOptions struct {
	selector      string
	allNamespaces bool
	showEvents    bool
}

func newDescribeCommand(root *rootOptions) *cobra.Command {
	o := &describeOptions{}
	cmd := &cobra.Command{
		Use:   "describe KIND [NAME...]",
		Short: "Show tenants, claims, pools, rollouts, database servers or templates in full, with their events.",
		Long: `Show each object in one view, as kubectl describe does: what it is, what the operator reports of
it (its kstatus verdict and conditions, with reasons and messages), and the recent events about
it (events.k8s.io, as kubectl events --for KIND/NAME lists them), oldest first.

A tenant's view has its state, namespace and shard, its domains and who may use it, the version
each component runs (from its status: a ComponentRollout moves a component without writing the
spec) and the rollout that moved it, its maintenance windows, each component's last migration
(its phase, the versions from and to, the step and Job running or that failed, the backup taken
before it, its attempts, when it started and ended, and its message), and its databases: the
server, the database, the login and the Secret holding the credentials in the tenant's
namespace. No credential is ever read, so no password is ever shown. A rollout's view has its
waves and the tenants that failed; a pool's, its spares; a database server's, where it is and
how many tenants it holds.

Without a name, every object of the kind is shown (those -l selects). The kinds, and the other
names each answers to (KIND/NAME works too):

` + kindsHelp(),
		Example: `  landlordctl describe tenant acme
  landlordctl describe tnt/acme
  landlordctl describe rollout web-1.2.0
  landlordctl describe claims -n signups
  landlordctl describe pools -l tier=standard`,
		Args:              minArgs(1),
		ValidArgsFunction: completeKindThenNames(root),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDescribe(cmd, root, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.selector, "selector", "l", "", "Only objects whose labels match this selector, e.g. plan=trial.")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Claims of every namespace (the other kinds are cluster-wide).")
	f.BoolVar(&o.showEvents, "show-events", true, "Show the events about each object.")
	return cmd
}

func runDescribe(cmd *cobra.Command, root *rootOptions, o *describeOptions, args []string) error {
	k, names, err := kindAndNames(args)
	if err != nil {
		return err
	}
	selector, err := labels.Parse(o.selector)
	if err != nil {
		return usageErrorf("--selector: %w", err)
	}
	var namespace string
	if k.namespaced && !o.allNamespaces {
		if namespace, err = root.namespace(); err != nil {
			return err
		}
	}
	c, err := root.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	list, missing, err := readObjects(ctx, c, k, namespace, selector, names)
	if err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	if len(items) == 0 && len(names) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), noneFound(k, namespace))
		return nil
	}
	for i, item := range items {
		obj := item.(client.Object)
		if i > 0 {
			// As kubectl separates the objects it describes.
			fmt.Fprint(root.out, "\n\n")
		}
		d := newDescriber(root.out)
		d.ctx, d.reader = ctx, c
		if o.showEvents {
			d.readEvents(ctx, c, k, obj)
		}
		k.describe(d, obj)
		if err := d.flush(); err != nil {
			return err
		}
	}
	return notFoundAmong(cmd.ErrOrStderr(), k, namespace, names, missing)
}

// describer writes one object as describe shows it: "Key:  value" lines, then sections, each a
// title and an indented table, aligned as kubectl describe aligns them.
type describer struct {
	w *tabwriter.Writer
	// events are those about the object, oldest first; read says whether they were asked for.
	events    []eventsv1.Event
	eventsErr error
	read      bool
	// reader reads what a description shows beside the object (a class's tenants); nil when
	// nothing more is to be read.
	ctx    context.Context
	reader client.Reader
}

func newDescriber(out io.Writer) *describer {
	return &describer{w: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)}
}

func (d *describer) flush() error { return d.w.Flush() }

// field writes "name:  value", or <none> for an empty value.
func (d *describer) field(name, value string) {
	fmt.Fprintf(d.w, "%s:\t%s\n", name, orNone(oneLine(value)))
}

// fieldf writes "name:  value" from a format.
func (d *describer) fieldf(name, format string, args ...any) {
	d.field(name, fmt.Sprintf(format, args...))
}

// values writes a field of several values, one a line, as kubectl describe writes labels.
func (d *describer) values(name string, values []string) {
	if len(values) == 0 {
		d.field(name, "")
		return
	}
	for i, v := range values {
		if i == 0 {
			fmt.Fprintf(d.w, "%s:\t%s\n", name, oneLine(v))
		} else {
			fmt.Fprintf(d.w, "\t%s\n", oneLine(v))
		}
	}
}

// labels writes a map as KEY=VALUE lines in key order.
func (d *describer) labels(name string, m map[string]string) {
	d.values(name, keyValues(m))
}

// objectMeta writes what kubectl describe starts every object with.
func (d *describer) objectMeta(obj client.Object, namespaced bool) {
	d.field("Name", obj.GetName())
	if namespaced {
		d.field("Namespace", obj.GetNamespace())
	}
	d.labels("Labels", obj.GetLabels())
	annotations := maps.Clone(obj.GetAnnotations())
	// As kubectl describe: the last applied configuration is the object again.
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
	d.labels("Annotations", annotations)
	d.fieldf("Created", "%s (%s ago)", obj.GetCreationTimestamp().UTC().Format(time.RFC3339), age(obj.GetCreationTimestamp()))
	if ts := obj.GetDeletionTimestamp(); ts != nil {
		d.fieldf("Deleting", "since %s (%s ago)", ts.UTC().Format(time.RFC3339), age(*ts))
	}
}

// verdict writes the object's status as kstatus computes it, as Flux and kubectl wait judge it.
func (d *describer) verdict(obj client.Object, kind string) {
	if res, err := kstatusOf(obj, kind); err == nil {
		d.fieldf("Status", "%s: %s", res.Status, res.Message)
	}
}

// section writes a titled table indented under its title, or <none> without rows.
func (d *describer) section(title string, header []string, rows [][]string) {
	fmt.Fprintf(d.w, "\n%s:\n", title)
	if len(rows) == 0 {
		fmt.Fprintln(d.w, "  <none>")
		return
	}
	fmt.Fprintf(d.w, "  %s\n", strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = oneLine(c)
		}
		fmt.Fprintf(d.w, "  %s\n", strings.Join(cells, "\t"))
	}
}

// note writes a section whose content is one line, such as why it could not be read.
func (d *describer) note(title, line string) {
	fmt.Fprintf(d.w, "\n%s:\n  %s\n", title, line)
}

// conditions writes the object's conditions, Ready first.
func (d *describer) conditions(conds []metav1.Condition) {
	var rows [][]string
	for _, c := range sortedConditions(conds) {
		rows = append(rows, []string{c.Type, string(c.Status), c.Reason, age(c.LastTransitionTime), c.Message})
	}
	d.section("Conditions", []string{"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}, rows)
}

// readEvents reads the events about obj for the Events section.
func (d *describer) readEvents(ctx context.Context, c client.Client, k *resourceKind, obj client.Object) {
	d.read = true
	d.events, d.eventsErr = eventsRegarding(ctx, c, k, obj)
}

// eventsSection writes the events about the object, when they were asked for.
func (d *describer) eventsSection() {
	switch {
	case !d.read:
		return
	case d.eventsErr != nil:
		d.note("Events", fmt.Sprintf("<could not be listed: %v>", d.eventsErr))
		return
	}
	var rows [][]string
	for i := range d.events {
		e := &d.events[i]
		rows = append(rows, []string{e.Type, e.Reason, eventAge(e), eventSource(e), e.Note})
	}
	d.section("Events", []string{"TYPE", "REASON", "AGE", "FROM", "MESSAGE"}, rows)
}

// eventsRegarding lists the events.k8s.io Events about obj, oldest first, as kubectl describe
// and kubectl events --for find them: by the kind, name and UID they regard (the UID leaves out
// an earlier object of the same name), in every namespace, since those about a cluster-scoped
// object are written in default. A user who may not list events cluster-wide gets those of the
// namespace they are written in.
func eventsRegarding(ctx context.Context, c client.Client, k *resourceKind, obj client.Object) ([]eventsv1.Event, error) {
	selector := fields.Set{"regarding.kind": k.kind, "regarding.name": obj.GetName(), "regarding.uid": string(obj.GetUID())}
	if k.namespaced {
		selector["regarding.namespace"] = obj.GetNamespace()
	}
	list := &eventsv1.EventList{}
	err := c.List(ctx, list, client.MatchingFieldsSelector{Selector: selector.AsSelector()})
	if apierrors.IsForbidden(err) {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		err = c.List(ctx, list, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: selector.AsSelector()})
	}
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(list.Items, func(a, b eventsv1.Event) int {
		_, la, _ := eventTimes(&a)
		_, lb, _ := eventTimes(&b)
		return la.Compare(lb)
	})
	return list.Items, nil
}

// eventTimes are when an event was first and last seen, and how often: an event that repeats is
// one Event with a series.
func eventTimes(e *eventsv1.Event) (first, last time.Time, count int32) {
	switch {
	case !e.EventTime.IsZero():
		first = e.EventTime.Time
	case !e.DeprecatedFirstTimestamp.IsZero():
		first = e.DeprecatedFirstTimestamp.Time
	default:
		first = e.CreationTimestamp.Time
	}
	last, count = first, 1
	switch {
	case e.Series != nil:
		last, count = e.Series.LastObservedTime.Time, e.Series.Count
	case !e.DeprecatedLastTimestamp.IsZero():
		last = e.DeprecatedLastTimestamp.Time
		count = max(e.DeprecatedCount, 1)
	}
	return first, last, count
}

// eventAge is how kubectl describe writes an event's age: "5s", or "5s (x3 over 2m)" for one seen
// several times.
func eventAge(e *eventsv1.Event) string {
	first, last, count := eventTimes(e)
	since := duration.HumanDuration(time.Since(last))
	if count > 1 {
		return fmt.Sprintf("%s (x%d over %s)", since, count, duration.HumanDuration(time.Since(first)))
	}
	return since
}

// eventSource is the controller that reported the event.
func eventSource(e *eventsv1.Event) string {
	if e.ReportingController != "" {
		return e.ReportingController
	}
	return e.DeprecatedSource.Component
}

// keyValues is a map as KEY=VALUE strings in key order.
func keyValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}
