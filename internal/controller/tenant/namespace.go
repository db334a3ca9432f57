package tenant

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/resources"
)

// checkDomains decides which of the tenant's domains it holds (package domains): the namespace
// is built from the tenant with those alone (tenantScope.applied), so a domain another tenant
// holds never reaches the namespace's domains annotation, which is what lets its Ingresses take
// a host. A domain handed over from another tenant reaches it only once that tenant's namespace
// no longer admits it and its Ingresses and routes for it are gone; until then the tenant says
// what it waits for. Everything else of the tenant is still kept as it should be.
func (r *Reconciler) checkDomains(ctx context.Context, s *tenantScope) outcome {
	held, problem, waiting, err := r.domains().Check(ctx, s.tenant)
	if err != nil {
		s.domainsErr = err
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	s.applied = s.tenant
	if problem != "" || waiting != "" {
		s.applied = s.tenant.DeepCopy()
		s.applied.Spec.Domains = held
	}
	switch {
	case problem != "" && waiting != "":
		return stalled(tenancyv1alpha1.ReasonDomainConflict, "%s; %s", problem, waiting)
	case problem != "":
		return stalled(tenancyv1alpha1.ReasonDomainConflict, "%s", problem)
	case waiting != "":
		return progressing(tenancyv1alpha1.ReasonDomainHandover, "%s", waiting)
	}
	return done(tenancyv1alpha1.ReasonSucceeded, "%d domains held", len(held))
}

// ensureNamespace applies the namespace and everything in it that an Active or Frozen tenant
// owns (RBAC, quota, limit range, network policies), built from the tenant with the domains it
// holds. Objects equal to the cached ones are not written.
func (r *Reconciler) ensureNamespace(ctx context.Context, s *tenantScope) outcome {
	ns := &corev1.Namespace{}
	getErr := r.Client.Get(ctx, client.ObjectKey{Name: s.namespace}, ns)
	switch err := getErr; {
	case err == nil && !ns.DeletionTimestamp.IsZero():
		// Back from Archived before the old namespace is gone: its deletion event re-triggers us.
		return progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "waiting for namespace %s to finish terminating", s.namespace)
	case err != nil && !apierrors.IsNotFound(err):
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	// Never built from domains not decided on.
	t := s.applied
	if t == nil {
		return failedf(tenancyv1alpha1.ReasonApplyFailed, "deciding which domains the tenant holds: %w", s.domainsErr)
	}

	// The pool the namespace's pods were placed on: a new namespace has none yet, and is created
	// recording the tenant's pool.
	s.podsPool = t.Spec.NodePool
	if getErr == nil {
		var err error
		if s.podsPool, err = r.podsPool(ctx, ns, t.Spec.NodePool); err != nil {
			return failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
	}

	applier, err := r.namespaceApplier(ctx, s, t, s.podsPool)
	if err != nil {
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	objs := resources.Build(t, r.Config)
	// Until the pods placed on the old pool are deleted (the workloads phase), the record keeps
	// naming it, so that a crash in between leaves the move to the next reconcile rather than
	// forgotten.
	resources.SetPodsPool(objs, s.podsPool)
	// The objects changed to what the spec and configuration now say (a repair of drift is
	// reported on its own, by applier.Repaired).
	var updated []string
	for _, obj := range objs {
		result, err := applier.Apply(ctx, obj)
		if rb, ok := obj.(*rbacv1.RoleBinding); ok && apierrors.IsInvalid(err) {
			result, err = r.rebind(ctx, applier, t, rb)
		}
		if err != nil {
			return r.applyFailed(t, obj, err)
		}
		if result == apply.Updated {
			updated = append(updated, writes.ObjectRef(obj))
		}
	}
	if len(updated) > 0 {
		sort.Strings(updated)
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonApplied, "Apply",
			"updated %s", strings.Join(updated, ", "))
	}
	return done(tenancyv1alpha1.ReasonSucceeded, "namespace %s is ready", s.namespace)
}

// namespaceApplier applies the objects of the tenant's namespace, built from t (the tenant with
// the domains it holds) with its pods placed on podsPool.
func (r *Reconciler) namespaceApplier(ctx context.Context, s *tenantScope, t *tenancyv1alpha1.Tenant, podsPool string) (*apply.Applier, error) {
	// resources.Build is a pure function of these and of the configuration, which is fixed for
	// the life of the process; the pods' pool is recorded on the namespace.
	inputs, err := namespaceInputs(t, podsPool)
	if err != nil {
		return nil, err
	}
	applier := r.applier(s)
	applier.Inputs = &inputs
	// These objects are the isolation boundary: anything someone else adds to them is removed.
	applier.WholeObject = true
	applier.Repaired = writes.DriftRepaired(log.FromContext(ctx).WithValues("tenant", t.Name), r.Recorder, t)
	return applier, nil
}

// namespaceInputs digests what the tenant's namespace and the objects in it are built from: the
// tenant, and the pool its pods were placed on.
func namespaceInputs(t *tenancyv1alpha1.Tenant, podsPool string) (apply.Fingerprint, error) {
	return apply.FingerprintOf(struct {
		Name, UID           string
		Labels, Annotations map[string]string
		Spec                tenancyv1alpha1.TenantSpec
		PodsPool            string
	}{t.Name, string(t.UID), t.Labels, t.Annotations, t.Spec, podsPool})
}

// podsPool is the node pool the pods of the tenant's namespace ns (from the cache) were placed
// on. A record that differs from the tenant's pool is confirmed by the API server before pods are
// deleted for it: the cache may not yet have seen the record of a move just made, and the pods
// recreated on the new pool would be deleted a second time. Reading it only then keeps a tenant
// whose pool did not change free of requests.
func (r *Reconciler) podsPool(ctx context.Context, ns *corev1.Namespace, pool string) (string, error) {
	placed := resources.PodsPool(ns)
	if placed == pool {
		return placed, nil
	}
	live := &corev1.Namespace{}
	switch err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ns), live); {
	case apierrors.IsNotFound(err):
		// Gone since: the namespace is created anew, with no pod on any pool.
		return pool, nil
	case err != nil:
		return "", err
	}
	return resources.PodsPool(live), nil
}

// rebind replaces a tenant RoleBinding whose roleRef is not the desired one (a binding of the
// namespaced Role each tenant had before the shared ClusterRoles): Kubernetes refuses to change
// a roleRef, so the old binding is deleted and the new one created. Its subjects lose access
// for the moment between the two requests.
func (r *Reconciler) rebind(ctx context.Context, applier *apply.Applier, t *tenancyv1alpha1.Tenant, desired *rbacv1.RoleBinding) (apply.Result, error) {
	// From the API server: the cache keeps bindings without their roleRef.
	live := &rbacv1.RoleBinding{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return apply.Unchanged, err
	}
	if live.RoleRef == desired.RoleRef {
		return apply.Unchanged, fmt.Errorf("applying RoleBinding %s: the API server refused it although its roleRef is unchanged", desired.Name)
	}
	switch deleted, err := writes.DeleteIfControlled(ctx, r.Client, r.APIReader, live, t); {
	case err != nil:
		return apply.Unchanged, err
	case !deleted:
		return apply.Unchanged, &apply.ConflictError{Kind: "RoleBinding", Name: desired.Name, Owner: "tenant " + t.Name}
	}
	return applier.Apply(ctx, desired)
}

// removeNamespace deletes the namespace of an Archived or Purged tenant, and waits until it is
// gone: the namespace's deletion event re-triggers the reconcile. The components in it go with
// it, so their status goes too. An Archived tenant's volumes are kept first; a Purged tenant's
// kept volumes are deleted once the namespace is gone.
func (r *Reconciler) removeNamespace(ctx context.Context, s *tenantScope) outcome {
	t := s.tenant
	// What a ComponentRollout gave a component is kept: an Archived tenant made Active again
	// runs that version, not its spec's older one, against data the newer one may have migrated.
	var kept []tenancyv1alpha1.ComponentStatus
	if t.Spec.State == tenancyv1alpha1.StateArchived {
		for _, c := range s.status.Components {
			if c.Rollout != "" {
				kept = append(kept, tenancyv1alpha1.ComponentStatus{Name: c.Name, Version: c.Version, Rollout: c.Rollout, RolloutCreated: c.RolloutCreated,
					Message: "not running while the tenant is Archived"})
			}
		}
	}
	s.status.Components = kept
	ns := &corev1.Namespace{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: s.namespace}, ns)
	if apierrors.IsNotFound(err) && !conditionCurrent(t, tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.ReasonNamespaceRemoved) {
		// Gone by the cache is confirmed once by the API server before the namespace is
		// reported removed (and a Purged tenant's volumes deleted): a shard's cache never holds
		// a namespace another shard labelled, and a watch can be behind.
		err = r.APIReader.Get(ctx, client.ObjectKey{Name: s.namespace}, ns)
	}
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		r.forget(s.namespace)
		if t.Spec.State == tenancyv1alpha1.StatePurged && !conditionCurrent(t, tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.ReasonNamespaceRemoved) {
			if err := r.purgeVolumes(ctx, s); err != nil {
				return failed(tenancyv1alpha1.ReasonApplyFailed, err)
			}
		}
		return done(tenancyv1alpha1.ReasonNamespaceRemoved, "namespace %s is removed while the tenant is %s", s.namespace, t.Spec.State)
	}
	if ns.DeletionTimestamp.IsZero() {
		if t.Spec.State != tenancyv1alpha1.StatePurged && metav1.IsControlledBy(ns, t) {
			if err := r.keepVolumes(ctx, s); err != nil {
				return failed(tenancyv1alpha1.ReasonApplyFailed, err)
			}
		}
		deleted, err := writes.DeleteIfControlled(ctx, r.Client, r.APIReader, ns, t)
		switch {
		case err != nil:
			return failedf(tenancyv1alpha1.ReasonApplyFailed, "deleting namespace %s: %w", s.namespace, err)
		case !deleted:
			return stalled(tenancyv1alpha1.ReasonOwnershipConflict, "namespace %s is not controlled by this tenant; not deleting it", s.namespace)
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonNamespaceRemoved, "Delete",
			"deleting namespace %s: the tenant is %s", s.namespace, t.Spec.State)
	}
	return progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "waiting for namespace %s to finish terminating", s.namespace)
}

// applier applies the tenant's objects: cache-compared, remembered once found in place, and
// compared with the API server's copies when a reconcile was asked for (tenantScope.verify).
func (r *Reconciler) applier(s *tenantScope) *apply.Applier {
	return &apply.Applier{Client: r.Client, APIReader: r.APIReader, Memo: r.Applied, Verify: s.verify}
}
