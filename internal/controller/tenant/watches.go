package tenant

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/resources"
)

// templateSecretHandler maps a change to a secret in the template namespace to the tenants it
// is (or, before the change, was) shared with, so a change fans out to them at once and a secret
// that stops matching a tenant is removed from it.
func (r *Reconciler) templateSecretHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		var secrets []*corev1.Secret
		for _, o := range objs {
			if s, ok := o.(*corev1.Secret); ok && s.Namespace == r.Config.Secrets.TemplateNamespace {
				secrets = append(secrets, s)
			}
		}
		if len(secrets) == 0 {
			return
		}
		tenants := &tenancyv1alpha1.TenantList{}
		if err := r.Client.List(ctx, tenants, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "listing tenants for a template secret change")
			return
		}
		for i := range tenants.Items {
			t := &tenants.Items[i]
			for _, s := range secrets {
				// An invalid selector shares with no tenant; the tenant's reconcile reports it.
				if shared, err := resources.SharedFor(s, t); shared || err != nil {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: t.Name}})
					break
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// databaseServerHandler re-triggers the tenants whose databases are not ready when a
// DatabaseServer appears or changes: one may be waiting for a server to place on, or for a
// server to come back.
func (r *Reconciler) databaseServerHandler() handler.EventHandler {
	// enqueue reads the tenants with databases not ready from their index: a server event costs
	// the tenants that wait, not the fleet.
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		tenants := &tenancyv1alpha1.TenantList{}
		if err := r.Client.List(ctx, tenants, client.MatchingFields{indexes.TenantDatabasesNotReady: indexes.NotReady}, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "listing tenants for a database server change")
			return
		}
		for i := range tenants.Items {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: tenants.Items[i].Name}})
		}
	}
	// on enqueues the tenants with databases on the server, from the index: their NetworkPolicy
	// to the server (landlord-allow-database-egress) and their Secrets follow its address.
	on := func(ctx context.Context, server string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		tenants := &tenancyv1alpha1.TenantList{}
		if err := r.Client.List(ctx, tenants, client.MatchingFields{indexes.TenantDatabaseServer: server}, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "listing tenants on a database server")
			return
		}
		for i := range tenants.Items {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: tenants.Items[i].Name}})
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// A server re-created under its name, maybe at another address.
			on(ctx, e.Object.GetName(), q)
			enqueue(ctx, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// Its address is no longer one the tenants' pods may reach.
			on(ctx, e.Object.GetName(), q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldS, okOld := e.ObjectOld.(*tenancyv1alpha1.DatabaseServer)
			newS, okNew := e.ObjectNew.(*tenancyv1alpha1.DatabaseServer)
			if okOld && okNew && oldS.Generation == newS.Generation &&
				meta.IsStatusConditionTrue(oldS.Status.Conditions, tenancyv1alpha1.ReadyCondition) == meta.IsStatusConditionTrue(newS.Status.Conditions, tenancyv1alpha1.ReadyCondition) &&
				oldS.Status.Tenants <= newS.Status.Tenants {
				// Nothing a waiting tenant could use: the server neither became Ready nor freed room.
				return
			}
			if okNew && (!okOld || oldS.Generation != newS.Generation) {
				// The address may have moved: every tenant on the server rewrites its Secrets;
				// or spec.connectionLimit did, which every login on it gets.
				on(ctx, newS.Name, q)
			}
			enqueue(ctx, q)
		},
	}
}

// tenantsPinning maps a ComponentTemplate to the tenants that pin its component version.
func (r *Reconciler) tenantsPinning(ctx context.Context, obj client.Object) []reconcile.Request {
	tenants := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, tenants, client.MatchingFields{indexes.TenantComponentTemplate: obj.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing tenants pinning a component template")
		return nil
	}
	out := make([]reconcile.Request, 0, len(tenants.Items))
	for i := range tenants.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: tenants.Items[i].Name}})
	}
	return out
}
