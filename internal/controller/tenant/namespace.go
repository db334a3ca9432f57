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

// ensureNamespace applies the namespace and everything in it that an Active or Frozen tenant
// owns (RBAC, quota, limit range, network policies). Objects equal to the cached ones are not
// written.
func (r *Reconciler) ensureNamespace(ctx context.Context, s *tenantScope) outcome {
	t := s.tenant
	ns := &corev1.Namespace{}
	getErr := r.Client.Get(ctx, client.ObjectKey{Name: s.namespace}, ns)
	switch err := getErr; {
	case err == nil && !ns.DeletionTimestamp.IsZero():
		// Back from Archived before the old namespace is gone: its deletion event re-triggers us.
		return progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "waiting for namespace %s to finish terminating", s.namespace)
	case err != nil && !apierrors.IsNotFound(err):
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}

	// A domain another tenant holds never reaches the namespace's domains annotation, which is
	// what lets its Ingresses take a host; everything else of the namespace is still kept as it
	// should be (access, quota, a Frozen tenant's pods stopped), and the tenant is Stalled after.
	// A domain handed over from another tenant reaches it only once that tenant's namespace no
	// longer admits it and its Ingresses and routes for it are gone; until then the tenant says
	// what it waits for.
	held, problem, waiting, err := r.domains().Check(ctx, t)
	if err != nil {
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	if problem != "" || waiting != "" {
		t = t.DeepCopy()
		t.Spec.Domains = held
	}

	// The pool the namespace's pods were placed on: a new namespace has none yet, and is created
	// recording the tenant's pool.
	placed := t.Spec.NodePool
	if getErr == nil {
		if placed, err = r.podsPool(ctx, ns, t.Spec.NodePool); err != nil {
			return failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
	}

	// resources.Build is a pure function of these and of the configuration, which is fixed for
	// the life of the process; the pods' pool is recorded on the namespace.
	inputs, err := namespaceInputs(t, placed)
	if err != nil {
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	applier := r.applier(s)
	applier.Inputs = &inputs
	// These objects are the isolation boundary: anything someone else adds to them is removed.
	applier.WholeObject = true
	applier.Repaired = writes.DriftRepaired(log.FromContext(ctx).WithValues("tenant", t.Name), r.Recorder, t)
	objs := resources.Build(t, r.Config)
	// Until the pods placed on the old pool are deleted, the record keeps naming it, so that a
	// crash in between leaves the move to the next reconcile rather than forgotten.
	resources.SetPodsPool(objs, placed)
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
	// Before any component can create a claim that a provisioner would give a new, empty disk.
	if err := r.restoreVolumes(ctx, s); err != nil {
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	// After the namespace names the new pool, so that the pods recreated in place of the deleted
	// ones are admitted onto it.
	if placed != t.Spec.NodePool {
		if err := r.movePods(ctx, s, t, applier, objs, placed); err != nil {
			return failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
	}
	if t.Spec.State == tenancyv1alpha1.StateFrozen {
		if err := r.stopPods(ctx, s); err != nil {
			return failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
	}
	if problem != "" {
		if waiting != "" {
			problem += "; " + waiting
		}
		return stalled(tenancyv1alpha1.ReasonDomainConflict, "%s", problem)
	}
	if waiting != "" {
		return progressing(tenancyv1alpha1.ReasonDomainHandover, "%s", waiting)
	}
	return done(tenancyv1alpha1.ReasonSucceeded, "namespace %s is ready", s.namespace)
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

// movePods deletes the pods of a tenant namespace that were placed on node pool from, which the
// tenant no longer has: a pod's nodeSelector cannot change, so they would go on running on the
// old pool's nodes, beside the pods of the tenant that pool is given to next, or on shared nodes
// when the tenant now has a pool of its own. Their controllers recreate them, and admission
// places the new ones on the tenant's pool now. The namespace among desired (as Build returns
// them for t, the tenant as applied) records the pods' pool; the record is updated once the pods
// are deleted, so a crash before that deletes them again on the next reconcile rather than
// leaving them behind.
// A pod nothing recreates is gone, as when its node is drained; the tenant is told by the event.
func (r *Reconciler) movePods(ctx context.Context, s *tenantScope, t *tenancyv1alpha1.Tenant, applier *apply.Applier, desired []client.Object, from string) error {
	to := t.Spec.NodePool
	// The operator's grace period, as for a Frozen tenant: a pod asking for a year to stop would
	// otherwise stay on the other tenant's pool for a year.
	if err := r.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(s.namespace), client.GracePeriodSeconds(resources.PodStopGracePeriodSeconds)); err != nil {
		return fmt.Errorf("deleting the pods of tenant %s placed on %s: %w", s.tenant.Name, poolName(from), err)
	}
	r.Recorder.Eventf(s.tenant, nil, corev1.EventTypeNormal, ReasonNodePoolChanged, "DeletePods",
		"deleted the pods of namespace %s: the tenant moved from %s to %s, where their controllers recreate them",
		s.namespace, poolName(from), poolName(to))
	inputs, err := namespaceInputs(t, to)
	if err != nil {
		return err
	}
	applier.Inputs = &inputs
	resources.SetPodsPool(desired, to)
	for _, obj := range desired {
		if _, ok := obj.(*corev1.Namespace); !ok {
			continue
		}
		if _, err := applier.Apply(ctx, obj); err != nil {
			return fmt.Errorf("recording that the pods of namespace %s run on %s: %w", s.namespace, poolName(to), err)
		}
	}
	return nil
}

// poolName names a node pool in a message, or says there is none.
func poolName(pool string) string {
	if pool == "" {
		return "no dedicated node pool"
	}
	return "node pool " + pool
}

// stopPods deletes every pod of a Frozen tenant's namespace, the tenant's own workloads' too:
// the quota then lets none start again (its pods limit is 0 while Frozen), so nothing of the
// tenant runs. Whether any pod runs is read from the quota's status, in the cache, so a Frozen
// tenant with nothing running costs no request. Volumes and everything else stay.
func (r *Reconciler) stopPods(ctx context.Context, s *tenantScope) error {
	quota := &corev1.ResourceQuota{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: resources.QuotaName}, quota); err != nil {
		return client.IgnoreNotFound(err)
	}
	used, counted := quota.Status.Used[corev1.ResourcePods]
	if counted && used.IsZero() {
		return nil
	}
	// Not yet counted (a quota just written) is treated as running: the delete finds nothing
	// when nothing runs, and the quota's first count re-triggers the tenant.
	// The grace period is the operator's, not each pod's own: a pod asking for a year to stop
	// would otherwise run, Frozen, for a year.
	if err := r.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(s.namespace), client.GracePeriodSeconds(resources.PodStopGracePeriodSeconds)); err != nil {
		return fmt.Errorf("stopping the pods of frozen tenant %s: %w", s.tenant.Name, err)
	}
	if counted {
		r.Recorder.Eventf(s.tenant, nil, corev1.EventTypeNormal, ReasonPodsStopped, "Freeze",
			"deleted the %s running pods of namespace %s: the tenant is Frozen", used.String(), s.namespace)
	}
	return nil
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
