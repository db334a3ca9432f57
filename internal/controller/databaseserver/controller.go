package databaseserver

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
)

// Reconciler reports whether each DatabaseServer can be logged in to, its
// version, and how many tenants it holds. Placement only picks Ready servers.
type Reconciler struct {
	Client      client.Client
	Config      *config.Config
	Connections *database.Connections
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databaseservers,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databaseservers/status,verbs=get;patch

// SetupWithManager registers the controller: a server is looked at again when it or its admin
// credentials change, when tenants are placed on it or leave it, and every check interval.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("databaseserver").
		For(&tenancyv1alpha1.DatabaseServer{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.serversUsingSecret)).
		Watches(&tenancyv1alpha1.Tenant{}, r.tenantHandler()).
		Complete(shutdown.Quiet(r))
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ds := &tenancyv1alpha1.DatabaseServer{}
	if err := r.Client.Get(ctx, req.NamespacedName, ds); err != nil {
		if apierrors.IsNotFound(err) {
			r.Connections.Forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	tenants, logins, err := placedOn(ctx, r.Client, ds.Name)
	if err != nil {
		return ctrl.Result{}, err
	}

	interval := r.Config.Databases.CheckInterval.Duration
	info, err := r.Connections.Check(ctx, ds.Name, interval, r.Config.Databases.Timeout.Duration)
	s := computeStatus(ds, observation{tenants: tenants, logins: logins, info: info, err: err})
	result := ctrl.Result{RequeueAfter: interval}
	if err != nil && !errors.Is(err, database.ErrAdminCredentialsMissing) && !errors.Is(err, database.ErrServerUnusable) {
		// A server that does not answer is looked at sooner than a healthy one; one a person
		// must fix (its credentials, its spec) at the interval.
		result.RequeueAfter = min(interval, 10*time.Second)
	}
	if err := writes.PatchStatus(ctx, r.Client, ds, &ds.Status, s); err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

// observation is what one reconcile learned of a server: the tenants and logins placed on it
// (from the cache), and what logging in to it answered.
type observation struct {
	tenants int32
	logins  int
	info    database.ServerInfo
	err     error
}

// computeStatus is the server's status after a reconcile, following kstatus: Ready always;
// Stalled while Landlord cannot log in, whatever the cause (its admin credentials, its spec, or
// an outage, which ends by itself but is a failure while it lasts: kstatus reads it as Failed and
// Argo CD as Degraded, as they read every other stall); the other conditions only while true.
// observedGeneration is always the current generation: every reconcile reaches a verdict.
func computeStatus(ds *tenancyv1alpha1.DatabaseServer, o observation) tenancyv1alpha1.DatabaseServerStatus {
	s := *ds.Status.DeepCopy()
	s.ObservedGeneration = ds.Generation
	s.Tenants = o.tenants
	c := conditions.For(&s.Conditions, ds.Generation)
	switch {
	case errors.Is(o.err, database.ErrAdminCredentialsMissing):
		s.Reachable = false
		c.Stalled(tenancyv1alpha1.ReasonCredentialsMissing, o.err.Error())
	case errors.Is(o.err, database.ErrServerUnusable):
		// Its credentials may be all there: what stops the login is the spec.
		s.Reachable = false
		c.Stalled(tenancyv1alpha1.ReasonServerMisconfigured, o.err.Error())
	case o.err != nil:
		s.Reachable = false
		c.Stalled(tenancyv1alpha1.ReasonUnreachable, o.err.Error())
	default:
		info := o.info
		s.Reachable = true
		s.ServerVersion = info.Version
		s.ConnectionSlots = int32(info.MaxConnections)
		s.ConnectionLimit = database.DerivedConnectionLimit(info, ds.Spec.MaxTenants, o.logins)
		if ds.Spec.ConnectionLimit != nil {
			s.ConnectionLimit = *ds.Spec.ConnectionLimit
		}
		c.Ready(tenancyv1alpha1.ReasonReachable, "logged in as the administrator; server version "+info.Version)
		if message, over := database.Overcommitted(info, s.ConnectionLimit, o.logins, ds.Spec.MaxTenants); over {
			c.Set(tenancyv1alpha1.ConnectionsOvercommittedCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonConnectionLimitTooHigh,
				message+": lower spec.connectionLimit, or leave it unset for Landlord to derive it")
		} else {
			c.Remove(tenancyv1alpha1.ConnectionsOvercommittedCondition)
		}
		if len(info.Unconfined) > 0 {
			c.Set(tenancyv1alpha1.SharedDatabasesOpenCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonAdministratorCannotConfine,
				"PUBLIC keeps "+strings.Join(info.Unconfined, ", ")+": the administrator of spec.adminCredentials neither owns these databases nor is a superuser, so Landlord could not take them, "+
					"and every tenant login may connect to them (no tenant's data is there, but each login may use them to reach the server's shared objects). "+
					"Revoke them as their owner (REVOKE CONNECT, TEMPORARY ON DATABASE postgres FROM PUBLIC; the same on template1; REVOKE CREATE ON SCHEMA public FROM PUBLIC in postgres), granting CONNECT on postgres to the administrator by name")
		} else {
			c.Remove(tenancyv1alpha1.SharedDatabasesOpenCondition)
		}
	}
	// From the spec alone, whether the server answers or not: its tenants' pods reach it only
	// where their NetworkPolicy opens the way.
	if message, undeclared := resources.UndeclaredDatabaseNetwork(ds); undeclared {
		c.Set(tenancyv1alpha1.NetworkUndeclaredCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonNoTenantPath, message)
	} else {
		c.Remove(tenancyv1alpha1.NetworkUndeclaredCondition)
	}
	return s
}

// placedOn counts the tenants with databases on a server, and their logins there (one per
// database), from the cache.
func placedOn(ctx context.Context, c client.Reader, server string) (tenants int32, logins int, err error) {
	list := &tenancyv1alpha1.TenantList{}
	if err := c.List(ctx, list, client.MatchingFields{indexes.TenantDatabaseServer: server}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, err
	}
	for i := range list.Items {
		for _, d := range list.Items[i].Status.Databases {
			if d.Server == server {
				logins++
			}
		}
	}
	return int32(len(list.Items)), logins, nil
}

// serversUsingSecret maps an admin credentials Secret to the servers that use it.
func (r *Reconciler) serversUsingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
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
func (r *Reconciler) tenantHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], servers ...[]string) {
		for _, list := range servers {
			for _, name := range list {
				q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, countDelay)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, indexes.TenantDatabaseServers(e.Object))
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			before, after := indexes.TenantDatabaseServers(e.ObjectOld), indexes.TenantDatabaseServers(e.ObjectNew)
			if !equality.Semantic.DeepEqual(before, after) {
				enqueue(q, before, after)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, indexes.TenantDatabaseServers(e.Object))
		},
	}
}
