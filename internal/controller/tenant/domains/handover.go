package domains

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/internal/resources"
)

// The handover lists Ingresses and routes in every namespace and deletes other tenants' that
// name a domain changing hands (the same grants the component kinds need, in
// internal/component/kinds.go).
//
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=list;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes;grpcroutes;tlsroutes,verbs=get;list;delete

// HandoverRecheck is how soon a tenant waiting for a domain looks again: the deletion of
// another tenant's Ingress or route is not an event the operator watches (it caches only its
// own objects), and neither is a change to the namespace of another shard's tenant.
const HandoverRecheck = 5 * time.Second

// AdmittedChanged passes deleted namespaces and updates that change the domains
// annotation.
var AdmittedChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[tenancyv1alpha1.DomainsAnnotation] != e.ObjectNew.GetAnnotations()[tenancyv1alpha1.DomainsAnnotation]
	},
}

// TenantsTakingDomainsOf maps a tenant namespace to the other tenants that list one of the
// domains it admits: when it stops admitting one (it is called with the old and the new
// namespace of an update), a tenant waiting to take that domain over looks again at once rather
// than at its next recheck. Reads are from the cache.
func (r *Engine) TenantsTakingDomainsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	owner := obj.GetLabels()[tenancyv1alpha1.TenantLabel]
	if owner == "" {
		return nil
	}
	seen := map[string]bool{owner: true}
	var requests []reconcile.Request
	for _, d := range strings.Split(obj.GetAnnotations()[tenancyv1alpha1.DomainsAnnotation], ",") {
		if d == "" {
			continue
		}
		_ = r.overlapping(ctx, d, func(other *tenancyv1alpha1.Tenant) {
			if !seen[other.Name] {
				seen[other.Name] = true
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKey{Name: other.Name}})
			}
		})
	}
	return requests
}

// handOver makes way for a domain t is about to take: one no tenant holds and t does not serve
// yet. Holding is decided from spec and namespace annotations, while the admission policies
// check Ingresses and routes only when they are written, so a tenant that gave the domain up may
// still serve it: its namespace may still admit it (its own reconcile has not run yet), and its
// Ingresses and routes naming it stay until someone deletes them. Those objects are deleted
// here, each named in an event on both tenants; the domain is t's once no other tenant's
// namespace admits it and none of their objects names it, so two tenants never serve one host.
// handOver returns what t still waits for, or "" when the domain is free to take.
func (r *Engine) handOver(ctx context.Context, t *tenancyv1alpha1.Tenant, d string) (string, error) {
	own := r.Config.NamespaceName(t.Name)
	// From the API server: the namespaces of other shards' tenants are not in this shard's
	// cache, and neither are tenants' own Ingresses. This runs only while a domain changes hands.
	selector, err := metav1.LabelSelectorAsSelector(policy.TenantNamespaces())
	if err != nil {
		return "", err
	}
	namespaces := &metav1.PartialObjectMetadataList{}
	namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.APIReader.List(ctx, namespaces, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return "", fmt.Errorf("listing tenant namespaces: %w", err)
	}
	var waiting []string
	tenantOf := map[string]string{}
	for _, ns := range namespaces.Items {
		if ns.Name == own {
			continue
		}
		tenantOf[ns.Name] = ns.Labels[tenancyv1alpha1.TenantLabel]
		for _, have := range strings.Split(ns.Annotations[tenancyv1alpha1.DomainsAnnotation], ",") {
			if have != "" && overlap(have, d) {
				waiting = append(waiting, fmt.Sprintf("namespace %s of tenant %s still admits %s", ns.Name, tenantOf[ns.Name], have))
				break
			}
		}
	}

	naming, err := r.objectsNaming(ctx, d, tenantOf)
	if err != nil {
		return "", err
	}
	for _, obj := range naming {
		ref := fmt.Sprintf("%s %s/%s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName())
		if obj.GetDeletionTimestamp() == nil {
			gone, err := r.deleteForHandover(ctx, t, obj, ref, tenantOf[obj.GetNamespace()], d)
			if err != nil {
				return "", err
			}
			if gone {
				continue
			}
		}
		if finalizers := obj.GetFinalizers(); len(finalizers) > 0 {
			waiting = append(waiting, fmt.Sprintf("%s, deleted and held by finalizers %s", ref, strings.Join(finalizers, ", ")))
		} else {
			waiting = append(waiting, ref+", being deleted")
		}
	}
	if len(waiting) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s passes to this tenant once no other tenant admits or serves it: %s", d, strings.Join(waiting, "; ")), nil
}

// deleteForHandover deletes another tenant's object naming d, with a UID precondition so that a
// replacement created meanwhile is looked at afresh, and says whether it is gone.
func (r *Engine) deleteForHandover(ctx context.Context, t *tenancyv1alpha1.Tenant, obj client.Object, ref, from, d string) (bool, error) {
	err := r.Client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		// Replaced since it was listed: the next look decides about the new one.
		return false, nil
	case err != nil:
		return false, fmt.Errorf("deleting %s, which names %s: %w", ref, d, err)
	}
	note := fmt.Sprintf("deleted %s of tenant %s: it names %s, which tenant %s takes over", ref, from, d, t.Name)
	r.Recorder.Eventf(t, obj, corev1.EventTypeNormal, tenancyv1alpha1.ReasonDomainHandover, "Delete", "%s", note)
	old := &tenancyv1alpha1.Tenant{}
	if from != "" && r.Client.Get(ctx, client.ObjectKey{Name: from}, old) == nil {
		r.Recorder.Eventf(old, obj, corev1.EventTypeNormal, tenancyv1alpha1.ReasonDomainHandover, "Delete", "%s", note)
	}
	// Gone at once unless finalizers hold it.
	live := obj.DeepCopyObject().(client.Object)
	switch err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live); {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	case live.GetUID() != obj.GetUID():
		return true, nil
	}
	obj.SetFinalizers(live.GetFinalizers())
	return false, nil
}

// objectsNaming lists the Ingresses and routes in the given namespaces (other tenants') with a
// host overlapping d.
func (r *Engine) objectsNaming(ctx context.Context, d string, namespaces map[string]string) ([]client.Object, error) {
	var naming []client.Object
	ingresses := &networkingv1.IngressList{}
	if err := r.APIReader.List(ctx, ingresses); err != nil {
		return nil, fmt.Errorf("listing Ingresses: %w", err)
	}
	for i := range ingresses.Items {
		ing := &ingresses.Items[i]
		if _, ok := namespaces[ing.Namespace]; !ok {
			continue
		}
		var hosts []string
		for _, rule := range ing.Spec.Rules {
			hosts = append(hosts, rule.Host)
		}
		for _, tls := range ing.Spec.TLS {
			hosts = append(hosts, tls.Hosts...)
		}
		if namesDomain(hosts, d) {
			ing.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("Ingress"))
			naming = append(naming, ing)
		}
	}
	err := resources.EachRouteKind(func(gvk schema.GroupVersionKind) error {
		routes := &unstructured.UnstructuredList{}
		routes.SetGroupVersionKind(gvk)
		if err := r.APIReader.List(ctx, routes); err != nil {
			return err
		}
		for i := range routes.Items {
			route := &routes.Items[i]
			if _, ok := namespaces[route.GetNamespace()]; !ok {
				continue
			}
			hosts, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
			if namesDomain(hosts, d) {
				route.SetGroupVersionKind(gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List")))
				naming = append(naming, route)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return naming, nil
}

// namesDomain reports whether any host can be a name of d: equal, or one a wildcard over the
// other, as the admission policies match them.
func namesDomain(hosts []string, d string) bool {
	return slices.ContainsFunc(hosts, func(h string) bool { return h != "" && overlap(h, d) })
}
