package operator

import (
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/internal/usage"
)

// cacheTransform shapes every object as it enters the operator's cache, so that memory follows
// what Landlord compares and not what the objects hold:
//
//   - managed fields are dropped, after reading from them the one thing Landlord needs: whether
//     someone else owns a field in an object's body (apply.MarkForeignFields), which drift
//     repair acts on;
//   - the objects a tenant owns keep their metadata and a digest of their content
//     (apply.KeepInCache) in place of their body and UID, except what Landlord reads:
//     objects of Landlord's own API, a tenant's database credentials and its namespace are
//     kept whole, a quota keeps its pods count, and a rendered component object kstatus's
//     verdict on it (apply.HealthAnnotation);
//   - a Tenant's status.usage is kept as JSON (usage.Compact), decoded by what reads it;
//   - strings repeated across objects (namespaces, label keys and values, owner references) are
//     stored once, and so are equal label maps and owner reference lists (intern.go).
func cacheTransform(scheme *runtime.Scheme) toolscache.TransformFunc {
	shared := newSharing()
	return func(obj any) (any, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return obj, nil
		}
		if apply.CachedDigest(m) != "" || apply.ShapedByCache(m) {
			// Already shaped: an informer may hand the same object over twice (its initial
			// list). The record can only be the transform's own: the API server clears
			// selfLink before it stores an object, so none comes from it. Shaping again would
			// read the managed fields the first pass dropped as none at all.
			return obj, nil
		}
		// The server's values of the cache's own records never count.
		if a := m.GetAnnotations(); a != nil {
			delete(a, apply.HealthAnnotation)
		}
		m.SetSelfLink("")
		apply.MarkForeignFields(m)
		m.SetManagedFields(apply.CacheMarker)
		if ownedByTenant(m) && !landlordKind(scheme, obj) {
			if err := keepWhatIsCompared(scheme, obj, m); err != nil {
				return nil, err
			}
		}
		if t, ok := obj.(*tenancyv1alpha1.Tenant); ok {
			if err := usage.Compact(t); err != nil {
				return nil, err
			}
		}
		internMetadata(obj, m, shared)
		return obj, nil
	}
}

// ownedByTenant reports whether a Tenant controls obj.
func ownedByTenant(m metav1.Object) bool {
	for _, ref := range m.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "Tenant" && ref.APIVersion == tenancyv1alpha1.GroupVersion.String() {
			return true
		}
	}
	return false
}

// landlordKind reports whether obj is of Landlord's own API. Landlord builds none of those for
// a tenant; one that names a Tenant as its controller was made so by someone else, and the
// controllers of its kind read it whole (its spec, its UID), as any other.
func landlordKind(scheme *runtime.Scheme, obj any) bool {
	o, ok := obj.(runtime.Object)
	if !ok {
		return false
	}
	gvk, err := apiutil.GVKForObject(o, scheme)
	return err == nil && gvk.Group == tenancyv1alpha1.GroupVersion.Group
}

// keepWhatIsCompared digests obj's content and drops the body of the kinds Landlord never reads
// back: the applier compares them by digest, and reads one from the API server only when its
// digest moved.
func keepWhatIsCompared(scheme *runtime.Scheme, obj any, m metav1.Object) error {
	if o, ok := obj.(client.Object); ok && m.GetLabels()[tenancyv1alpha1.ComponentLabel] != "" {
		// kstatus needs the body and status; the verdict is what the tenant's status reports.
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			return err
		}
		component.MarkHealth(o, gvk)
	}
	// The digest first: it covers the body about to go.
	digest, err := apply.ContentDigest(m)
	if err != nil {
		return err
	}
	dropped := true
	switch o := obj.(type) {
	case *corev1.Secret:
		if o.Labels[tenancyv1alpha1.DatabaseEngineLabel] != "" {
			// A tenant's database credentials are read back to keep its password.
			dropped = false
			break
		}
		o.Data, o.StringData = nil, nil
	case *corev1.ResourceQuota:
		o.Spec = corev1.ResourceQuotaSpec{}
		// Whether a Frozen tenant's pods are all gone is read from the quota's count.
		used, counted := o.Status.Used[corev1.ResourcePods]
		o.Status = corev1.ResourceQuotaStatus{}
		if counted {
			o.Status.Used = corev1.ResourceList{corev1.ResourcePods: used}
		}
	case *corev1.LimitRange:
		o.Spec = corev1.LimitRangeSpec{}
	case *networkingv1.NetworkPolicy:
		o.Spec = networkingv1.NetworkPolicySpec{}
	case *rbacv1.RoleBinding:
		o.Subjects, o.RoleRef = nil, rbacv1.RoleRef{}
	case *corev1.ConfigMap:
		o.Data, o.BinaryData = nil, nil
	case *corev1.Service:
		o.Spec, o.Status = corev1.ServiceSpec{}, corev1.ServiceStatus{}
	case *unstructured.Unstructured:
		for k := range o.Object {
			if k != "apiVersion" && k != "kind" && k != "metadata" {
				delete(o.Object, k)
			}
		}
	case *corev1.Namespace:
		// Its phase and annotations are read; it is small.
		dropped = false
	case *batchv1.Job:
		// A migration's end is read from its Job's conditions (migrations.Outcome): they stay.
		conditions := o.Status.Conditions
		o.Spec, o.Status = batchv1.JobSpec{}, batchv1.JobStatus{}
		if o.Labels[tenancyv1alpha1.MigrationLabel] != "" {
			o.Status.Conditions = conditions
		}
	default:
		// Any other kind a component renders (a Deployment, a Job): spec and status go.
		dropped = dropSpecAndStatus(obj)
	}
	if dropped {
		apply.KeepInCache(m, digest)
	}
	return nil
}

// dropSpecAndStatus zeroes the Spec and Status fields of a typed object that has a Spec, and
// reports whether it did.
func dropSpecAndStatus(obj any) bool {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	spec := v.Elem().FieldByName("Spec")
	if !spec.IsValid() || !spec.CanSet() {
		return false
	}
	spec.Set(reflect.Zero(spec.Type()))
	if status := v.Elem().FieldByName("Status"); status.IsValid() && status.CanSet() {
		status.Set(reflect.Zero(status.Type()))
	}
	return true
}
