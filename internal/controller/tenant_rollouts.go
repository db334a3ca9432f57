package controller

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

// versionOf is the version a component of the tenant runs, and the ComponentRollout that chose
// it ("" when the spec did). A pinned component runs its spec's version. One that follows
// rollouts runs the version of the newest rollout that released it; else the version a rollout
// gave it before, kept when that rollout is deleted (deleting a finished rollout from Git must
// not roll tenants back); else its spec's. Read from the cache's index: no request.
func (r *TenantReconciler) versionOf(ctx context.Context, t *tenancyv1alpha1.Tenant, c tenancyv1alpha1.Component) (version, rollout string, err error) {
	if !c.FollowRollouts {
		return c.Version, "", nil
	}
	list := &tenancyv1alpha1.ComponentRolloutList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{RolloutReleasedIndex: rolloutKey(c.Name, t.Name)}); err != nil {
		return "", "", err
	}
	var newest *tenancyv1alpha1.ComponentRollout
	for i := range list.Items {
		ro := &list.Items[i]
		if ro.Spec.Component != c.Name || !ro.DeletionTimestamp.IsZero() {
			continue
		}
		if newest == nil || newerRollout(ro, newest) {
			newest = ro
		}
	}
	if newest != nil {
		return newest.Spec.Version, newest.Name, nil
	}
	for _, st := range t.Status.Components {
		if st.Name == c.Name && st.Rollout != "" && st.Version != "" {
			return st.Version, st.Rollout, nil
		}
	}
	return c.Version, "", nil
}

// newerRollout orders rollouts by creation, then by name.
func newerRollout(a, b *tenancyv1alpha1.ComponentRollout) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// rolloutHandler re-triggers the tenants of the waves a rollout has just released. Tenants of
// waves released before are not touched: their version is already the rollout's, and a
// deleted rollout changes nothing for them.
func (r *TenantReconciler) rolloutHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, from int32) {
		ro, ok := obj.(*tenancyv1alpha1.ComponentRollout)
		if !ok {
			return
		}
		for i := int(from); i < int(ro.Status.Released) && i < len(ro.Status.Waves); i++ {
			for _, name := range ro.Status.Waves[i].Tenants {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object, 0)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, ok := e.ObjectOld.(*tenancyv1alpha1.ComponentRollout)
			if !ok {
				return
			}
			enqueue(q, e.ObjectNew, old.Status.Released)
		},
	}
}
