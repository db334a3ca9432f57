package tenant

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/component"
)

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
	r.components().RetainRenderings(ns, func(name string) bool {
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
func (r *Reconciler) Renderings() int { return r.components().Renderings() }
