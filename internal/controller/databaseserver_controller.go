package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	"github.com/landlord-dev/landlord/internal/config"
)

// DatabaseServerReconciler reports whether each DatabaseServer can be logged in to, its
// version, and how many tenants it holds. Placement only picks Ready servers.
type DatabaseServerReconciler struct {
	Client      client.Client
	Config      *config.Config
	Connections *DatabaseConnections
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databaseservers,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databaseservers/status,verbs=get;patch

// SetupWithManager registers the controller: a server is looked at again when it or its admin
// credentials change, when tenants are placed on it or leave it, and every check interval.
func (r *DatabaseServerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("databaseserver").
		For(&tenancyv1alpha1.DatabaseServer{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.serversUsingSecret)).
		Watches(&tenancyv1alpha1.Tenant{}, r.tenantHandler()).
		Complete(r)
}

func (r *DatabaseServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ds := &tenancyv1alpha1.DatabaseServer{}
	if err := r.Client.Get(ctx, req.NamespacedName, ds); err != nil {
		if apierrors.IsNotFound(err) {
			r.Connections.Forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	tenants, err := countTenantsOn(ctx, r.Client, ds.Name)
	if err != nil {
		return ctrl.Result{}, err
	}

	s := *ds.Status.DeepCopy()
	s.ObservedGeneration = ds.Generation
	s.Tenants = tenants
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: ds.Generation,
		})
	}
	interval := r.Config.Databases.CheckInterval.Duration
	version, err := r.Connections.Check(ctx, ds.Name, interval, r.Config.Databases.Timeout.Duration)
	result := ctrl.Result{RequeueAfter: interval}
	switch {
	case errors.Is(err, errServerConfig):
		s.Reachable = false
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ReasonCredentialsMissing, err.Error())
		set(tenancyv1alpha1.StalledCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonCredentialsMissing, err.Error())
	case err != nil:
		s.Reachable = false
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ReasonUnreachable, err.Error())
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.StalledCondition)
		// An unreachable server is looked at sooner than a healthy one.
		result.RequeueAfter = min(interval, 10*time.Second)
	default:
		s.Reachable = true
		s.ServerVersion = version
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonReachable, "logged in as the administrator; server version "+version)
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.StalledCondition)
	}
	meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.ReconcilingCondition)

	if !equality.Semantic.DeepEqual(ds.Status, s) {
		orig := ds.DeepCopy()
		ds.Status = s
		if err := r.Client.Status().Patch(ctx, ds, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	return result, nil
}

// serversUsingSecret maps an admin credentials Secret to the servers that use it.
func (r *DatabaseServerReconciler) serversUsingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != r.Config.Databases.CredentialsNamespace {
		return nil
	}
	servers := &tenancyv1alpha1.DatabaseServerList{}
	if err := r.Client.List(ctx, servers); err != nil {
		log.FromContext(ctx).Error(err, "listing database servers for a credentials change")
		return nil
	}
	var out []reconcile.Request
	for _, ds := range servers.Items {
		if ds.Spec.AdminCredentials.Name == obj.GetName() {
			r.Connections.Invalidate(ds.Name)
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ds.Name}})
		}
	}
	return out
}

// countDelay gathers the tenant moves onto or off a server into one status write: creating a
// thousand tenants writes each server's count a few times, not a thousand.
const countDelay = 5 * time.Second

// tenantHandler re-counts the servers a tenant joined or left.
func (r *DatabaseServerReconciler) tenantHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], servers ...[]string) {
		for _, list := range servers {
			for _, name := range list {
				q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, countDelay)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, TenantDatabaseServers(e.Object))
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			before, after := TenantDatabaseServers(e.ObjectOld), TenantDatabaseServers(e.ObjectNew)
			if !equality.Semantic.DeepEqual(before, after) {
				enqueue(q, before, after)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, TenantDatabaseServers(e.Object))
		},
	}
}
