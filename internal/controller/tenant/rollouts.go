package tenant

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// rolloutHandler re-triggers the tenants a rollout has just released: those of the waves it has
// just released, and those that have just joined a wave released before (tenants chosen late
// join the last wave, at its end). Tenants released before are not touched: their version is
// already the rollout's, and a deleted rollout changes nothing for them.
func (r *Reconciler) rolloutHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, old *tenancyv1alpha1.ComponentRollout) {
		ro, ok := obj.(*tenancyv1alpha1.ComponentRollout)
		if !ok {
			return
		}
		for i := 0; i < int(ro.Status.Released) && i < len(ro.Status.Waves); i++ {
			from := 0
			if old != nil && i < int(old.Status.Released) && i < len(old.Status.Waves) {
				from = len(old.Status.Waves[i].Tenants)
			}
			for _, name := range ro.Status.Waves[i].Tenants[min(from, len(ro.Status.Waves[i].Tenants)):] {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object, nil)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, ok := e.ObjectOld.(*tenancyv1alpha1.ComponentRollout)
			if !ok {
				return
			}
			enqueue(q, e.ObjectNew, old)
		},
	}
}
