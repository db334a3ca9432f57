package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// fleetReads is how many contexts are read at once: a fleet of clusters answers in about the
// time of its slowest, not the sum of all.
const fleetReads = 8

// contextTenants is one kubeconfig context's tenants, or why they could not be read.
type contextTenants struct {
	Context string                   `json:"context"`
	Tenants []tenancyv1alpha1.Tenant `json:"tenants"`
	Error   string                   `json:"error,omitempty"`
}

// fleetView is `get tenants --all-contexts -o json|yaml`: the tenants of every context, each
// under its context's name, since one cluster's Tenant list cannot say which cluster it is from.
type fleetView struct {
	Contexts []contextTenants `json:"contexts"`
}

// getFleet lists tenants in every context of the kubeconfig as one table. A context that cannot
// be read (a cluster down, expired credentials) is named on stderr and fails the command, after
// the tenants of the others are printed, as kubectl prints what it found.
func getFleet(cmd *cobra.Command, root *rootOptions, o *getOptions, selector labels.Selector, names []string) error {
	switch f := o.output.format(); f {
	case "", "wide", "json", "yaml":
	default:
		return fmt.Errorf("-o %s prints objects of one cluster: with --all-contexts use the table, wide, json or yaml, which say each tenant's context", f)
	}
	if *root.kube.Context != "" {
		return errors.New("--all-contexts reads every context: leave out --context")
	}
	raw, err := root.checkKubeconfig()
	if err != nil {
		return err
	}
	contexts := slices.Sorted(maps.Keys(raw.Contexts))
	if len(contexts) == 0 {
		return errors.New("kubeconfig has no contexts")
	}
	fleet := readFleet(cmd.Context(), root, contexts, selector, names)

	var failed []string
	found := map[string]bool{}
	for _, c := range fleet.Contexts {
		if c.Error != "" {
			failed = append(failed, c.Context)
			fmt.Fprintf(cmd.ErrOrStderr(), "context %s: %s\n", c.Context, c.Error)
		}
		for i := range c.Tenants {
			found[c.Tenants[i].Name] = true
		}
	}
	var missing []string
	for _, n := range names {
		if !found[n] {
			missing = append(missing, n)
			fmt.Fprintf(cmd.ErrOrStderr(), "tenant %q not found in any context\n", n)
		}
	}
	if err := printFleet(root, cmd, o.output, fleet); err != nil {
		return err
	}
	var errs []error
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("%d of %d contexts could not be read: %s", len(failed), len(contexts), strings.Join(failed, ", ")))
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%d of %d tenants not found in any context", len(missing), len(names)))
	}
	return errors.Join(errs...)
}

// readFleet reads the tenants of each context, several contexts at a time. The connections are
// configured first, one after the other, since the kubeconfig flags are shared state; reaching
// each cluster (client.New already asks it what it serves) is left to the concurrent reads.
func readFleet(ctx context.Context, root *rootOptions, contexts []string, selector labels.Selector, names []string) fleetView {
	view := fleetView{Contexts: make([]contextTenants, len(contexts))}
	configs := make([]*rest.Config, len(contexts))
	for i, name := range contexts {
		view.Contexts[i].Context = name
		cfg, err := root.restConfigFor(name)
		if err != nil {
			view.Contexts[i].Error = err.Error()
			continue
		}
		configs[i] = cfg
	}
	g := errgroup.Group{}
	g.SetLimit(fleetReads)
	for i := range contexts {
		if configs[i] == nil {
			continue
		}
		g.Go(func() error {
			c, err := client.New(configs[i], client.Options{Scheme: tenancyv1alpha1.Scheme()})
			if err == nil {
				view.Contexts[i].Tenants, err = readTenants(ctx, c, selector, names)
			}
			if err != nil {
				view.Contexts[i].Error = err.Error()
			}
			return nil
		})
	}
	_ = g.Wait()
	return view
}

// readTenants is one cluster's tenants: those matching selector, or the named ones it has (a
// tenant lives in one cluster of a fleet, so a name missing here is not an error).
func readTenants(ctx context.Context, c client.Client, selector labels.Selector, names []string) ([]tenancyv1alpha1.Tenant, error) {
	if len(names) == 0 {
		list := &tenancyv1alpha1.TenantList{}
		if err := c.List(ctx, list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	var tenants []tenancyv1alpha1.Tenant
	for _, n := range names {
		t := tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: n}, &t); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return tenants, err
		}
		tenants = append(tenants, t)
	}
	return tenants, nil
}

// printFleet writes the fleet as one table with a Context column, or as json or yaml.
func printFleet(root *rootOptions, cmd *cobra.Command, f *outputFlags, fleet fleetView) error {
	if !f.human() {
		for i := range fleet.Contexts {
			tenants := fleet.Contexts[i].Tenants
			for j := range tenants {
				tenants[j].SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind("Tenant"))
			}
			if tenants == nil {
				fleet.Contexts[i].Tenants = []tenancyv1alpha1.Tenant{}
			}
		}
		return printData(root.out, f.format(), fleet)
	}
	table := fleetTable(fleet)
	if len(table.Rows) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "No tenants found.")
		return nil
	}
	return f.printTable(root.out, table, false)
}

// fleetTable is tenantTable with the context of each tenant first.
func fleetTable(fleet fleetView) *metav1.Table {
	var table *metav1.Table
	for _, c := range fleet.Contexts {
		part := tenantTable(c.Tenants)
		for i := range part.Rows {
			part.Rows[i].Cells = append([]any{c.Context}, part.Rows[i].Cells...)
		}
		if table == nil {
			table = part
			table.ColumnDefinitions = append([]metav1.TableColumnDefinition{{Name: "Context", Type: "string"}}, part.ColumnDefinitions...)
			continue
		}
		table.Rows = append(table.Rows, part.Rows...)
	}
	return table
}
