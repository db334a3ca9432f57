// Package controller holds Landlord's reconcilers. They orchestrate: builders in
// internal/resources decide what should exist, internal/apply decides whether to write it, and
// the reconcilers sequence the phases and report status.
package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/secret"
)

// stalledRetry is how often a stalled tenant is looked at again. A stall waits for a person
// (a conflicting namespace to be removed, an invalid value to be fixed), and some of those fixes
// produce no event Landlord watches.
const stalledRetry = 2 * time.Minute

// rolloutRecheck is how often a tenant whose components are rolling out is looked at again.
const rolloutRecheck = 10 * time.Second

// TenantReconciler turns a Tenant into its namespace, RBAC, quota, limits and network policy.
type TenantReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	// Secrets keeps generated credentials in the secret store.
	Secrets secret.TenantSecrets
	// Databases reaches the DatabaseServers.
	Databases *DatabaseConnections
	// Kinds watches the kinds components render; set up by SetupWithManager.
	Kinds *kindWatches
	// Applied remembers the owned objects found in place, so that an unchanged tenant costs
	// neither requests nor the conversions a comparison takes; set up by SetupWithManager.
	Applied *apply.Memo
	// rendered remembers each component's last rendering.
	rendered renderMemo

	// Resync, when set, enqueues the tenants sent on it: a forced resync without touching them.
	Resync <-chan event.GenericEvent
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants/status,verbs=get;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=resourcequotas;limitranges,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databaseservers,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=componenttemplates,verbs=get;list;watch
// Components may render these kinds into tenant namespaces, and no others:
// +kubebuilder:rbac:groups="",resources=configmaps;services;serviceaccounts;persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller. Owned objects map back to their tenant through
// the controller owner reference, so deleting or editing one re-converges it within seconds.
func (r *TenantReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Applied == nil {
		r.Applied = apply.NewMemo()
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("tenant").
		// Labels select shared secrets, so a label change is a change to converge.
		For(&tenancyv1alpha1.Tenant{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Owns(&corev1.Namespace{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&corev1.ResourceQuota{}).
		Owns(&corev1.LimitRange{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&corev1.Secret{}).
		Watches(&corev1.Secret{}, r.templateSecretHandler()).
		Watches(&tenancyv1alpha1.DatabaseServer{}, r.databaseServerHandler()).
		Watches(&tenancyv1alpha1.ComponentTemplate{}, handler.EnqueueRequestsFromMapFunc(r.tenantsPinning)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Config.Controller.MaxConcurrentReconciles})
	if r.Resync != nil {
		b = b.WatchesRawSource(source.Channel(r.Resync, &handler.EnqueueRequestForObject{}))
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	r.Kinds = &kindWatches{
		ctrl:    c,
		cache:   mgr.GetCache(),
		handler: handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &tenancyv1alpha1.Tenant{}, handler.OnlyControllerOwner()),
	}
	return nil
}

// Reconcile converges one tenant: fetch it, make sure deletion will be orderly, converge what
// its lifecycle state asks for, and report. Status is written only when it changed, so an
// unchanged tenant costs no API request at all.
func (r *TenantReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &tenancyv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !t.DeletionTimestamp.IsZero() {
		err := r.finalize(ctx, t)
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !controllerutil.ContainsFinalizer(t, tenancyv1alpha1.Finalizer) {
		if err := r.addFinalizer(ctx, t); err != nil {
			if apierrors.IsConflict(err) {
				// Someone wrote the tenant since the cache saw it; look again shortly.
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, err
		}
	}

	var results []phaseResult
	databases := t.Status.Databases
	// The namespace of an Archived or Purged tenant is gone, and its components with it.
	var components []tenancyv1alpha1.ComponentStatus
	switch t.Spec.State {
	case tenancyv1alpha1.StateArchived:
		results = []phaseResult{
			{tenancyv1alpha1.NamespaceReadyCondition, r.removeNamespace(ctx, t)},
			{tenancyv1alpha1.DatabasesReadyCondition, keptDatabases(t)},
		}
	case tenancyv1alpha1.StatePurged:
		dbs := r.purgeDatabases(ctx, t)
		if dbs.done {
			databases = nil
		}
		results = []phaseResult{
			{tenancyv1alpha1.NamespaceReadyCondition, r.removeNamespace(ctx, t)},
			{tenancyv1alpha1.DatabasesReadyCondition, dbs},
		}
	default:
		ns := r.ensureNamespace(ctx, t)
		secrets, dbs, comps := waitingForNamespace(), waitingForNamespace(), waitingForNamespace()
		if ns.done {
			secrets = r.copySharedSecrets(ctx, t)
			dbs, databases = r.ensureDatabases(ctx, t)
			comps, components = r.ensureComponents(ctx, t)
		}
		results = []phaseResult{
			{tenancyv1alpha1.NamespaceReadyCondition, ns},
			{tenancyv1alpha1.SecretsReadyCondition, secrets},
			{tenancyv1alpha1.DatabasesReadyCondition, dbs},
			{tenancyv1alpha1.ComponentsReadyCondition, comps},
		}
	}

	status := computeStatus(t, r.Config.NamespaceName(t.Name), results)
	status.Databases = databases
	status.Components = components
	if err := r.writeStatus(ctx, t, status); err != nil {
		return ctrl.Result{}, err
	}
	var errs []error
	stalled := false
	for _, res := range results {
		if res.err != nil {
			errs = append(errs, res.err)
		}
		stalled = stalled || res.stalled
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if stalled {
		return ctrl.Result{RequeueAfter: stalledRetry}, nil
	}
	for _, res := range results {
		if res.condition == tenancyv1alpha1.ComponentsReadyCondition && !res.done {
			// Workload status events re-trigger a rollout in progress; this look from the cache
			// (no request) is the safety net should one be missed.
			return ctrl.Result{RequeueAfter: rolloutRecheck}, nil
		}
	}
	return ctrl.Result{}, nil
}

func (r *TenantReconciler) addFinalizer(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
	orig := t.DeepCopy()
	controllerutil.AddFinalizer(t, tenancyv1alpha1.Finalizer)
	return r.Client.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// writeStatus patches status only when it differs from what the tenant carries.
func (r *TenantReconciler) writeStatus(ctx context.Context, t *tenancyv1alpha1.Tenant, status tenancyv1alpha1.TenantStatus) error {
	if equality.Semantic.DeepEqual(t.Status, status) {
		return nil
	}
	orig := t.DeepCopy()
	t.Status = status
	err := r.Client.Status().Patch(ctx, t, client.MergeFrom(orig))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
