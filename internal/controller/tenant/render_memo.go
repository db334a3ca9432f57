package tenant

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/component"
)

// renderMemo remembers each tenant component's last rendering and a fingerprint of what it was
// rendered from. Parsing the template, validating the values against its schema and decoding
// the YAML took most of the CPU of a no-op reconcile of a tenant with a component, to produce
// the same objects every time. A rendering is kept as its objects' JSON: as unstructured maps,
// two small objects took 3.7 KB per tenant (37 MB of live heap at 10,000 tenants); decoding
// them costs a few microseconds per reconcile, less than the deep copy a kept map needed.
type renderMemo struct {
	mu sync.Mutex
	// byNamespace maps a tenant namespace to its components' renderings.
	byNamespace map[string]map[string]rendering
}

type rendering struct {
	fingerprint apply.Fingerprint
	objs        [][]byte
}

// renderInputs is everything a rendering depends on. The template's spec is immutable, so its
// UID stands for it; the operator's default values are fixed for the life of the process.
type renderInputs struct {
	Template string
	Values   json.RawMessage
	Input    any
}

// get returns the remembered rendering, decoded afresh: the caller may change it.
func (m *renderMemo) get(namespace, component string, fingerprint apply.Fingerprint) ([]*unstructured.Unstructured, bool) {
	m.mu.Lock()
	e, ok := m.byNamespace[namespace][component]
	m.mu.Unlock()
	if !ok || e.fingerprint != fingerprint {
		return nil, false
	}
	out := make([]*unstructured.Unstructured, len(e.objs))
	for i, data := range e.objs {
		out[i] = &unstructured.Unstructured{}
		if err := out[i].UnmarshalJSON(data); err != nil {
			// Encoded by put from a valid object; render again rather than fail.
			return nil, false
		}
	}
	return out, true
}

// put remembers a rendering, encoded. One that cannot be encoded is not remembered: it is
// rendered again next time.
func (m *renderMemo) put(namespace, component string, fingerprint apply.Fingerprint, objs []*unstructured.Unstructured) {
	kept := make([][]byte, len(objs))
	for i, obj := range objs {
		data, err := obj.MarshalJSON()
		if err != nil {
			return
		}
		kept[i] = data
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byNamespace == nil {
		m.byNamespace = map[string]map[string]rendering{}
	}
	if m.byNamespace[namespace] == nil {
		m.byNamespace[namespace] = map[string]rendering{}
	}
	m.byNamespace[namespace][component] = rendering{fingerprint: fingerprint, objs: kept}
}

func (m *renderMemo) forget(namespace string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byNamespace, namespace)
}

// retain drops the namespace's renderings of the components keep does not name: components
// no longer in the tenant's spec.
func (m *renderMemo) retain(namespace string, keep func(component string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for c := range m.byNamespace[namespace] {
		if !keep(c) {
			delete(m.byNamespace[namespace], c)
		}
	}
	if len(m.byNamespace[namespace]) == 0 {
		delete(m.byNamespace, namespace)
	}
}

// Len is the number of renderings kept, over every namespace.
func (m *renderMemo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, byComponent := range m.byNamespace {
		n += len(byComponent)
	}
	return n
}

// ForgetWhatIsGone drops what the reconciler remembers (renderings, objects found in place) as
// what it is about goes, so that its memory follows what exists and not everything that ever
// did: a component removed from a tenant's spec, an object pruned from a namespace that stays
// (a component's, a shared secret's copy), a namespace, a tenant. Each event costs only what it
// is about. Forgetting too much is harmless: the next reconcile compares that object in full
// and remembers it again. Call it after SetupWithManager.
func (r *Reconciler) ForgetWhatIsGone(ctx context.Context, informers cache.Informers) error {
	tenants, err := informers.GetInformer(ctx, &tenancyv1alpha1.Tenant{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	if _, err := tenants.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			old, okOld := oldObj.(*tenancyv1alpha1.Tenant)
			t, okNew := newObj.(*tenancyv1alpha1.Tenant)
			if okOld && okNew {
				r.forgetRemovedComponents(old, t)
				r.own.observe(t)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := deletedObject(obj).(*tenancyv1alpha1.Tenant); ok {
				r.forget(r.Config.NamespaceName(t.Name))
				r.own.forget(t.Name)
			}
		},
	}); err != nil {
		return err
	}
	// The kinds the tenant controller owns besides the components' (whose objects are forgotten
	// from the tenant's status inventory, above) are forgotten by the controller's own handler
	// of each (owned, below).
	return nil
}

// owned is the tenant controller's handler of a kind it owns: it enqueues the tenant that
// controls an object, as the builder's Owns does, and on a deletion first forgets what is
// remembered of the object (a namespace: everything of its tenant). One handler per kind, not
// Owns' and a second one beside it: each handler of an informer has a buffer of pending
// notifications, which grows whenever the handler falls behind (a restart's initial list) and
// never shrinks again, and each event costs every handler a goroutine hop.
func (r *Reconciler) owned(mgr ctrl.Manager) handler.EventHandler {
	enqueue := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &tenancyv1alpha1.Tenant{}, handler.OnlyControllerOwner())
	return handler.Funcs{
		CreateFunc:  enqueue.Create,
		UpdateFunc:  enqueue.Update,
		GenericFunc: enqueue.Generic,
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			switch gone := e.Object.(type) {
			case *corev1.Namespace:
				r.forget(gone.Name)
			default:
				// The cache's objects carry no kind; the scheme knows every kind owned.
				if gvk, err := apiutil.GVKForObject(gone, mgr.GetScheme()); err == nil {
					r.Applied.ForgetObject(gvk.GroupKind(), gone.GetNamespace(), gone.GetName())
				}
			}
			enqueue.Delete(ctx, e, q)
		},
	}
}

// forgetRemovedComponents drops the renderings of components removed from the tenant's spec,
// and what is remembered of the objects its status no longer lists: those were pruned.
func (r *Reconciler) forgetRemovedComponents(old, t *tenancyv1alpha1.Tenant) {
	ns := r.Config.NamespaceName(t.Name)
	r.rendered.retain(ns, func(name string) bool {
		return slices.ContainsFunc(t.Spec.Components, func(c tenancyv1alpha1.Component) bool { return c.Name == name })
	})
	current := map[string]bool{}
	for _, c := range t.Status.Components {
		for _, key := range c.Inventory {
			current[key] = true
		}
	}
	for _, c := range old.Status.Components {
		for _, key := range c.Inventory {
			if current[key] {
				continue
			}
			if gk, name, err := component.ParseInventoryKey(key); err == nil {
				r.Applied.ForgetObject(gk, ns, name)
			}
		}
	}
}

// deletedObject is the object of a delete notification, which is the last state the informer
// knew when it missed the deletion itself.
func deletedObject(obj any) any {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return obj
}

// Renderings is how many component renderings the reconciler keeps: the suite checks that
// none outlives its component or its tenant.
func (r *Reconciler) Renderings() int { return r.rendered.Len() }
