package tenantpool

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// expectationTTL bounds how long a create or delete the cache has not shown yet is trusted.
const expectationTTL = time.Minute

// staleSpareRetry is when a pool whose delete of a spare met a newer version of it looks again:
// the write that changed the spare wakes the pool only if it changed the spare's role.
const staleSpareRetry = 500 * time.Millisecond

// Reconciler keeps each pool's count of unallocated spares at its replicas.
type Reconciler struct {
	Client client.Client

	// Spares created or deleted but not yet seen so by the cache: without them, a reconcile
	// right after a create would see too few spares and create more.
	mu       sync.Mutex
	creating map[string]map[string]time.Time // pool → tenant name → when
	deleting map[string]map[string]time.Time

	// allocations counts each pool's allocated tenants, from the tenant events (tenantHandler).
	allocations allocations
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantpools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantpools/finalizers,verbs=update
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantpools/status,verbs=get;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants,verbs=create;delete

// SetupWithManager registers the controller: a pool is looked at again when one of its tenants
// changes role (a spare became Ready, was allocated or was deleted). The indexes it lists by are
// registered with RegisterPoolIndexes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantpool").
		For(&tenancyv1alpha1.TenantPool{}).
		Watches(&tenancyv1alpha1.Tenant{}, r.tenantHandler()).
		Complete(shutdown.Quiet(r))
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &tenancyv1alpha1.TenantPool{}
	if err := r.Client.Get(ctx, req.NamespacedName, pool); err != nil {
		if apierrors.IsNotFound(err) {
			poolSparesReady.DeleteLabelValues(req.Name)
			poolSparesDesired.DeleteLabelValues(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Its unallocated tenants only: the ones it handed out, however many, are counted by the
	// tenant events and not listed.
	tenants := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, tenants, client.MatchingFields{indexes.TenantPool: pool.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if !pool.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, pool, tenants.Items)
	}
	if !controllerutil.ContainsFinalizer(pool, tenancyv1alpha1.Finalizer) {
		orig := pool.DeepCopy()
		controllerutil.AddFinalizer(pool, tenancyv1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, pool, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	var ready, provisioning, collided, suspended []string
	seen := map[string]bool{}
	for i := range tenants.Items {
		t := &tenants.Items[i]
		seen[t.Name] = true
		_, role := poolRoleOf(t)
		// Tenants labeled with the pool by someone else are not the pool's to count or delete;
		// spares on their way out, or deleted moments ago, are not counted.
		switch {
		case role == foreignTenant || role == leavingSpare || r.expected(r.deleting, pool.Name, t.Name):
		case role == collidedSpare:
			collided = append(collided, t.Name)
		case role == readySpare:
			ready = append(ready, t.Name)
		case role == provisioningSpare:
			provisioning = append(provisioning, t.Name)
		case role == suspendedSpare:
			// Neither counted nor planned: the pool creates others in its place, and never
			// deletes it when shrinking (that would drop the databases someone is looking at).
			suspended = append(suspended, t.Name)
		}
	}
	// A spare created moments ago may already be allocated when the cache first shows it.
	r.forgetSeen(pool.Name, func(name string) bool { return seen[name] || r.allocations.has(pool.Name, name) })
	for name := range r.pending(r.creating, pool.Name) {
		provisioning = append(provisioning, name)
	}

	allocated := r.allocations.count(pool.Name)
	existing := 0
	if pool.Spec.MaxTenants != nil {
		n, err := r.countTenants(ctx, pool.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		existing = n
	}
	plan := planPool(pool.Spec, existing, ready, provisioning, collided)
	for range plan.create {
		name, err := r.createSpare(ctx, pool)
		if err != nil {
			return ctrl.Result{}, err
		}
		provisioning = append(provisioning, name)
	}
	var result ctrl.Result
	if len(plan.remove) > 0 {
		byName := map[string]*tenancyv1alpha1.Tenant{}
		for i := range tenants.Items {
			byName[tenants.Items[i].Name] = &tenants.Items[i]
		}
		for _, name := range plan.remove {
			t, ok := byName[name]
			if !ok {
				// Created moments ago and not yet in the cache: the next reconcile sees it.
				continue
			}
			// Expected only once deleted: a spare whose delete met a conflict must not be taken
			// for one on its way out, or the pool would neither count nor remove it until the
			// expectation expires.
			deleted, err := r.deleteSpare(ctx, t)
			if err != nil {
				return ctrl.Result{}, err
			}
			if deleted {
				r.expect(&r.deleting, pool.Name, name)
			} else {
				result.RequeueAfter = staleSpareRetry
			}
		}
		ready, provisioning = without(ready, plan.remove), without(provisioning, plan.remove)
	}

	poolSparesReady.WithLabelValues(pool.Name).Set(float64(len(ready)))
	poolSparesDesired.WithLabelValues(pool.Name).Set(float64(pool.Spec.Replicas))
	return result, writes.PatchStatus(ctx, r.Client, pool, &pool.Status,
		computeStatus(pool, observation{
			ready: int32(len(ready)), provisioning: int32(len(provisioning)),
			suspended: int32(len(suspended)), allocated: int32(allocated),
			tenants: int32(existing + plan.create),
		}))
}

// countTenants is how many tenants the pool has, for spec.maxTenants: every tenant carrying its
// label (allocated, spare, suspended, collided, being deleted: each exists until it is gone),
// read from the cache at once, so that a spare a claim has just taken is counted once, spare or
// allocated; and the spares it created that the cache does not show yet.
func (r *Reconciler) countTenants(ctx context.Context, pool string) (int, error) {
	tenants := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, tenants, client.MatchingFields{indexes.TenantPoolAll: pool}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	seen := make(map[string]bool, len(tenants.Items))
	for i := range tenants.Items {
		seen[tenants.Items[i].Name] = true
	}
	n := len(tenants.Items)
	for name := range r.pending(r.creating, pool) {
		if !seen[name] {
			n++
		}
	}
	return n, nil
}

// holdsForeignData is whether a spare stalled on data that belongs to another tenant.
func holdsForeignData(t *tenancyv1alpha1.Tenant) bool {
	c := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.StalledCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == tenancyv1alpha1.ReasonForeignData
}

// poolPlan is what one reconcile of a pool does to its spares.
type poolPlan struct {
	create int      // how many spares to create
	remove []string // which spares to delete
}

// planPool brings a pool's unallocated spares (ready and provisioning, by name) to its replicas;
// suspended spares are not given to it, so they are neither counted nor removed:
// it creates no more than maxProvisioning may be provisioning at once, and when shrinking
// removes provisioning spares first (they cost least to replace), then ready ones, each in
// name order so that concurrent reconciles choose the same. Collided spares drew the name of an
// earlier tenant whose data is kept, and stalled rather than take it: they do not count, and
// are removed (their deletion leaves the earlier tenant's data alone). With spec.maxTenants it
// creates no spare past the cap, given the tenants the pool has: existing (countTenants).
func planPool(spec tenancyv1alpha1.TenantPoolSpec, existing int, ready, provisioning, collided []string) poolPlan {
	replicas := int(spec.Replicas)
	spares := len(ready) + len(provisioning)
	remove := slices.Sorted(slices.Values(collided))
	switch {
	case spares < replicas:
		n := replicas - spares
		if limit := spec.MaxProvisioning; limit != nil {
			n = min(n, int(*limit)-len(provisioning))
		}
		if limit := spec.MaxTenants; limit != nil {
			n = min(n, int(*limit)-existing)
		}
		return poolPlan{create: max(n, 0), remove: remove}
	case spares > replicas:
		victims := append(slices.Sorted(slices.Values(provisioning)), slices.Sorted(slices.Values(ready))...)
		return poolPlan{remove: append(remove, victims[:spares-replicas]...)}
	}
	return poolPlan{remove: remove}
}

// finalize deletes a deleted pool's unallocated spares (their databases are dropped, as they
// hold no customer data) and lets the pool go once they are gone. Allocated tenants carry no
// owner and are never touched. The garbage collector would remove the spares too; doing it here
// does not depend on it, and lets the pool's deletion wait for them.
func (r *Reconciler) finalize(ctx context.Context, pool *tenancyv1alpha1.TenantPool, tenants []tenancyv1alpha1.Tenant) (ctrl.Result, error) {
	var result ctrl.Result
	remaining := 0
	for i := range tenants {
		t := &tenants[i]
		if !t.IsUnallocatedSpare() {
			continue
		}
		remaining++
		if t.DeletionTimestamp.IsZero() {
			deleted, err := r.deleteSpare(ctx, t)
			if err != nil {
				return ctrl.Result{}, err
			}
			if !deleted {
				result.RequeueAfter = staleSpareRetry
			}
		}
	}
	if remaining > 0 || !controllerutil.ContainsFinalizer(pool, tenancyv1alpha1.Finalizer) {
		// Each spare's deletion re-triggers the pool.
		return result, nil
	}
	orig := pool.DeepCopy()
	controllerutil.RemoveFinalizer(pool, tenancyv1alpha1.Finalizer)
	poolSparesReady.DeleteLabelValues(pool.Name)
	poolSparesDesired.DeleteLabelValues(pool.Name)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, pool, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// deleteSpare deletes a spare only as the cache saw it: a claim may have bound it a moment ago,
// and the bind changed its resourceVersion, so the precondition makes such a delete fail rather
// than take a customer's tenant. deleted says whether the delete went through; when it did not,
// the write that changed the spare (a bind, a status update) re-triggers the pool, which then
// decides again on what it sees.
func (r *Reconciler) deleteSpare(ctx context.Context, t *tenancyv1alpha1.Tenant) (deleted bool, err error) {
	uid, rv := t.UID, t.ResourceVersion
	err = r.Client.Delete(ctx, t, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return false, nil
	}
	return false, err
}

func (r *Reconciler) createSpare(ctx context.Context, pool *tenancyv1alpha1.TenantPool) (string, error) {
	labels := maps.Clone(pool.Spec.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	// Landlord's keys are the operator's to set: the API refuses them in a new template, and a
	// pool created before it did must not make its spares allocated, claimed or another pool's.
	maps.DeleteFunc(labels, func(k, _ string) bool { return strings.HasPrefix(k, tenancyv1alpha1.GroupVersion.Group+"/") })
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

func (r *Reconciler) expect(set *map[string]map[string]time.Time, pool, name string) {
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

func (r *Reconciler) expected(set map[string]map[string]time.Time, pool, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := set[pool][name]
	return ok && time.Since(at) < expectationTTL
}

// pending is the creates of a pool the cache has not shown yet, and still trusted.
func (r *Reconciler) pending(set map[string]map[string]time.Time, pool string) map[string]time.Time {
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
func (r *Reconciler) forgetSeen(pool string, seen func(name string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, at := range r.creating[pool] {
		if seen(name) || time.Since(at) >= expectationTTL {
			delete(r.creating[pool], name)
		}
	}
	for name, at := range r.deleting[pool] {
		if !seen(name) || time.Since(at) >= expectationTTL {
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
