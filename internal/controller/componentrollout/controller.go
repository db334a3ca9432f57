package componentrollout

import (
	"context"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/rollout"
)

// Reconciler moves the tenants of each ComponentRollout to its version, wave by
// wave. It writes only the rollout's status: a tenant learns that its wave is released from
// that status (indexes.RolloutReleased), and reports the version it runs in its own. Everything
// the rollout needs to carry on after a restart is in its status; nothing is kept in memory.
type Reconciler struct {
	Client client.Client
	// Classes is whether TenantClasses are served: a tenant without maintenance windows of its
	// own has its class's (read from the cache).
	Classes bool
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=componentrollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=componentrollouts/status,verbs=get;patch

// SetupWithManager registers the controller: a rollout is looked at again when it changes, when
// a tenant whose component follows rollouts changes, when its template is published, and when
// another rollout of its component is deleted.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("componentrollout").
		For(&tenancyv1alpha1.ComponentRollout{}).
		Watches(&tenancyv1alpha1.Tenant{}, r.tenantHandler()).
		Watches(&tenancyv1alpha1.ComponentTemplate{}, handler.EnqueueRequestsFromMapFunc(r.rolloutsOfTemplate)).
		Watches(&tenancyv1alpha1.ComponentRollout{}, r.deletedRolloutHandler()).
		Complete(shutdown.Quiet(r))
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ro := &tenancyv1alpha1.ComponentRollout{}
	if err := r.Client.Get(ctx, req.NamespacedName, ro); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ro.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	write := func(s tenancyv1alpha1.ComponentRolloutStatus, requeue time.Duration) (ctrl.Result, error) {
		// The status is the rollout's only record of what was planned and released: a write
		// from a cache that has not seen the last one is refused, and the rollout looked at
		// again, rather than planning or releasing twice.
		if err := writes.PatchStatus(ctx, r.Client, ro, &ro.Status, s, client.MergeFromWithOptimisticLock{}); err != nil {
			return writes.RetryConflict(err)
		}
		return ctrl.Result{RequeueAfter: requeue}, nil
	}

	selector, err := metav1.LabelSelectorAsSelector(&ro.Spec.Selector)
	if err != nil {
		// The API server validates label selectors only loosely.
		return write(computeStatus(ro, observation{invalidSelector: err}))
	}
	tmplName := tenancyv1alpha1.ComponentTemplateName(ro.Spec.Component, ro.Spec.Version)
	if err := r.Client.Get(ctx, client.ObjectKey{Name: tmplName}, &tenancyv1alpha1.ComponentTemplate{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// No tenant is moved to a version that cannot render; publishing it resumes.
		return write(computeStatus(ro, observation{missingTemplate: tmplName}))
	}

	// Only the tenants that let rollouts move the component, from the index: a rollout costs
	// its own tenants, not the fleet. No other tenant is ever chosen, and a tenant of a wave
	// that is not among them does not follow the rollout, so it counts as skipped unread as it
	// would read (rollout.Follows). Only read: no need for the cache's deep copy.
	tenants := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, tenants, client.MatchingFields{indexes.TenantFollowedComponent: ro.Spec.Component}, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	higher, err := r.higherRollouts(ctx, ro)
	if err != nil {
		return ctrl.Result{}, err
	}
	superseded := make(map[string]bool, len(higher))
	for _, h := range higher {
		superseded[h.Rollout.Name] = true
	}
	byName := make(map[string]*tenancyv1alpha1.Tenant, len(tenants.Items))
	windows := classWindows{reader: r.Client, served: r.Classes}
	for i := range tenants.Items {
		t, err := windows.of(ctx, &tenants.Items[i])
		if err != nil {
			return ctrl.Result{}, err
		}
		byName[tenants.Items[i].Name] = t
	}
	var chosen []string
	for _, c := range rollout.Choose(ro, selector, higher, tenants.Items) {
		if c.Why == "" {
			chosen = append(chosen, c.Tenant)
		}
	}
	var getErr error
	waves, released := rollout.Forget(ro.Status.Waves, ro.Status.Released, func(name string) bool {
		if byName[name] != nil {
			return true
		}
		// A tenant of a finished wave that no longer follows the rollout still exists and keeps
		// its place, so that following again does not plan it a second time: only a deleted one
		// is forgotten. Looked up by name, so the cost is the rollout's waves, not the fleet.
		exists, err := r.tenantExists(ctx, name)
		if err != nil {
			getErr = err
			return true
		}
		return exists
	})
	if getErr != nil {
		return ctrl.Result{}, getErr
	}
	return write(computeStatus(ro, observation{
		selector: selector, tenants: byName, superseded: superseded, chosen: chosen,
		waves: waves, released: released, now: r.now(),
	}))
}

// tenantExists reports whether the cache holds the tenant name.
func (r *Reconciler) tenantExists(ctx context.Context, name string) (bool, error) {
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{}, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// higherRollouts lists the rollouts of ro's component that rank above it (rollout.Higher), from
// the cache.
func (r *Reconciler) higherRollouts(ctx context.Context, ro *tenancyv1alpha1.ComponentRollout) ([]rollout.Chooser, error) {
	list := &tenancyv1alpha1.ComponentRolloutList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return rollout.Higher(ro, list.Items), nil
}

// tenantHandler maps a tenant's changes to the rollouts of the components it lets rollouts
// move. A change of what chooses it (labels, spec, deletion) may add it to any of them, finished
// ones included; a change of its status only matters to the rollouts under way, which wait on it.
func (r *Reconciler) tenantHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], underWayOnly bool, tenants ...client.Object) {
		follows := map[string]bool{}
		for _, obj := range tenants {
			if t, ok := obj.(*tenancyv1alpha1.Tenant); ok {
				for _, c := range t.Spec.Components {
					if c.FollowRollouts {
						follows[c.Name] = true
					}
				}
			}
		}
		if len(follows) == 0 {
			return
		}
		for _, req := range r.rollouts(ctx, func(ro *tenancyv1alpha1.ComponentRollout) bool {
			return follows[ro.Spec.Component] && (!underWayOnly || !meta.IsStatusConditionTrue(ro.Status.Conditions, tenancyv1alpha1.ReadyCondition))
		}) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, false, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*tenancyv1alpha1.Tenant)
			now, okNew := e.ObjectNew.(*tenancyv1alpha1.Tenant)
			if !okOld || !okNew {
				return
			}
			chosenChanged := old.Generation != now.Generation || !maps.Equal(old.Labels, now.Labels) || old.DeletionTimestamp.IsZero() != now.DeletionTimestamp.IsZero()
			enqueue(ctx, q, !chosenChanged, old, now)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, true, e.Object)
		},
	}
}

// deletedRolloutHandler maps a deleted rollout to the other rollouts of its component: the
// tenants it chose may now be theirs to take (a rollback applied while the rollout it rolls back
// from was still there waits for this).
func (r *Reconciler) deletedRolloutHandler() handler.EventHandler {
	return handler.Funcs{
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			gone, ok := e.Object.(*tenancyv1alpha1.ComponentRollout)
			if !ok {
				return
			}
			for _, req := range r.rollouts(ctx, func(ro *tenancyv1alpha1.ComponentRollout) bool {
				return ro.Spec.Component == gone.Spec.Component && ro.Name != gone.Name
			}) {
				q.Add(req)
			}
		},
	}
}

// rolloutsOfTemplate maps a published ComponentTemplate to the rollouts of its version.
func (r *Reconciler) rolloutsOfTemplate(ctx context.Context, obj client.Object) []reconcile.Request {
	tmpl, ok := obj.(*tenancyv1alpha1.ComponentTemplate)
	if !ok {
		return nil
	}
	return r.rollouts(ctx, func(ro *tenancyv1alpha1.ComponentRollout) bool {
		return ro.Spec.Component == tmpl.Spec.Component && ro.Spec.Version == tmpl.Spec.Version
	})
}

func (r *Reconciler) rollouts(ctx context.Context, match func(*tenancyv1alpha1.ComponentRollout) bool) []reconcile.Request {
	list := &tenancyv1alpha1.ComponentRolloutList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing component rollouts")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if match(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}
