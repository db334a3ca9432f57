package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// classTable is the classes as get shows them: what each tier gives its tenants.
func classTable(classes []tenancyv1alpha1.TenantClass) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Node-Pool", Type: "string"},
		{Name: "Databases", Type: "string"},
		{Name: "Quota", Type: "string"},
		{Name: "Cost-Code", Type: "string"},
		{Name: "Tenants", Type: "integer"},
		{Name: "Updated", Type: "integer"},
		{Name: "Age", Type: "string"},
		{Name: "Overrides", Type: "string", Priority: 1},
		{Name: "Description", Type: "string", Priority: 1},
	}}
	return withRows(table, classes, func(c *tenancyv1alpha1.TenantClass) []any {
		return []any{c.Name, classPool(c), classDatabases(c), orNone(resourceList(c.Spec.Quota)), orNone(c.Spec.CostCode),
			int64(c.Status.Tenants), int64(c.Status.Updated), age(c.CreationTimestamp), orNone(strings.Join(classOverrides(c), ",")), orNone(oneLine(c.Spec.Description))}
	})
}

// describeClass writes a class: what its tier means, what its tenants may set themselves, and
// its tenants (when the describer can read them).
func describeClass(d *describer, c *tenancyv1alpha1.TenantClass) {
	var tenants []tenancyv1alpha1.Tenant
	if d.reader != nil {
		var err error
		if tenants, err = tenantsOfClass(d.ctx, d.reader, c.Name); err != nil {
			d.note("Tenants", "could not be read: "+err.Error())
		} else if tenants == nil {
			tenants = []tenancyv1alpha1.Tenant{}
		}
	}
	d.objectMeta(c, false)
	d.field("Description", c.Spec.Description)
	d.field("Node pool", classPool(c))
	d.field("Databases", classDatabases(c))
	d.field("Quota", resourceList(c.Spec.Quota))
	if l := c.Spec.Limits; l != nil {
		d.field("Limits default", resourceList(l.Default))
		d.field("Limits default request", resourceList(l.DefaultRequest))
		d.field("Limits max", resourceList(l.Max))
	}
	d.field("Pod security", string(c.Spec.PodSecurity))
	d.field("Cost code", c.Spec.CostCode)
	d.values("Maintenance windows", maintenanceWindows(c.Spec.MaintenanceWindows))
	if comps := c.Spec.Components; comps != nil {
		d.values("Allowed components", comps.Allowed)
		var rows [][]string
		for _, name := range slices.Sorted(maps.Keys(comps.Values)) {
			v := comps.Values[name]
			rows = append(rows, []string{name, compactJSON(v.Raw)})
		}
		d.section("Component defaults", []string{"COMPONENT", "VALUES"}, rows)
	}
	d.values("Tenants may set", classOverrides(c))
	d.field("Revision", c.Status.Revision)
	if ro := c.Status.Rollout; ro != nil {
		rollout := fmt.Sprintf("%s, %d%% of the tenants released", ro.Strategy, ro.ReleasedPercent)
		if ro.Halted != "" {
			rollout += "; halted: " + ro.Halted
		}
		d.field("Rollout", rollout)
	}
	d.fieldf("Updated", "%d of %d tenants Ready at the revision", c.Status.Updated, c.Status.Tenants)
	d.verdict(c, "TenantClass")
	if tenants != nil {
		rows := make([][]string, 0, len(tenants))
		for _, t := range tenants {
			ready, reason, _ := readyOf(t.Status.Conditions)
			rows = append(rows, []string{t.Name, string(t.Spec.State), ready, reason})
		}
		d.section(fmt.Sprintf("Tenants (%d)", len(tenants)), []string{"NAME", "STATE", "READY", "REASON"}, rows)
	}
	d.eventsSection()
}

// classPool is what a class says of node pools, in words.
func classPool(c *tenancyv1alpha1.TenantClass) string {
	switch p := c.Spec.NodePool; {
	case p == nil:
		return "<none>"
	case p.Dedicated:
		return "dedicated (one per tenant: dedicated-<tenant>)"
	default:
		return p.Name
	}
}

// classDatabases is where a class places databases, in words.
func classDatabases(c *tenancyv1alpha1.TenantClass) string {
	p := c.Spec.Databases
	if p == nil {
		return "any server"
	}
	where := "any server"
	if p.ServerSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(p.ServerSelector); err == nil {
			where = "servers " + sel.String()
		}
	}
	if p.Dedicated {
		return "dedicated, " + where
	}
	return "shared, " + where
}

func classOverrides(c *tenancyv1alpha1.TenantClass) []string {
	out := make([]string, 0, len(c.Spec.Overrides))
	for _, f := range c.Spec.Overrides {
		out = append(out, string(f))
	}
	return out
}

// resourceList is a list of resources as name=quantity, by name.
func resourceList(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// compactJSON is raw JSON on one line.
func compactJSON(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// tenantsOfClass are the tenants naming a class.
func tenantsOfClass(ctx context.Context, c client.Reader, class string) ([]tenancyv1alpha1.Tenant, error) {
	list := &tenancyv1alpha1.TenantList{}
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	var out []tenancyv1alpha1.Tenant
	for _, t := range list.Items {
		if t.Spec.Class == class {
			out = append(out, t)
		}
	}
	return out, nil
}

func newTenantCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "Change a tenant's plan: the TenantClass it is of.",
		Args:  noArgs,
	}
	cmd.AddCommand(newSetClassCommand(root))
	return cmd
}

func newSetClassCommand(root *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "set-class TENANT CLASS",
		Short: "Move a tenant to another tier: set its spec.class.",
		Long: `Set the tenant's spec.class to the TenantClass named, which must exist. The operator moves the
tenant to the new tier: its quota, limits and cost code change at once, its pods are moved to the
class's node pool, and each of its databases on a server the class does not place it on is moved,
by a DatabaseMove the operator creates (landlordctl get moves), to one it does. A move keeps the
old copy of the database until it is confirmed (landlordctl db confirm). A tenant that sets a
field the new class does not let it set is refused, naming the field: remove it first.

A tenant applied by Flux or Argo CD from Git keeps a class set here only while its manifest does
not set spec.class; if it does, change the class in Git.`,
		Example:           `  landlordctl tenant set-class acme enterprise`,
		Args:              exactArgs(2),
		ValidArgsFunction: completeNamesOf(root, kindOf("Tenant"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setClass(cmd.Context(), root, args[0], args[1])
		},
	}
}

func setClass(ctx context.Context, root *rootOptions, name, class string) error {
	c, err := root.client()
	if err != nil {
		return err
	}
	return runSetClass(ctx, c, name, class, root.out)
}

// runSetClass sets the tenant's class, once the class is found to exist, and says so on out.
func runSetClass(ctx context.Context, c client.Client, name, class string, out io.Writer) error {
	tc := &tenancyv1alpha1.TenantClass{}
	switch err := c.Get(ctx, client.ObjectKey{Name: class}, tc); {
	case apierrors.IsNotFound(err):
		return kindOf("TenantClass").wrapNotFound("", class, err)
	case err != nil:
		return fmt.Errorf("reading class %s: %w", class, err)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"class": class}})
	if err != nil {
		return err
	}
	t, err := patchTenant(ctx, c, name, string(patch))
	if err != nil {
		if errors.As(err, new(notFoundError)) {
			return err
		}
		return fmt.Errorf("setting the class of tenant %s: %w", name, err)
	}
	if t.Spec.Class != class {
		return fmt.Errorf("setting the class of tenant %s: the API server answered with spec.class %q; %s", name, t.Spec.Class, outdatedCRD)
	}
	fmt.Fprintf(out, "tenant/%s class set to %s\n", name, class)
	return nil
}
