package tenantclaim

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/priority"
)

// Reconciler binds each claim to one Ready spare of its pool. The bind is a metadata
// patch of the spare carrying its resourceVersion: of two claims racing for one spare, exactly
// one write succeeds, and the other claim moves on to the next spare.
type Reconciler struct {
	Client   client.Client
	Config   *config.Config
	Recorder events.EventRecorder
	// MaxConcurrentBinds is how many claims are bound at once.
	MaxConcurrentBinds int
	// Urgent writes the binds, with rate limits apart from Client's: a customer waiting on a
	// signup never queues behind a pool being refilled.
	Urgent client.Client
	// Gate holds the operator's background writes back while a bind is under way, so the API
	// server has room for it; nil holds nothing.
	Gate *priority.Gate
	// Namespaces reads a claim's namespace, for a pool that binds claims from some namespaces
	// only: the cache holds tenants' namespaces, not those claims are made in. Nil reads
	// through Client.
	Namespaces client.Reader

	// binds maps each claim this process bound (by namespace and name) to its bind: the claim's
	// UID and its tenant's name. Keyed by name, so that a claim gone by its next reconcile, which
	// then knows only its name, is forgotten too.
	binds sync.Map
	// written maps each claim whose Bound status this process wrote and the cache does not show
	// yet (by namespace and name) to the claim's UID.
	written sync.Map
}

// bound is a bind this process made: the claim's UID, so that a claim re-created under the same
// name is not taken for it, and the tenant it was bound to.
type bound struct {
	uid    types.UID
	tenant string
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantclaims/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// SetupWithManager registers the controller: Pending claims of a pool are looked at again when
// one of its spares is Ready (or changes while Ready), or the pool appears or goes. The indexes
// it lists by are registered with RegisterPoolIndexes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantclaim").
		For(&tenancyv1alpha1.TenantClaim{}).
		Watches(&tenancyv1alpha1.Tenant{}, handler.EnqueueRequestsFromMapFunc(r.claimsForSpare)).
		Watches(&tenancyv1alpha1.TenantPool{}, r.poolHandler()).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentBinds, 1)}).
		Complete(shutdown.Quiet(r))
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	claim := &tenancyv1alpha1.TenantClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, claim); err != nil {
		if apierrors.IsNotFound(err) {
			r.binds.Delete(req.NamespacedName)
			r.written.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if claim.Status.Phase == tenancyv1alpha1.ClaimBound || !claim.DeletionTimestamp.IsZero() {
		// The status says it now; memory no longer has to.
		r.binds.Delete(req.NamespacedName)
		r.written.Delete(req.NamespacedName)
		if claim.Status.Phase == tenancyv1alpha1.ClaimBound && claim.DeletionTimestamp.IsZero() {
			// A claim bound before claims had conditions gets them; any other costs nothing.
			return ctrl.Result{}, writes.PatchStatus(ctx, r.Client, claim, &claim.Status, computeStatus(claim, recorded(claim.Status)))
		}
		return ctrl.Result{}, nil
	}

	// A bind whose status write was lost: this process remembers its own binds (the cache may
	// not show them yet), and the tenant carries the claim's UID for binds made before a restart
	// or by a previous leader, which the cache, synced before any reconcile, does show.
	if t, err := r.boundBefore(ctx, claim); err != nil || t != nil {
		if err != nil {
			return ctrl.Result{}, err
		}
		if uid, ok := r.written.Load(req.NamespacedName); ok && uid == claim.UID {
			// This process wrote its Bound status, which the cache does not show yet; the
			// cache's event brings the claim back. Writing again would be refused, and would
			// hold up the next customer's bind.
			return ctrl.Result{}, nil
		}
		defer r.Gate.Urgent()()
		return ctrl.Result{}, r.setBound(ctx, claim, t)
	}

	pool := &tenancyv1alpha1.TenantPool{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: claim.Spec.Pool}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.setPending(ctx, claim, tenancyv1alpha1.ReasonPoolNotFound, fmt.Sprintf("TenantPool %s does not exist", claim.Spec.Pool))
		}
		return ctrl.Result{}, err
	}
	if !pool.DeletionTimestamp.IsZero() {
		// Its spares are being deleted: binding one now would hand out a tenant about to go.
		return ctrl.Result{}, r.setPending(ctx, claim, tenancyv1alpha1.ReasonPoolNotFound, fmt.Sprintf("TenantPool %s is being deleted", claim.Spec.Pool))
	}
	var namespaceLabels map[string]string
	if pool.Spec.Claims.NamespaceSelector != nil {
		ns := &corev1.Namespace{}
		if err := r.namespaces().Get(ctx, client.ObjectKey{Name: claim.Namespace}, ns); err != nil {
			return ctrl.Result{}, err
		}
		namespaceLabels = ns.Labels
	}
	if why := refusal(pool, claim, namespaceLabels); why != "" {
		// The claim never binds unless the pool comes to allow it: a change to the pool brings
		// its pending claims back.
		return ctrl.Result{}, r.setRefused(ctx, claim, why)
	}

	// The pool's unallocated tenants only: what it handed out is not visited. Read without a
	// copy (a signup waits on this, and a pool of hundreds would be copied for each): they are
	// only read, and bind copies the one it writes.
	spares := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, spares, client.MatchingFields{indexes.TenantPool: pool.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	var candidates []*tenancyv1alpha1.Tenant
	for i := range spares.Items {
		if t := &spares.Items[i]; t.IsUnallocatedSpare() && t.IsReadySpare() {
			candidates = append(candidates, t)
		}
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].Name < candidates[j].Name })
	// Claims start at different spares, so concurrent binds rarely race for the same one.
	start := 0
	if n := len(candidates); n > 0 {
		h := fnv.New32a()
		_, _ = h.Write([]byte(claim.UID))
		start = int(h.Sum32() % uint32(n))
	}
	if bound, err := r.bindOne(ctx, claim, candidates, start); bound || err != nil {
		return ctrl.Result{}, err
	}
	// The pool refills, and a spare turning Ready re-triggers the pool's pending claims; a pool
	// at its cap refills once it is raised or tenants are deleted.
	if meta.IsStatusConditionTrue(pool.Status.Conditions, tenancyv1alpha1.MaxTenantsReachedCondition) {
		return ctrl.Result{}, r.setPending(ctx, claim, tenancyv1alpha1.ReasonMaxTenantsReached,
			fmt.Sprintf("no Ready spare in pool %s, which has created its spec.maxTenants (%d) tenants; waiting until it is raised or tenants are deleted", pool.Name, ptr.Deref(pool.Spec.MaxTenants, 0)))
	}
	return ctrl.Result{}, r.setPending(ctx, claim, tenancyv1alpha1.ReasonNoReadySpare,
		fmt.Sprintf("no Ready spare in pool %s; waiting for one", pool.Name))
}

// namespaces is the reader of claims' namespaces.
func (r *Reconciler) namespaces() client.Reader {
	if r.Namespaces != nil {
		return r.Namespaces
	}
	return r.Client
}

// bindOne binds the claim to the first of candidates, from start on, that no other claim takes
// first, and reports whether it did. A customer waits on it: the bind and the status that tells
// them go ahead of the operator's background writes, which wait meanwhile. A claim that finds no
// spare holds nothing back (the refill it waits for is background work), nor does its Pending
// status, written after.
func (r *Reconciler) bindOne(ctx context.Context, claim *tenancyv1alpha1.TenantClaim, candidates []*tenancyv1alpha1.Tenant, start int) (bool, error) {
	if len(candidates) == 0 {
		return false, nil
	}
	defer r.Gate.Urgent()()
	for i := range candidates {
		t := candidates[(start+i)%len(candidates)]
		switch err := r.bind(ctx, claim, t); {
		case err == nil:
			r.binds.Store(client.ObjectKeyFromObject(claim), bound{uid: claim.UID, tenant: t.Name})
			return true, r.setBound(ctx, claim, t)
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			// Another claim got it first, or it is gone: try the next.
			continue
		default:
			return false, err
		}
	}
	return false, nil
}

// boundBefore finds the tenant an earlier reconcile bound the claim to, from memory or the cache.
func (r *Reconciler) boundBefore(ctx context.Context, claim *tenancyv1alpha1.TenantClaim) (*tenancyv1alpha1.Tenant, error) {
	if b, ok := r.binds.Load(client.ObjectKeyFromObject(claim)); ok && b.(bound).uid == claim.UID {
		return &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: b.(bound).tenant}}, nil
	}
	bound := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, bound, client.MatchingFields{indexes.TenantClaimUID: string(claim.UID)}); err != nil {
		return nil, err
	}
	if len(bound.Items) == 0 {
		return nil, nil
	}
	return &bound.Items[0], nil
}

// bind hands a spare to the claim's customer: allocation labels, the claim's labels and the
// customer in annotations, and no owner (so the pool, and its deletion, never touch it again).
// The patch carries the spare's resourceVersion, which makes it the atomic step.
func (r *Reconciler) bind(ctx context.Context, claim *tenancyv1alpha1.TenantClaim, spare *tenancyv1alpha1.Tenant) error {
	t := spare.DeepCopy()
	orig := spare.DeepCopy()
	labels := t.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, claim.Spec.Labels)
	labels[tenancyv1alpha1.AllocatedLabel] = "true"
	labels[tenancyv1alpha1.ClaimUIDLabel] = string(claim.UID)
	t.SetLabels(labels)
	annotations := t.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[tenancyv1alpha1.ClaimAnnotation] = claim.Namespace + "/" + claim.Name
	if claim.Spec.Organization != "" {
		annotations[tenancyv1alpha1.OrganizationAnnotation] = claim.Spec.Organization
	}
	if claim.Spec.Email != "" {
		annotations[tenancyv1alpha1.EmailAnnotation] = claim.Spec.Email
	}
	t.SetAnnotations(annotations)
	t.SetOwnerReferences(nil)
	return r.Urgent.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

func (r *Reconciler) setBound(ctx context.Context, claim *tenancyv1alpha1.TenantClaim, t *tenancyv1alpha1.Tenant) error {
	now := metav1.Now()
	orig := claim.DeepCopy()
	claim.Status = computeStatus(claim, boundTo(t.Name, r.Config.NamespaceName(t.Name), now))
	// Optimistic: a reconcile working from a stale copy of a claim already Bound must not bind
	// it again (a second event, a second latency sample, a new boundTime).
	if err := r.Urgent.Status().Patch(ctx, claim, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return nil
		}
		return client.IgnoreNotFound(err)
	}
	r.written.Store(client.ObjectKeyFromObject(claim), claim.UID)
	claimBindSeconds.WithLabelValues(claim.Spec.Pool).Observe(now.Sub(claim.CreationTimestamp.Time).Seconds())
	r.Recorder.Eventf(claim, t, corev1.EventTypeNormal, tenancyv1alpha1.ReasonBound, "Bind", "bound to tenant %s", t.Name)
	return nil
}

// setRefused says the claim's pool does not bind it, once: a Warning event the first time, and
// the claim Stalled, which kstatus reads as failed.
func (r *Reconciler) setRefused(ctx context.Context, claim *tenancyv1alpha1.TenantClaim, why string) error {
	if claim.Status.Reason != tenancyv1alpha1.ReasonClaimRefused || claim.Status.Message != why {
		r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonClaimRefused, "Bind", "%s", why)
	}
	return writes.PatchStatus(ctx, r.Client, claim, &claim.Status, computeStatus(claim, pending(tenancyv1alpha1.ReasonClaimRefused, why)))
}

func (r *Reconciler) setPending(ctx context.Context, claim *tenancyv1alpha1.TenantClaim, reason, msg string) error {
	return writes.PatchStatus(ctx, r.Client, claim, &claim.Status, computeStatus(claim, pending(reason, msg)))
}
