package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

type getOptions struct {
	selector      string
	allNamespaces bool
	allContexts   bool
	watch         bool
	watchOnly     bool
	watchEvents   bool
	output        *outputFlags
}

func newGetCommand(root *rootOptions) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get KIND [NAME...]",
		Short: "List tenants, claims, pools, rollouts, database servers or templates, as kubectl get does.",
		Long: `List Landlord's objects of one kind, or the named ones, as kubectl get does: a table for people by
default, -o wide for more columns, -o json|yaml|name|jsonpath=...|go-template=... for scripts.
The kinds, and the other names each answers to (its CRD's, any case, with or without the API
group; KIND/NAME works too):

` + kindsHelp() + `

The tables have the CRDs' printer columns, and say what a person needs to act on: a tenant's
state, whether it is Ready and why not, its namespace and the version each component runs
(from its status: a ComponentRollout moves a component without writing the spec); -o wide adds
the tenant's organization and the Ready message. Claims are namespaced: those of --namespace, or
of the kubeconfig context's namespace, or of every namespace with -A.

With --watch (-w), the objects are printed, then each change as it happens, until interrupted;
--watch-only prints the changes alone, and --output-watch-events says what each is (ADDED,
MODIFIED, DELETED).

With --all-contexts, the tenants of every context of the kubeconfig (every cluster of a fleet)
are one table whose first column is the context; a context that cannot be read is named and
fails the command after the others are printed.`,
		Example: `  landlordctl get tenants
  landlordctl get tenants -l plan=trial -o wide
  landlordctl get tenant acme -o yaml
  landlordctl get tnt/acme tnt/globex -o name
  landlordctl get claims -A
  landlordctl get pools
  landlordctl get rollouts -w
  landlordctl get databaseservers -o wide
  landlordctl get tenants --all-contexts`,
		Args:              minArgs(1),
		ValidArgsFunction: completeKindThenNames(root),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd, root, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.selector, "selector", "l", "", "Only objects whose labels match this selector, e.g. plan=trial.")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Claims of every namespace (the other kinds are cluster-wide).")
	f.BoolVar(&o.allContexts, "all-contexts", false, "Tenants of every context of the kubeconfig, as one table with the context first.")
	f.BoolVarP(&o.watch, "watch", "w", false, "After listing, print each change to the objects as it happens, until interrupted.")
	f.BoolVar(&o.watchOnly, "watch-only", false, "Print each change to the objects as it happens, without listing them first.")
	f.BoolVar(&o.watchEvents, "output-watch-events", false, "With --watch, say what each change is: ADDED, MODIFIED or DELETED.")
	o.output = addOutputFlags(cmd, true)
	return cmd
}

// kindAndNames reads get's and describe's arguments, as kubectl does: a kind and names of its
// objects (tenants acme globex), or KIND/NAME, each of the same kind (tenant/acme tnt/globex).
func kindAndNames(args []string) (*resourceKind, []string, error) {
	if !strings.Contains(args[0], "/") {
		k, ok := kindByName(args[0])
		if !ok {
			return nil, nil, unknownKind(args[0])
		}
		for _, n := range args[1:] {
			if strings.Contains(n, "/") {
				return nil, nil, usageErrorf("%q: name objects either after their kind (%s NAME...) or each as KIND/NAME, not both", n, args[0])
			}
		}
		return k, args[1:], nil
	}
	var k *resourceKind
	names := make([]string, 0, len(args))
	for _, a := range args {
		word, name, ok := strings.Cut(a, "/")
		if !ok || name == "" || strings.Contains(name, "/") {
			return nil, nil, usageErrorf("%q: want KIND/NAME", a)
		}
		ak, known := kindByName(word)
		switch {
		case !known:
			return nil, nil, unknownKind(word)
		case k != nil && ak != k:
			return nil, nil, usageErrorf("%s and %s: one kind at a time", args[0], a)
		}
		k = ak
		names = append(names, name)
	}
	return k, names, nil
}

func runGet(cmd *cobra.Command, root *rootOptions, o *getOptions, args []string) error {
	k, names, err := kindAndNames(args)
	if err != nil {
		return err
	}
	selector, err := labels.Parse(o.selector)
	if err != nil {
		return usageErrorf("--selector: %w", err)
	}
	o.watch = o.watch || o.watchOnly
	switch {
	case o.watchEvents && !o.watch:
		return usageErrorf("--output-watch-events says what each change of a watch is: add --watch")
	case o.watch && len(names) > 1:
		return usageErrorf("--watch follows one %s or all of them: name one, or none", k.noun)
	case o.allContexts && k.kind != "Tenant":
		return usageErrorf("--all-contexts lists tenants only: list %s one context at a time", k.name())
	case o.allContexts && o.watch:
		return usageErrorf("--watch follows one cluster: leave out --all-contexts")
	case o.allContexts:
		return getFleet(cmd, root, o, selector, names)
	}
	if err := o.output.validate(); err != nil {
		return err
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
	if o.watch {
		// Interrupting a watch is how it is meant to end, so it ends the command with success.
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return watchGet(ctx, root.out, cmd.ErrOrStderr(), c, o, k, namespace, selector, names)
	}
	list, missing, err := readObjects(cmd.Context(), c, k, namespace, selector, names)
	if err != nil {
		return err
	}
	if len(missing) == len(names) && len(names) > 0 {
		return notFoundAmong(cmd.ErrOrStderr(), k, namespace, names, missing)
	}
	if err := printList(root.out, cmd.ErrOrStderr(), o.output, k, list, namespace, len(names) == 1); err != nil {
		return err
	}
	// As kubectl: what was found is printed, and the command still fails.
	return notFoundAmong(cmd.ErrOrStderr(), k, namespace, names, missing)
}

// notFoundAmong is the error for the named objects that were missing: the one missing itself,
// or, of several, a count, each missing one named on errOut first.
func notFoundAmong(errOut io.Writer, k *resourceKind, namespace string, names, missing []string) error {
	switch {
	case len(missing) == 0:
		return nil
	case len(names) == 1:
		return k.notFound(namespace, missing[0])
	}
	for _, n := range missing {
		fmt.Fprintln(errOut, k.notFound(namespace, n))
	}
	return fmt.Errorf("%d of %d %s not found", len(missing), len(names), k.name())
}

// readObjects lists a kind's objects in namespace ("" for every one, or a cluster-scoped kind)
// that selector matches, or reads the named ones one by one; it returns the names of those that
// do not exist.
func readObjects(ctx context.Context, c client.Client, k *resourceKind, namespace string, selector labels.Selector, names []string) (client.ObjectList, []string, error) {
	list := k.newList()
	if len(names) == 0 {
		return list, nil, c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector})
	}
	var (
		items   []runtime.Object
		missing []string
	)
	for _, n := range names {
		obj := k.newObject()
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: n}, obj); err != nil {
			if !apierrors.IsNotFound(err) {
				return list, missing, err
			}
			missing = append(missing, n)
			continue
		}
		items = append(items, obj)
	}
	return list, missing, meta.SetList(list, items)
}

// noneFound is what `get` says on stderr when it found nothing, as kubectl does.
func noneFound(k *resourceKind, namespace string) string {
	if k.namespaced && namespace != "" {
		return fmt.Sprintf("No %s found in namespace %q.", k.name(), namespace)
	}
	return fmt.Sprintf("No %s found.", k.name())
}

func printList(out, errOut io.Writer, f *outputFlags, k *resourceKind, list client.ObjectList, namespace string, single bool) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	if f.human() {
		if len(items) == 0 {
			fmt.Fprintln(errOut, noneFound(k, namespace))
			return nil
		}
		return f.printTable(out, k.table(list), k.namespaced && namespace == "")
	}
	if err := setKinds(list); err != nil {
		return err
	}
	if len(items) == 1 && single {
		// One object asked for by name is printed as itself, as kubectl does.
		return f.printObject(out, items[0])
	}
	if f.format() == "name" {
		// One line per object, as kubectl prints a list by name.
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
