package main

import (
	"context"
	"slices"
	"strings"
	"sync"

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
		Short: "Show one tenant as describe does, and every object Landlord manages for it.",
		Long: `Show one tenant in one view: what "describe tenant TENANT" shows (its state, whether it is Ready
as kstatus computes it, the way Flux and kubectl wait judge it, its conditions, namespace, shard
and domains, the version each component runs, its databases and the events about it), and the
objects Landlord manages for it in its namespace: those labeled tenancy.landlord.dev/tenant=TENANT,
of every namespaced kind the API server serves, with the component that rendered each. -o
json|yaml prints the Tenant object itself.`,
		Example: `  landlordctl status acme
  landlordctl status acme -o yaml`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("Tenant"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), root, output, args[0])
		},
	}
	output = addOutputFlags(cmd, false)
	return cmd
}

func runStatus(ctx context.Context, root *rootOptions, output *outputFlags, name string) error {
	if err := output.validate(); err != nil {
		return err
	}
	cfg, err := root.restConfig()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		return err
	}
	k := kindOf("Tenant")
	t := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		return k.wrapNotFound("", name, err)
	}
	if !output.human() {
		t.SetGroupVersionKind(k.gvk())
		return output.printObject(root.out, t)
	}
	objects := &tenantObjects{}
	if t.Status.Namespace != "" {
		objects.objects, objects.err = managedObjects(ctx, cfg, t.Status.Namespace, name)
	}
	d := newDescriber(root.out)
	d.readEvents(ctx, c, k, t)
	describeTenant(d, t, objects)
	return d.flush()
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
