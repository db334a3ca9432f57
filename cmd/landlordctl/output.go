package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// outputFlags is -o, as kubectl has it: json, yaml, name, go-template and jsonpath through
// cli-runtime's printers, and for commands with a table, the table (the default) and wide.
type outputFlags struct {
	print *genericclioptions.PrintFlags
	table bool
	// The table's own flags, as kubectl get has them.
	noHeaders    bool
	showLabels   bool
	labelColumns []string
}

func addOutputFlags(cmd *cobra.Command, table bool) *outputFlags {
	f := &outputFlags{print: genericclioptions.NewPrintFlags("").WithTypeSetter(tenancyv1alpha1.Scheme()), table: table}
	f.print.AddFlags(cmd)
	formats := f.print.AllowedFormats()
	if table {
		formats = append([]string{"wide"}, formats...)
		cmd.Flags().BoolVar(&f.noHeaders, "no-headers", false, "Print the table without its header line.")
		cmd.Flags().BoolVar(&f.showLabels, "show-labels", false, "Add each object's labels to the table, as the last column.")
		cmd.Flags().StringSliceVarP(&f.labelColumns, "label-columns", "L", nil, "Add a column with the value of each of these labels (comma separated, or repeated).")
	}
	cmd.Flags().Lookup("output").Usage = "Output format: " + strings.Join(formats, "|") + " (default: a table for people)."
	_ = cmd.RegisterFlagCompletionFunc("output", completeFrom(formats))
	return f
}

// validate refuses an output format before anything is read: a typo in -o is a usage error.
func (f *outputFlags) validate() error {
	if f.human() {
		return nil
	}
	_, err := f.print.ToPrinter()
	return asUsage(err)
}

func (f *outputFlags) format() string { return *f.print.OutputFormat }

// human is whether people read the output: the default table or view, or wide.
func (f *outputFlags) human() bool {
	return f.format() == "" || (f.table && f.format() == "wide")
}

// printObject writes obj (a Landlord or Kubernetes object, or a list of them) in the format asked.
func (f *outputFlags) printObject(out io.Writer, obj runtime.Object) error {
	p, err := f.print.ToPrinter()
	if err != nil {
		return err
	}
	return p.PrintObj(obj, out)
}

// printTable writes a table in the default or the wide format.
func (f *outputFlags) printTable(out io.Writer, table *metav1.Table, withNamespace bool) error {
	return f.tablePrinter(withNamespace).PrintObj(table, out)
}

// tablePrinter prints tables in the default or the wide format. It prints the header once for
// the tables it is given in turn (a watch's rows), as kubectl's does.
func (f *outputFlags) tablePrinter(withNamespace bool) printers.ResourcePrinter {
	return printers.NewTablePrinter(printers.PrintOptions{
		Wide: f.format() == "wide", WithNamespace: withNamespace,
		NoHeaders: f.noHeaders, ShowLabels: f.showLabels, ColumnLabels: f.labelColumns,
	})
}

// printData writes a value that is not a Kubernetes object (a build's version, a rollout's
// summary) as json or yaml.
func printData(out io.Writer, format string, v any) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,yaml", format)
}

// age is how kubectl writes an object's age.
func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// readyOf is the tenant's Ready condition's status, reason and message; "Unknown" when the
// operator has not said yet.
func readyOf(conds []metav1.Condition) (status, reason, message string) {
	c := meta.FindStatusCondition(conds, tenancyv1alpha1.ReadyCondition)
	if c == nil {
		return string(metav1.ConditionUnknown), "", ""
	}
	return string(c.Status), c.Reason, c.Message
}

// versions are the tenant's components as name=version, in the spec's order: the version each
// runs, as the operator reports it in status. The spec's version is only where a component that
// follows rollouts started (a ComponentRollout moves it without writing the spec), and a pinned
// component runs its new version only once it is applied; a component not reported yet shows the
// spec's, which it is about to run.
func versions(t *tenancyv1alpha1.Tenant) string {
	parts := make([]string, 0, len(t.Spec.Components))
	for _, c := range t.Spec.Components {
		version := c.Version
		if i := slices.IndexFunc(t.Status.Components, func(s tenancyv1alpha1.ComponentStatus) bool { return s.Name == c.Name }); i >= 0 && t.Status.Components[i].Version != "" {
			version = t.Status.Components[i].Version
		}
		parts = append(parts, c.Name+"="+version)
	}
	return strings.Join(parts, ",")
}

// sortedConditions puts Ready first, then the rest by type, for a stable view.
func sortedConditions(conds []metav1.Condition) []metav1.Condition {
	out := slices.Clone(conds)
	slices.SortStableFunc(out, func(a, b metav1.Condition) int {
		switch {
		case a.Type == tenancyv1alpha1.ReadyCondition:
			return -1
		case b.Type == tenancyv1alpha1.ReadyCondition:
			return 1
		}
		return strings.Compare(a.Type, b.Type)
	})
	return out
}
