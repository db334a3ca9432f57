package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

type getOptions struct {
	selector      string
	allNamespaces bool
	allContexts   bool
	output        *outputFlags
}

func newGetCommand(root *rootOptions) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get (tenants|claims) [NAME...]",
		Short: "List tenants or claims with their state and why they are not Ready.",
		Long: `List tenants (cluster-wide) or claims (in --namespace, or every namespace with -A), or the named
ones. The table shows what a person needs to act on: a tenant's state, whether it is Ready and
why not, its namespace and the version each component runs (from its status: a ComponentRollout
moves a component without writing the spec); -o wide adds the organization and the Ready
message; -o json|yaml|name give the objects as kubectl does.

With --all-contexts, the tenants of every context of the kubeconfig (every cluster of a fleet)
are one table whose first column is the context; a context that cannot be read is named and
fails the command after the others are printed.`,
		Example: `  landlordctl get tenants
  landlordctl get tenants -l plan=trial -o wide
  landlordctl get tenant acme -o yaml
  landlordctl get claims -A
  landlordctl get tenants --all-contexts`,
		Args:      cobra.MinimumNArgs(1),
		ValidArgs: []string{"tenants", "claims"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd, root, o, args[0], args[1:])
		},
	}
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "Only objects whose labels match this selector, e.g. plan=trial.")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Claims of every namespace.")
	cmd.Flags().BoolVar(&o.allContexts, "all-contexts", false, "Tenants of every context of the kubeconfig, as one table with the context first.")
	o.output = addOutputFlags(cmd, true)
	return cmd
}

func runGet(cmd *cobra.Command, root *rootOptions, o *getOptions, kind string, names []string) error {
	selector, err := labels.Parse(o.selector)
	if err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	var list client.ObjectList
	var namespace string
	switch kind {
	case "tenants", "tenant", "tnt":
		if o.allContexts {
			return getFleet(cmd, root, o, selector, names)
		}
		list = &tenancyv1alpha1.TenantList{}
	case "claims", "claim", "tenantclaims", "tenantclaim", "tc":
		if o.allContexts {
			return errors.New("--all-contexts lists tenants only: list claims one context at a time")
		}
		list = &tenancyv1alpha1.TenantClaimList{}
		if !o.allNamespaces {
			if namespace, err = root.namespace(); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown kind %q: want tenants or claims", kind)
	}
	c, err := root.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	var missing int
	if len(names) == 0 {
		if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return err
		}
	} else if missing, err = getNamed(cmd, c, list, namespace, names); err != nil {
		return err
	}
	if missing == len(names) && missing > 0 {
		return fmt.Errorf("%d of %d not found", missing, len(names))
	}
	if err := printList(root.out, cmd.ErrOrStderr(), o.output, list, o.allNamespaces, len(names) == 1); err != nil {
		return err
	}
	// As kubectl: what was found is printed, and the command still fails.
	if missing > 0 {
		return fmt.Errorf("%d of %d not found", missing, len(names))
	}
	return nil
}

// getNamed reads the named objects one by one, reporting those that do not exist as kubectl
// does, and returns how many were missing.
func getNamed(cmd *cobra.Command, c client.Client, list client.ObjectList, namespace string, names []string) (int, error) {
	var missing int
	key := func(n string) client.ObjectKey { return client.ObjectKey{Namespace: namespace, Name: n} }
	switch l := list.(type) {
	case *tenancyv1alpha1.TenantList:
		for _, n := range names {
			t := tenancyv1alpha1.Tenant{}
			if err := c.Get(cmd.Context(), key(n), &t); err != nil {
				if !apierrors.IsNotFound(err) {
					return missing, err
				}
				missing++
				fmt.Fprintf(cmd.ErrOrStderr(), "tenant %q not found\n", n)
				continue
			}
			l.Items = append(l.Items, t)
		}
	case *tenancyv1alpha1.TenantClaimList:
		for _, n := range names {
			tc := tenancyv1alpha1.TenantClaim{}
			if err := c.Get(cmd.Context(), key(n), &tc); err != nil {
				if !apierrors.IsNotFound(err) {
					return missing, err
				}
				missing++
				fmt.Fprintf(cmd.ErrOrStderr(), "claim %s/%s not found\n", namespace, n)
				continue
			}
			l.Items = append(l.Items, tc)
		}
	}
	return missing, nil
}

func printList(out, errOut io.Writer, f *outputFlags, list client.ObjectList, withNamespace, single bool) error {
	if f.human() {
		switch l := list.(type) {
		case *tenancyv1alpha1.TenantList:
			if len(l.Items) == 0 {
				fmt.Fprintln(errOut, "No tenants found.")
				return nil
			}
			return f.printTable(out, tenantTable(l.Items), false)
		case *tenancyv1alpha1.TenantClaimList:
			if len(l.Items) == 0 {
				fmt.Fprintln(errOut, "No claims found.")
				return nil
			}
			return f.printTable(out, claimTable(l.Items), withNamespace)
		}
	}
	if err := setKinds(list); err != nil {
		return err
	}
	if items, err := meta.ExtractList(list); err == nil && len(items) == 1 && single {
		// One object asked for by name is printed as itself, as kubectl does.
		return f.printObject(out, items[0])
	}
	if f.format() == "name" {
		// One line per object, as kubectl prints a list by name.
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, item := range items {
			if err := f.printObject(out, item); err != nil {
				return err
			}
		}
		return nil
	}
	return f.printObject(out, list)
}

// setKinds fills in apiVersion and kind of a list's items, which the API server leaves out of
// typed items and the printers need.
func setKinds(list client.ObjectList) error {
	scheme := tenancyv1alpha1.Scheme()
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, item := range items {
		gvk, err := apiutil.GVKForObject(item, scheme)
		if err != nil {
			return err
		}
		item.GetObjectKind().SetGroupVersionKind(gvk)
	}
	gvk, err := apiutil.GVKForObject(list, scheme)
	if err != nil {
		return err
	}
	list.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
