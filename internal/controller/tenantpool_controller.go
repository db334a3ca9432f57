package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// expectationTTL bounds how long a create or delete the cache has not shown yet is trusted.
const expectationTTL = time.Minute

// TenantPoolReconciler keeps each pool's count of unallocated spares at its replicas.
type TenantPoolReconciler struct {
	Client client.Client

	// Spares created or deleted but not yet seen so by the cache: without them, a reconcile
	// right after a create would see too few spares and create more.
	mu       sync.Mutex
	creating map[string]map[string]time.Time // pool → tenant name → when
	deleting map[string]map[string]time.Time
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantpools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantpools/finalizers,verbs=update
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantpools/status,verbs=get;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants,verbs=create;delete

// SetupWithManager registers the controller: a pool is looked at again when one of its tenants
// changes (a spare became Ready, was allocated or was deleted).
func (r *TenantPoolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantpool").
		For(&tenancyv1alpha1.TenantPool{}).
		Watches(&tenancyv1alpha1.Tenant{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			if pool := obj.GetLabels()[tenancyv1alpha1.PoolLabel]; pool != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
			}
			return nil
		})).
		Complete(r)
}

// isSpareReady is whether a spare can be handed out now.
func isSpareReady(t *tenancyv1alpha1.Tenant) bool {
	return t.DeletionTimestamp.IsZero() && t.Status.ObservedGeneration == t.Generation &&
		meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.ReadyCondition)
}

// isAllocated is whether a pool tenant belongs to a customer.
func isAllocated(t *tenancyv1alpha1.Tenant) bool {
	return t.Labels[tenancyv1alpha1.AllocatedLabel] == "true" || t.Annotations[tenancyv1alpha1.ClaimAnnotation] != ""
}

// IsUnallocatedSpare is whether a tenant is a pool's spare no customer has used: its data may
// be dropped when it is deleted. The pool label alone is not enough (anyone who may write a
// tenant may set it): a spare is also controlled by its pool, until a bind removes that.
func IsUnallocatedSpare(t *tenancyv1alpha1.Tenant) bool {
	pool := t.Labels[tenancyv1alpha1.PoolLabel]
	owner := metav1.GetControllerOf(t)
	return pool != "" && !isAllocated(t) && owner != nil && owner.Kind == "TenantPool" &&
		owner.APIVersion == tenancyv1alpha1.GroupVersion.String() && owner.Name == pool
}

func (r *TenantPoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &tenancyv1alpha1.TenantPool{}
	if err := r.Client.Get(ctx, req.NamespacedName, pool); err != nil {
		if apierrors.IsNotFound(err) {
			poolSparesReady.DeleteLabelValues(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	tenants := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, tenants, client.MatchingLabels{tenancyv1alpha1.PoolLabel: pool.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if !pool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, pool, tenants.Items)
	}
	if !controllerutil.ContainsFinalizer(pool, tenancyv1alpha1.Finalizer) {
		orig := pool.DeepCopy()
		controllerutil.AddFinalizer(pool, tenancyv1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, pool, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	var ready, provisioning []string
	var allocated int32
	seen := map[string]bool{}
	for i := range tenants.Items {
		t := &tenants.Items[i]
		seen[t.Name] = true
		switch {
		case isAllocated(t):
			allocated++
		case !IsUnallocatedSpare(t):
			// Labeled with the pool by someone else: not the pool's to count or delete.
		case !t.DeletionTimestamp.IsZero() || r.expected(r.deleting, pool.Name, t.Name):
		case isSpareReady(t):
			ready = append(ready, t.Name)
		default:
			provisioning = append(provisioning, t.Name)
		}
	}
	r.forgetSeen(pool.Name, seen)
	for name := range r.pending(r.creating, pool.Name) {
		provisioning = append(provisioning, name)
	}

	replicas := int(pool.Spec.Replicas)
	spares := len(ready) + len(provisioning)
	switch {
	case spares < replicas:
		n := replicas - spares
		if limit := pool.Spec.MaxProvisioning; limit != nil {
			n = min(n, int(*limit)-len(provisioning))
		}
		for range max(n, 0) {
			name, err := r.createSpare(ctx, pool)
			if err != nil {
				return ctrl.Result{}, err
			}
			provisioning = append(provisioning, name)
		}
	case spares > replicas:
		// Provisioning spares go first: they cost least to replace.
		sort.Strings(provisioning)
		sort.Strings(ready)
		victims := append(append([]string{}, provisioning...), ready...)[:spares-replicas]
		byName := map[string]*tenancyv1alpha1.Tenant{}
		for i := range tenants.Items {
			byName[tenants.Items[i].Name] = &tenants.Items[i]
		}
		for _, name := range victims {
			t, ok := byName[name]
			if !ok {
				// Created moments ago and not yet in the cache: the next reconcile sees it.
				continue
			}
			if err := r.deleteSpare(ctx, t); err != nil {
				return ctrl.Result{}, err
			}
			r.expect(&r.deleting, pool.Name, name)
		}
		ready, provisioning = without(ready, victims), without(provisioning, victims)
	}

	poolSparesReady.WithLabelValues(pool.Name).Set(float64(len(ready)))
	return ctrl.Result{}, r.writeStatus(ctx, pool, int32(len(ready)), int32(len(provisioning)), allocated)
}

// finalize deletes a deleted pool's unallocated spares (their databases are dropped, as they
// hold no customer data) and lets the pool go once they are gone. Allocated tenants carry no
// owner and are never touched. The garbage collector would remove the spares too; doing it here
// does not depend on it, and lets the pool's deletion wait for them.
func (r *TenantPoolReconciler) finalize(ctx context.Context, pool *tenancyv1alpha1.TenantPool, tenants []tenancyv1alpha1.Tenant) error {
	remaining := 0
	for i := range tenants {
		t := &tenants[i]
		if !IsUnallocatedSpare(t) {
			continue
		}
		remaining++
		if t.DeletionTimestamp.IsZero() {
			if err := r.deleteSpare(ctx, t); err != nil {
				return err
			}
		}
	}
	if remaining > 0 || !controllerutil.ContainsFinalizer(pool, tenancyv1alpha1.Finalizer) {
		// Each spare's deletion re-triggers the pool.
		return nil
	}
	orig := pool.DeepCopy()
	controllerutil.RemoveFinalizer(pool, tenancyv1alpha1.Finalizer)
	poolSparesReady.DeleteLabelValues(pool.Name)
	return client.IgnoreNotFound(r.Client.Patch(ctx, pool, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// deleteSpare deletes a spare only as the cache saw it: a claim may have bound it a moment ago,
// and the bind changed its resourceVersion, so the precondition makes such a delete fail rather
// than take a customer's tenant. The bind's event re-triggers the pool.
func (r *TenantPoolReconciler) deleteSpare(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
	uid, rv := t.UID, t.ResourceVersion
	err := r.Client.Delete(ctx, t, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (r *TenantPoolReconciler) createSpare(ctx context.Context, pool *tenancyv1alpha1.TenantPool) (string, error) {
	labels := map[string]string{}
	for k, v := range pool.Spec.Template.Labels {
		labels[k] = v
	}
	labels[tenancyv1alpha1.PoolLabel] = pool.Name
	t := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    pool.Name + "-",
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pool, tenancyv1alpha1.GroupVersion.WithKind("TenantPool"))},
		},
		Spec: *pool.Spec.Template.Spec.DeepCopy(),
	}
	t.Spec.State = tenancyv1alpha1.StateActive
	if err := r.Client.Create(ctx, t); err != nil {
		return "", fmt.Errorf("creating a spare for pool %s: %w", pool.Name, err)
	}
	r.expect(&r.creating, pool.Name, t.Name)
	return t.Name, nil
}

func (r *TenantPoolReconciler) writeStatus(ctx context.Context, pool *tenancyv1alpha1.TenantPool, ready, provisioning, allocated int32) error {
	s := *pool.Status.DeepCopy()
	s.ObservedGeneration = pool.Generation
	s.Ready, s.Provisioning, s.Allocated = ready, provisioning, allocated
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: pool.Generation})
	}
	if ready >= pool.Spec.Replicas {
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded, fmt.Sprintf("%d spares ready", ready))
		meta.RemoveStatusCondition(&s.Conditions, tenancyv1alpha1.ReconcilingCondition)
	} else {
		msg := fmt.Sprintf("%d of %d spares ready, %d provisioning", ready, pool.Spec.Replicas, provisioning)
		set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ReasonProgressing, msg)
		set(tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonProgressing, msg)
	}
	if equality.Semantic.DeepEqual(pool.Status, s) {
		return nil
	}
	orig := pool.DeepCopy()
	pool.Status = s
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, pool, client.MergeFrom(orig)))
}

func (r *TenantPoolReconciler) expect(set *map[string]map[string]time.Time, pool, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if *set == nil {
		*set = map[string]map[string]time.Time{}
	}
	if (*set)[pool] == nil {
		(*set)[pool] = map[string]time.Time{}
	}
	(*set)[pool][name] = time.Now()
}

func (r *TenantPoolReconciler) expected(set map[string]map[string]time.Time, pool, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := set[pool][name]
	return ok && time.Since(at) < expectationTTL
}

// pending is the creates of a pool the cache has not shown yet, and still trusted.
func (r *TenantPoolReconciler) pending(set map[string]map[string]time.Time, pool string) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]time.Time{}
	for name, at := range set[pool] {
		if time.Since(at) < expectationTTL {
			out[name] = at
		}
	}
	return out
}

// forgetSeen drops the creates the cache now shows, and the deletes it shows finished.
func (r *TenantPoolReconciler) forgetSeen(pool string, seen map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, at := range r.creating[pool] {
		if seen[name] || time.Since(at) >= expectationTTL {
			delete(r.creating[pool], name)
		}
	}
	for name, at := range r.deleting[pool] {
		if !seen[name] || time.Since(at) >= expectationTTL {
			delete(r.deleting[pool], name)
		}
	}
}

func without(names, drop []string) []string {
	gone := map[string]bool{}
	for _, d := range drop {
		gone[d] = true
	}
	var out []string
	for _, n := range names {
		if !gone[n] {
			out = append(out, n)
		}
	}
	return out
}
