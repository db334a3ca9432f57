// Package tenant is the Tenant reconciler: wiring and watches (controller.go, watches.go), a
// Reconcile that runs the phases of the tenant's lifecycle state from a table (phases.go), each
// owning one condition, a pure computeStatus (status.go) that sums their outcomes into kstatus
// conditions, and the finalizer (finalizer.go). The phases orchestrate: builders in
// internal/resources decide what should exist, internal/apply decides whether to write it, and
// the engines under it own the larger concerns (domains, the namespace, workloads, databases,
// components), each with its dependencies passed in.
package tenant

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/jobslots"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/tenant/components"
	"github.com/landlord-dev/landlord/internal/controller/tenant/databases"
	"github.com/landlord-dev/landlord/internal/controller/tenant/domains"
	"github.com/landlord-dev/landlord/internal/controller/tenant/migrations"
	"github.com/landlord-dev/landlord/internal/controller/tenant/namespaces"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/controller/tenant/workloads"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/shard"
	"github.com/landlord-dev/landlord/internal/usage"
)

// stalledRetry is how often a stalled tenant is looked at again. A stall waits for a person
// (a conflicting namespace to be removed, an invalid value to be fixed), and some of those fixes
// produce no event Landlord watches.
const stalledRetry = 2 * time.Minute

// classRecheck is how soon a tenant waiting for its class's status is looked at again, should
// the class's update not reach it.
const classRecheck = 5 * time.Second

// rolloutRecheck is how often a tenant whose components are rolling out is looked at again.
const rolloutRecheck = 10 * time.Second

// Reconciler turns a Tenant into what its lifecycle state asks for: its namespace with
// RBAC, quota, limits and network policy, shared secrets, databases and components while Active
// or Frozen; the namespace removed and the data kept while Archived; everything dropped when
// Purged.
type Reconciler struct {
	Client    client.Client
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	// Secrets keeps generated credentials in the secret store.
	Secrets secret.TenantSecrets
	// Databases reaches the DatabaseServers.
	Databases *database.Connections
	// Moves is whether DatabaseMoves are served: the reconciler then watches them (from the
	// cache, indexed by indexes.OpenMoveTenant) and leaves a database being moved to its move.
	Moves bool
	// Classes is whether TenantClasses are served: the reconciler then reads a tenant's class
	// from the cache (classes.go) and is woken by its changes.
	Classes bool
	// Backups: TenantBackups are served, so a migration can take one first.
	Backups bool
	// Slots keeps each database server's Jobs within its limit, shared with the TenantBackup
	// controller; SetupWithManager makes one when none is given.
	Slots *jobslots.Slots
	// Applied remembers the owned objects found in place, so that an unchanged tenant costs
	// neither requests nor the conversions a comparison takes; set up by SetupWithManager.
	Applied *apply.Memo
	// own keeps the tenants written whose write the cache does not show yet.
	own ownWrites
	// requests remembers the reconcile requests handled, should the status not keep them.
	requests handledRequests
	// databaseEngine places, provisions, publishes and drops databases (package databases);
	// made on first use, with the client SetupWithManager set.
	databaseEngine *databases.Engine
	databaseOnce   sync.Once
	// domainEngine decides and hands over domains (package domains); made on first use, with
	// the client SetupWithManager set.
	domainEngine *domains.Engine
	domainOnce   sync.Once
	// componentEngine renders, applies and prunes components (package components), and
	// remembers their renderings; made on first use, with the client SetupWithManager set.
	componentEngine *components.Engine
	componentOnce   sync.Once
	// namespaceEngine applies and removes the tenant's namespace and the objects in it (package
	// namespaces); workloadEngine moves and stops its pods and keeps its volumes (package
	// workloads). Made on first use, with the client SetupWithManager set.
	namespaceEngine *namespaces.Engine
	namespaceOnce   sync.Once
	workloadEngine  *workloads.Engine
	workloadOnce    sync.Once

	// Resync, when set, enqueues the tenants sent on it: a forced resync without touching them.
	Resync <-chan event.GenericEvent
	// Usage, when set, has the usage samples to record in tenants' status; UsageChanged
	// enqueues each tenant it has one for.
	Usage        UsageSamples
	UsageChanged <-chan event.GenericEvent
	// Urgent writes the copies a shared-secret change makes in every tenant namespace, with
	// rate limits apart from Client's, so the change never waits behind tenants being created.
	Urgent client.Client

	// Shard is the operator shard this reconciler is ("" for the default shard): it reconciles
	// the tenants whose ShardLabel names it (shards.go). Shards tells whether another
	// shard runs.
	Shard  string
	Shards shard.Leases

	// ControllerName names the controller in logs and metrics: "tenant" when empty.
	ControllerName string
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants/status,verbs=get;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants/finalizers,verbs=update
// The namespace and the objects in it are watched through the rules of the engine that writes
// them (package namespaces).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// annotationUpdate passes the updates of a tenant whose annotations changed as changed says,
// and no create, delete or generic event.
func annotationUpdate(changed func(before, after map[string]string) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld != nil && e.ObjectNew != nil && changed(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
		},
	}
}

// dataAnnotationsChanged passes updates that add, change or remove AdoptDataAnnotation or
// AbandonDataAnnotation, which change what the tenant may do with kept data.
var dataAnnotationsChanged = annotationUpdate(func(before, after map[string]string) bool {
	for _, key := range []string{tenancyv1alpha1.AdoptDataAnnotation, tenancyv1alpha1.AbandonDataAnnotation} {
		if before[key] != after[key] {
			return true
		}
	}
	return false
})

// reconcileRequested passes updates that set ReconcileRequestAnnotation to a new value: a
// request to reconcile the tenant now. Removing the annotation requests nothing.
var reconcileRequested = annotationUpdate(func(before, after map[string]string) bool {
	requested := after[tenancyv1alpha1.ReconcileRequestAnnotation]
	return requested != "" && requested != before[tenancyv1alpha1.ReconcileRequestAnnotation]
})

// domainsChanged passes deleted tenants and updates that change spec.domains.
var domainsChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldT, okOld := e.ObjectOld.(*tenancyv1alpha1.Tenant)
		newT, okNew := e.ObjectNew.(*tenancyv1alpha1.Tenant)
		return okOld && okNew && !slices.Equal(oldT.Spec.Domains, newT.Spec.Domains)
	},
}

// domains is the engine that decides which tenant holds each domain and hands domains over.
func (r *Reconciler) domains() *domains.Engine {
	r.domainOnce.Do(func() {
		r.domainEngine = &domains.Engine{Client: r.Client, APIReader: r.APIReader, Config: r.Config, Recorder: r.Recorder, Shard: r.Shard}
	})
	return r.domainEngine
}

// components is the engine that renders, applies and prunes the tenant's components.
func (r *Reconciler) components() *components.Engine {
	r.componentOnce.Do(func() {
		r.componentEngine = &components.Engine{
			Client: r.Client, APIReader: r.APIReader, Config: r.Config, Recorder: r.Recorder, Applied: r.Applied,
			// A write the API server refuses is reported as the other phases report theirs.
			ApplyFailed: r.applyFailed,
			Migrations: &migrations.Engine{
				Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, ApplyFailed: r.applyFailed,
				Backups: r.Backups && r.Config.Backups.Objects != "",
				Slots:   r.Slots,
			},
		}
	})
	return r.componentEngine
}

// SetupWithManager registers the controller. Owned objects map back to their tenant through
// the controller owner reference, so deleting or editing one re-converges it within seconds.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Applied == nil {
		r.Applied = apply.NewMemo()
	}
	if r.Slots == nil {
		r.Slots = &jobslots.Slots{}
	}
	if r.Shards == nil {
		r.Shards = &shard.LeaseReader{Reader: r.APIReader}
	}
	// A reconcile that takes a tenant over from another shard reads what its cache misses of
	// the tenant's from the API server (shards.go).
	r.Client = &takeoverClient{Client: r.Client, api: r.APIReader}
	mine, handover := shard.Events(r.Shard)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(cmp.Or(r.ControllerName, "tenant")).
		// Labels select shared secrets, so a label change is a change to converge; so are the
		// annotations that take over or abandon data, and a request to reconcile now.
		// A shard hears only of the tenants it reconciles, or has to hand over.
		For(&tenancyv1alpha1.Tenant{}, builder.WithPredicates(mine, predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, dataAnnotationsChanged, reconcileRequested, handover))).
		// Owned objects, as Owns would watch them, each deletion also forgetting what is
		// remembered of the object (memory.go).
		Watches(&corev1.Namespace{}, r.owned(mgr)).
		Watches(&rbacv1.RoleBinding{}, r.owned(mgr)).
		Watches(&corev1.ResourceQuota{}, r.owned(mgr)).
		Watches(&corev1.LimitRange{}, r.owned(mgr)).
		Watches(&networkingv1.NetworkPolicy{}, r.owned(mgr)).
		// Migration Jobs: their end moves the tenant's component on.
		Watches(&batchv1.Job{}, r.owned(mgr)).
		// A migration Job that ended frees a place on its servers for a tenant waiting its turn.
		Watches(&batchv1.Job{}, r.Slots.Wake(jobslots.Tenants)).
		Watches(&corev1.Secret{}, r.owned(mgr)).
		Watches(&corev1.Secret{}, r.templateSecretHandler()).
		Watches(&tenancyv1alpha1.DatabaseServer{}, r.databaseServerHandler()).
		Watches(&tenancyv1alpha1.ComponentTemplate{}, handler.EnqueueRequestsFromMapFunc(r.tenantsPinning)).
		Watches(&tenancyv1alpha1.ComponentRollout{}, r.rolloutHandler()).
		// A tenant giving a domain up (or going) lets the next tenant listing it take it.
		Watches(&tenancyv1alpha1.Tenant{}, handler.EnqueueRequestsFromMapFunc(r.domains().TenantsSharing), builder.WithPredicates(domainsChanged)).
		// A namespace no longer admitting a domain (or going) lets a tenant taking it over have it.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.domains().TenantsTakingDomainsOf), builder.WithPredicates(domains.AdmittedChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Config.Controller.MaxConcurrentReconciles})
	if r.Moves {
		// A move's fence and its switch each change what the tenant's database converges to.
		b = b.Watches(&tenancyv1alpha1.DatabaseMove{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, m client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: m.(*tenancyv1alpha1.DatabaseMove).Spec.Tenant}}}
		}))
	}
	if r.Classes {
		// A class's change is a change of every tenant of it.
		b = b.Watches(&tenancyv1alpha1.TenantClass{}, handler.EnqueueRequestsFromMapFunc(r.tenantsOfClass), builder.WithPredicates(classChanged))
	}
	if r.Resync != nil {
		b = b.WatchesRawSource(source.Channel(r.Resync, &handler.EnqueueRequestForObject{}))
	}
	if r.UsageChanged != nil {
		b = b.WatchesRawSource(source.Channel(r.UsageChanged, &handler.EnqueueRequestForObject{}))
	}
	c, err := b.Build(shutdown.Quiet(r))
	if err != nil {
		return err
	}
	r.components().Kinds = &components.KindWatches{
		Controller: c,
		Cache:      mgr.GetCache(),
		Client:     r.Client,
		Timeout:    r.Config.Controller.CacheSyncTimeout.Duration,
		Handler:    handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &tenancyv1alpha1.Tenant{}, handler.OnlyControllerOwner()),
	}
	return nil
}

// UsageSamples are the usage samples that differ from tenants' status (usage.Sampler).
type UsageSamples interface {
	// For is the sample to write, if one differs from status (t's status.usage, decoded on
	// demand).
	For(t *tenancyv1alpha1.Tenant, status func() *tenancyv1alpha1.TenantUsage) (*tenancyv1alpha1.TenantUsage, bool)
}

// Reconcile converges one tenant: fetch it, make deletion orderly (finalize a deleted tenant;
// add the finalizer to a new one), stop there if it is suspended, run the phases its lifecycle
// state lists (phases.go), and write the status they add up to, only when it changed: an
// unchanged tenant costs no API request at all.
//
// A deleted tenant is finalized even while suspended, as Flux lets a suspended object go: the
// finalizer is what keeps a tenant's data (databases, stored credentials, volumes switched to
// Retain) when its namespace goes, and skipping it would leave the namespace to the garbage
// collector, volumes and all.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &tenancyv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		if apierrors.IsNotFound(err) {
			r.requests.forget(req.Name)
			r.own.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if fresher := r.own.fresher(t); fresher != nil {
		// The cache does not show this reconciler's last write yet (own_writes.go).
		t = fresher
	}
	// The cache keeps status.usage compact, in a record of its own on the copy: taken off, and
	// decoded only for a status write that carries a new sample.
	usageRecord := usage.Take(t)
	read := t.ResourceVersion
	defer func() {
		// Every write below updates t in place with what the API server answered.
		if t.ResourceVersion != read {
			r.own.record(t)
		}
	}()
	takeover, done, res, err := r.shardGate(ctx, t)
	if done {
		return res, err
	}
	if takeover {
		ctx = takingOver(ctx, r.Config.NamespaceName(t.Name))
	}
	if !t.DeletionTimestamp.IsZero() {
		return writes.RetryConflict(r.finalize(ctx, t))
	}
	if !controllerutil.ContainsFinalizer(t, tenancyv1alpha1.Finalizer) {
		if err := r.addFinalizer(ctx, t); err != nil {
			return writes.RetryConflict(err)
		}
	}

	if t.Spec.Suspend {
		// Events of its objects still come here; they cost a cache read, and once the status
		// says Suspended, nothing else.
		next := suspendedStatus(t)
		if !takeover {
			// A shard's new tenant is its own from the first status write; one being taken over
			// is not until a reconcile has written its objects.
			next.Shard, next.HandoverTo = r.Shard, nil
		}
		return ctrl.Result{}, writes.PatchStatus(ctx, r.Client, t, &t.Status, next)
	}

	namespace := r.Config.NamespaceName(t.Name)
	if t.Status.Namespace != "" && t.Status.Namespace != namespace {
		return ctrl.Result{}, writes.PatchStatus(ctx, r.Client, t, &t.Status, namespaceMovedStatus(t, namespace))
	}
	applied, class, stall := r.applyClass(ctx, t)
	if stall != nil {
		if err := writes.PatchStatus(ctx, r.Client, t, &t.Status, classStalledStatus(t, stall)); err != nil {
			return ctrl.Result{}, err
		}
		if stall.waiting {
			// The class's status update wakes the tenant; this is the safety net.
			return ctrl.Result{RequeueAfter: classRecheck}, nil
		}
		return ctrl.Result{RequeueAfter: stalledRetry}, stall.err
	}
	s := newTenantScope(applied, namespace)
	s.class = class
	// The draft records the class's revision the tenant converges to: none without a class; an
	// Archived or Purged tenant keeps the one it had, for when it comes back.
	s.status.Class = applied.Status.Class
	if t.Spec.Class == "" {
		s.status.Class = nil
	}
	requested := t.Annotations[tenancyv1alpha1.ReconcileRequestAnnotation]
	if requested != "" && requested != t.Status.LastHandledReconcileAt && !r.requests.handled(t, requested) {
		// Asked for by a person, typically during an incident: what Landlord remembers of the
		// tenant's objects is not trusted, and each is compared in full again.
		r.forget(s.namespace)
		s.verify = true
	}
	phases := phasesFor(t.Spec.State)
	results := r.runPhases(ctx, s, phases)
	next := computeStatus(t, s.namespace, s.status, results)
	if r.Usage != nil {
		if u, ok := r.Usage.For(t, usageRecord.Usage); ok {
			// The write is a merge patch, which removes only what it names: it is computed
			// against the usage the server holds.
			t.Status.Usage = usageRecord.Usage()
			next.Usage = u
		}
	}
	recorded := r.recordShard(&next, takeover, results)
	logStall(ctx, t, next)
	if s.verify {
		// Handled, whatever the outcome: the conditions say how it went.
		next.LastHandledReconcileAt = requested
	}
	if err := writes.PatchStatus(ctx, r.Client, t, &t.Status, next); err != nil {
		return ctrl.Result{}, err
	}
	if s.verify {
		// t is now as the API server returned it.
		r.handledRequest(ctx, t, requested, t.Status.LastHandledReconcileAt)
	}
	res, err = requeueAfter(phases, results)
	if !recorded && err == nil && res.RequeueAfter != stalledRetry && (res.RequeueAfter == 0 || res.RequeueAfter > takeoverRecheck) {
		res.RequeueAfter = takeoverRecheck
	}
	return res, err
}

// logStall logs a tenant that stalls, or stalls for another reason than it did: once per
// change, not on every retry, so the log shows when a person was first needed and why.
func logStall(ctx context.Context, t *tenancyv1alpha1.Tenant, next tenancyv1alpha1.TenantStatus) {
	now := meta.FindStatusCondition(next.Conditions, tenancyv1alpha1.StalledCondition)
	if now == nil || now.Status != metav1.ConditionTrue {
		return
	}
	if was := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.StalledCondition); was != nil &&
		was.Status == metav1.ConditionTrue && was.Reason == now.Reason {
		return
	}
	log.FromContext(ctx).Info("tenant stalled", "tenant", t.Name, "reason", now.Reason, "message", now.Message)
}

// requeueAfter turns the phases' outcomes into the reconcile's result: errors are retried with
// backoff, a stall is looked at again after stalledRetry, and a phase still under way after its
// recheck; otherwise the tenant is looked at again at the soonest time a phase asked for (a
// rollout waiting for the tenant's maintenance window).
func requeueAfter(phases []tenantPhase, results []phaseResult) (ctrl.Result, error) {
	var errs []error
	isStalled := false
	for _, res := range results {
		if res.Err != nil {
			errs = append(errs, res.Err)
		}
		isStalled = isStalled || res.Stalled
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if isStalled {
		return ctrl.Result{RequeueAfter: stalledRetry}, nil
	}
	var after time.Duration
	for i, res := range results {
		if p := phases[i]; !res.Done && p.recheck > 0 {
			after = phase.Sooner(after, p.recheck)
		}
		after = phase.Sooner(after, res.RequeueAfter)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}
