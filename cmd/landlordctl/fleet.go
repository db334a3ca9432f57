package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// fleetReads is how many contexts are read at once: a fleet of clusters answers in about the
// time of its slowest, not the sum of all.
const fleetReads = 8

// fleetRequestTimeout bounds each request to a cluster of the fleet unless --request-timeout says
// otherwise: one cluster that accepts connections and never answers must not hold up the view of
// all the others for ever. A variable, so that a test can shorten it.
var fleetRequestTimeout = 30 * time.Second

// perClusterFlags are kubectl's connection flags that name one cluster or one identity. With
// --all-contexts they would send every context to one server, or one cluster's credentials to
// every server of the kubeconfig, so they are refused. --as and --request-timeout apply to
// every context as they say.
var perClusterFlags = []string{"server", "cluster", "user", "token", "username", "password",
	"client-certificate", "client-key", "certificate-authority", "insecure-skip-tls-verify", "tls-server-name"}

// contextTenants is one kubeconfig context's tenants, or why they could not be read (Error), or
// why they were not read though nothing failed (Note: Landlord is not installed there, or
// another context already listed the same cluster).
type contextTenants struct {
	Context string                   `json:"context"`
	Tenants []tenancyv1alpha1.Tenant `json:"tenants"`
	Error   string                   `json:"error,omitempty"`
	Note    string                   `json:"note,omitempty"`
}

// fleetView is `get tenants --all-contexts -o json|yaml`: the tenants of every context, each
// under its context's name, since one cluster's Tenant list cannot say which cluster it is from.
type fleetView struct {
	Contexts []contextTenants `json:"contexts"`
}

// getFleet lists tenants in every context of the kubeconfig as one table. A context that cannot
// be read (a cluster down, expired credentials) is named on stderr and fails the command, after
// the tenants of the others are printed, as kubectl prints what it found. A cluster without
// Landlord, or one another context already listed, is noted and fails nothing.
func getFleet(cmd *cobra.Command, root *rootOptions, o *getOptions, selector labels.Selector, names []string) error {
	switch f := o.output.format(); f {
	case "", "wide", "json", "yaml":
	default:
		return fmt.Errorf("-o %s prints objects of one cluster: with --all-contexts use the table, wide, json or yaml, which say each tenant's context", f)
	}
	if *root.kube.Context != "" {
		return errors.New("--all-contexts reads every context: leave out --context")
	}
	for _, name := range perClusterFlags {
		if f := cmd.Flag(name); f != nil && f.Changed {
			return fmt.Errorf("--all-contexts connects to each context as the kubeconfig says: leave out --%s, which would apply one cluster's setting to all", name)
		}
	}
	// Loaded without checking the current context: --all-contexts does not use it, and each
	// context is checked as it is connected to.
	raw, err := root.kube.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	contexts := slices.Sorted(maps.Keys(raw.Contexts))
	if len(contexts) == 0 {
		return errors.New("kubeconfig has no contexts")
	}
	// The bound goes in as the flag's value, so that every context's connection takes it the way
	// it takes --request-timeout.
	if f := cmd.Flag("request-timeout"); f == nil || !f.Changed {
		*root.kube.Timeout = fleetRequestTimeout.String()
	}
	fleet := readFleet(cmd.Context(), root, raw, contexts, selector, names)

	var failed []string
	found := map[string]bool{}
	for _, c := range fleet.Contexts {
		switch {
		case c.Error != "":
			failed = append(failed, c.Context)
			fmt.Fprintf(cmd.ErrOrStderr(), "context %s: %s\n", c.Context, c.Error)
		case c.Note != "":
			fmt.Fprintf(cmd.ErrOrStderr(), "context %s: %s\n", c.Context, c.Note)
		}
		for i := range c.Tenants {
			found[c.Tenants[i].Name] = true
		}
	}
	where := "any context"
	if len(failed) > 0 {
		where = "any context that could be read"
	}
	var missing []string
	for _, n := range names {
		if !found[n] {
			missing = append(missing, n)
			fmt.Fprintf(cmd.ErrOrStderr(), "tenant %q not found in %s\n", n, where)
		}
	}
	if err := printFleet(root, cmd, o.output, fleet, len(failed) == 0); err != nil {
		return err
	}
	var errs []error
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("%d of %d contexts could not be read: %s", len(failed), len(contexts), strings.Join(failed, ", ")))
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%d of %d tenants not found in %s", len(missing), len(names), where))
	}
	return errors.Join(errs...)
}

// readFleet reads the tenants of each context, several contexts at a time. The connections are
// configured first, one after the other, since the kubeconfig flags are shared state; reaching
// each cluster (client.New already asks it what it serves) is left to the concurrent reads.
func readFleet(ctx context.Context, root *rootOptions, raw clientcmdapi.Config, contexts []string, selector labels.Selector, names []string) fleetView {
	view := fleetView{Contexts: make([]contextTenants, len(contexts))}
	configs := make([]*rest.Config, len(contexts))
	listedBy := map[string]string{} // server and user → the context that lists them
	for i, name := range contexts {
		view.Contexts[i].Context = name
		cfg, err := root.restConfigFor(name)
		if err != nil {
			view.Contexts[i].Error = err.Error()
			continue
		}
		// Contexts often differ only in their namespace: a cluster is listed once per user, under
		// the first context that names both. Another user's context is read on its own, since
		// what one identity may read says nothing of another's.
		key := cfg.Host + "\x00" + raw.Contexts[name].AuthInfo
		if first, ok := listedBy[key]; ok {
			view.Contexts[i].Note = fmt.Sprintf("the same cluster and user as context %s: listed there", first)
			continue
		}
		listedBy[key] = name
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
			switch {
			case meta.IsNoMatchError(err):
				view.Contexts[i].Note = "Landlord is not installed (the cluster serves no Tenant API)"
			case err != nil:
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

// printFleet writes the fleet as one table with a Context column, or as json or yaml. An empty
// table is said to be so only when every context was read (complete).
func printFleet(root *rootOptions, cmd *cobra.Command, f *outputFlags, fleet fleetView, complete bool) error {
	if !f.human() {
		for i := range fleet.Contexts {
			tenants := fleet.Contexts[i].Tenants
			for j := range tenants {
				tenants[j].SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind("Tenant"))
				// As kubectl prints objects: managed fields only when asked for.
				if !f.print.JSONYamlPrintFlags.ShowManagedFields {
					tenants[j].ManagedFields = nil
				}
			}
			if tenants == nil {
				fleet.Contexts[i].Tenants = []tenancyv1alpha1.Tenant{}
			}
		}
		return printData(root.out, f.format(), fleet)
	}
	table := fleetTable(fleet)
	if len(table.Rows) == 0 {
		if complete {
			fmt.Fprintln(cmd.ErrOrStderr(), "No tenants found.")
		}
		return nil
	}
	return f.printTable(root.out, table, false)
}

// fleetTable is tenantTable with the context of each tenant first.
func fleetTable(fleet fleetView) *metav1.Table {
	table := tenantTable(nil)
	table.ColumnDefinitions = append([]metav1.TableColumnDefinition{{Name: "Context", Type: "string"}}, table.ColumnDefinitions...)
	for _, c := range fleet.Contexts {
		for _, row := range tenantTable(c.Tenants).Rows {
			row.Cells = append([]any{c.Context}, row.Cells...)
			table.Rows = append(table.Rows, row)
		}
	}
	return table
}
