// Package resources builds the Kubernetes objects a tenant owns. Every builder is a pure
// function of the Tenant and the operator configuration: no client, no clock, no randomness,
// so the output is golden-tested and the controller can compare it with the cache.
package resources

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// Build returns every object an Active or Frozen tenant owns, namespace first, so that a
// creator applying them in order never writes into a namespace that does not exist yet; all but
// the NetworkPolicy to its database servers (DatabaseEgress), which follows its placements. The
// tenant's role bindings come last: its users get into a namespace already bounded by its quota,
// limit range and network policies, so that they cannot, say, create budgets the quota would
// have refused before it exists.
func Build(t *tenancyv1alpha1.Tenant, cfg *config.Config) []client.Object {
	ns := cfg.NamespaceName(t.Name)
	objs := []client.Object{Namespace(t, cfg), ResourceQuota(t, cfg, ns), LimitRange(t, cfg, ns)}
	objs = appendObjects(objs, NetworkPolicies(t, cfg, ns)...)
	objs = appendObjects(objs, RoleBindings(t, ns)...)
	return objs
}

func appendObjects[T client.Object](objs []client.Object, more ...T) []client.Object {
	for _, o := range more {
		objs = append(objs, o)
	}
	return objs
}

// Labels are the labels every object of the tenant carries. The manager's cache selects on
// ManagedByLabel, and on ShardLabel, which is the tenant's own: each operator shard caches only
// its tenants' objects. TenantLabel lets people, and the admission policies, tell which tenant
// an object belongs to. (Watches map events back to the tenant through the controller owner
// reference, not through a label.)
func Labels(t *tenancyv1alpha1.Tenant) map[string]string {
	l := map[string]string{
		tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.TenantLabel:    t.Name,
	}
	if shard := t.Labels[tenancyv1alpha1.ShardLabel]; shard != "" {
		l[tenancyv1alpha1.ShardLabel] = shard
	}
	return l
}

// objectMeta is the metadata of an object owned (and controlled) by the tenant.
func objectMeta(t *tenancyv1alpha1.Tenant, namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       namespace,
		Labels:          Labels(t),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(t, tenancyv1alpha1.GroupVersion.WithKind("Tenant"))},
	}
}

// StampComponentObject makes a rendered component object the tenant's: in its namespace,
// labeled as managed (so the operator's cache sees it) and with the component's name, and
// controlled by the tenant (so a change to it re-triggers the tenant).
func StampComponentObject(t *tenancyv1alpha1.Tenant, namespace, component string, obj metav1.Object) {
	obj.SetNamespace(namespace)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	// A template's own shard label, or the one a rendering kept from before the tenant moved
	// between shards, would hide the object from the shard that reconciles it.
	delete(labels, tenancyv1alpha1.ShardLabel)
	maps.Copy(labels, Labels(t))
	labels[tenancyv1alpha1.ComponentLabel] = component
	obj.SetLabels(labels)
	obj.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(t, tenancyv1alpha1.GroupVersion.WithKind("Tenant"))})
}

// PodStopGracePeriodSeconds is how long the pods Landlord deletes have to stop: Kubernetes'
// default.
const PodStopGracePeriodSeconds = 30
