package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func newStatusCommand(root *rootOptions) *cobra.Command {
	var output *outputFlags
	cmd := &cobra.Command{
		Use:   "status TENANT",
		Short: "Show one tenant: conditions, namespace, components, databases and the objects Landlord manages for it.",
		Long: `Show one tenant in one view: its state and whether it is Ready (as kstatus computes it, the way
Flux and kubectl wait judge it), its conditions with their reasons and messages, its namespace,
its components (the version applied, whether it is ready and why not), its databases, and the
objects Landlord manages for it in its namespace (those labeled
tenancy.landlord.dev/tenant=TENANT). -o json|yaml prints the Tenant object itself.`,
		Example: `  landlordctl status acme
  landlordctl status acme -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), root, output, args[0])
		},
	}
	output = addOutputFlags(cmd, false)
	return cmd
}

func runStatus(ctx context.Context, root *rootOptions, output *outputFlags, name string) error {
	if !output.human() {
		if _, err := output.print.ToPrinter(); err != nil {
			return err
		}
	}
	cfg, err := root.restConfig()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		return err
	}
	t := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		return err
	}
	if !output.human() {
		t.SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind("Tenant"))
		return output.printObject(root.out, t)
	}
	var objects []managedObject
	var objectsErr error
	if t.Status.Namespace != "" {
		objects, objectsErr = managedObjects(ctx, cfg, t.Status.Namespace, name)
	}
	return printStatus(root.out, t, objects, objectsErr)
}

// kstatusOf is a Landlord object's status as kstatus computes it, as Flux's health checks and
// kubectl wait judge it: Current (Ready at the latest generation), InProgress, Failed
// (Stalled) or Terminating, and why.
func kstatusOf(obj client.Object, kind string) (*kstatus.Result, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind(kind))
	return kstatus.Compute(u)
}

func printStatus(out io.Writer, t *tenancyv1alpha1.Tenant, objects []managedObject, objectsErr error) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	state := string(t.Spec.State)
	if state == "" {
		state = string(tenancyv1alpha1.StateActive)
	}
	fmt.Fprintf(w, "Tenant:\t%s\n", t.Name)
	if org := t.OrganizationName(); org != "" {
		fmt.Fprintf(w, "Organization:\t%s\n", org)
	}
	if email := t.ContactEmail(); email != "" {
		fmt.Fprintf(w, "Email:\t%s\n", email)
	}
	fmt.Fprintf(w, "State:\t%s\n", state)
	fmt.Fprintf(w, "Namespace:\t%s\n", orNone(t.Status.Namespace))
	fmt.Fprintf(w, "Generation:\t%d (observed %d)\n", t.Generation, t.Status.ObservedGeneration)
	if res, err := kstatusOf(t, "Tenant"); err == nil {
		fmt.Fprintf(w, "Status:\t%s: %s\n", res.Status, res.Message)
	}
	if !t.DeletionTimestamp.IsZero() {
		fmt.Fprintf(w, "Deleting:\tsince %s\n", t.DeletionTimestamp.UTC().Format("2006-01-02 15:04:05Z"))
	}

	fmt.Fprintln(w, "\nConditions:")
	if len(t.Status.Conditions) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, c := range sortedConditions(t.Status.Conditions) {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(c.LastTransitionTime), oneLine(c.Message))
		}
	}

	fmt.Fprintln(w, "\nComponents:")
	if len(t.Spec.Components) == 0 && len(t.Status.Components) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		fmt.Fprintln(w, "  NAME\tWANTED\tAPPLIED\tREADY\tMESSAGE")
		seen := map[string]bool{}
		for _, c := range t.Spec.Components {
			seen[c.Name] = true
			applied, ready, msg := "<none>", "false", ""
			if i := slices.IndexFunc(t.Status.Components, func(s tenancyv1alpha1.ComponentStatus) bool { return s.Name == c.Name }); i >= 0 {
				s := t.Status.Components[i]
				applied, ready, msg = s.Version, fmt.Sprint(s.Ready), s.Message
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.Name, c.Version, applied, ready, oneLine(msg))
		}
		for _, s := range t.Status.Components {
			if !seen[s.Name] {
				// Removed from the spec; the operator has not pruned it yet.
				fmt.Fprintf(w, "  %s\t<removed>\t%s\t%t\t%s\n", s.Name, s.Version, s.Ready, oneLine(s.Message))
			}
		}
	}

	fmt.Fprintln(w, "\nDatabases:")
	if len(t.Status.Databases) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		fmt.Fprintln(w, "  NAME\tENGINE\tSERVER\tDATABASE\tUSER\tSECRET")
		for _, d := range t.Status.Databases {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", d.Name, d.Engine, d.Server, d.Database, d.Username, d.SecretName)
		}
	}

	fmt.Fprintln(w, "\nObjects:")
	switch {
	case t.Status.Namespace == "":
		fmt.Fprintln(w, "  <none: the tenant has no namespace>")
	case objectsErr != nil:
		fmt.Fprintf(w, "  <could not be listed: %v>\n", objectsErr)
	case len(objects) == 0:
		fmt.Fprintln(w, "  <none>")
	default:
		fmt.Fprintln(w, "  KIND\tNAME\tCOMPONENT")
		for _, o := range objects {
			fmt.Fprintf(w, "  %s\t%s\t%s\n", o.kind, o.name, orNone(o.component))
		}
	}
	return w.Flush()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// managedObject is one object Landlord manages for a tenant.
type managedObject struct {
	kind, name, component string
}

// managedObjects lists every object in the tenant's namespace that carries the tenant's label,
// of every namespaced kind the API server serves (Landlord's own and the components' kinds,
// which differ per cluster), reading metadata only.
func managedObjects(ctx context.Context, cfg *rest.Config, namespace, tenant string) ([]managedObject, error) {
	// One list per kind the server serves: some tens of quick reads, which client-go's default
	// rate limit (5 a second) would stretch to seconds. Deprecation warnings about kinds the
	// tenant does not use are not the reader's concern.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	cfg.WarningHandler = rest.NoWarnings{}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// Some groups may be unavailable (an aggregated API down); the others are still listed.
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	selector := tenancyv1alpha1.TenantLabel + "=" + tenant
	var (
		mu  sync.Mutex
		out []managedObject
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			// Events name objects rather than being managed; subresources cannot be listed.
			if !slices.Contains(r.Verbs, "list") || strings.Contains(r.Name, "/") || r.Name == "events" {
				continue
			}
			gvr := gv.WithResource(r.Name)
			kind := r.Kind
			if gv.Group != "" {
				kind += "." + gv.Group
			}
			g.Go(func() error {
				objs, err := mc.Resource(gvr).Namespace(namespace).List(gctx, metav1.ListOptions{LabelSelector: selector})
				if err != nil {
					// A kind this user may not list is left out rather than failing the view.
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				for _, o := range objs.Items {
					out = append(out, managedObject{kind: kind, name: o.Name, component: o.Labels[tenancyv1alpha1.ComponentLabel]})
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b managedObject) int {
		if c := strings.Compare(a.kind, b.kind); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return out, nil
}
