package tenant

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/resources"
)

// ensureWorkloads keeps the tenant's pods where and as its spec says, in the namespace the
// namespace phase applied: its kept volumes bound to it again before any component can create a
// claim that a provisioner would give a new, empty disk; the pods placed on a node pool the
// tenant no longer has deleted, once the namespace names the new pool, for their controllers to
// recreate them there; and, while Frozen, every pod stopped.
func (r *Reconciler) ensureWorkloads(ctx context.Context, s *tenantScope) outcome {
	t := s.applied
	if err := r.restoreVolumes(ctx, s); err != nil {
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	if s.podsPool != t.Spec.NodePool {
		if err := r.movePods(ctx, s, t, s.podsPool); err != nil {
			return failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
	}
	if t.Spec.State == tenancyv1alpha1.StateFrozen {
		if err := r.stopPods(ctx, s); err != nil {
			return failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		return done(tenancyv1alpha1.ReasonSucceeded, "the tenant is Frozen: no pod of namespace %s runs", s.namespace)
	}
	return done(tenancyv1alpha1.ReasonSucceeded, "the pods of namespace %s run on %s", s.namespace, poolName(t.Spec.NodePool))
}

// movePods deletes the pods of a tenant namespace that were placed on node pool from, which the
// tenant no longer has: a pod's nodeSelector cannot change, so they would go on running on the
// old pool's nodes, beside the pods of the tenant that pool is given to next, or on shared nodes
// when the tenant now has a pool of its own. Their controllers recreate them, and admission
// places the new ones on the tenant's pool now. The namespace (as Build returns it for t, the
// tenant as applied) records the pods' pool; the record is updated once the pods are deleted,
// so a crash before that deletes them again on the next reconcile rather than leaving them
// behind.
// A pod nothing recreates is gone, as when its node is drained; the tenant is told by the event.
func (r *Reconciler) movePods(ctx context.Context, s *tenantScope, t *tenancyv1alpha1.Tenant, from string) error {
	to := t.Spec.NodePool
	// The operator's grace period, as for a Frozen tenant: a pod asking for a year to stop would
	// otherwise stay on the other tenant's pool for a year.
	if err := r.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(s.namespace), client.GracePeriodSeconds(resources.PodStopGracePeriodSeconds)); err != nil {
		return fmt.Errorf("deleting the pods of tenant %s placed on %s: %w", s.tenant.Name, poolName(from), err)
	}
	r.Recorder.Eventf(s.tenant, nil, corev1.EventTypeNormal, ReasonNodePoolChanged, "DeletePods",
		"deleted the pods of namespace %s: the tenant moved from %s to %s, where their controllers recreate them",
		s.namespace, poolName(from), poolName(to))
	applier, err := r.namespaceApplier(ctx, s, t, to)
	if err != nil {
		return err
	}
	desired := resources.Build(t, r.Config)
	resources.SetPodsPool(desired, to)
	for _, obj := range desired {
		if _, ok := obj.(*corev1.Namespace); !ok {
			continue
		}
		if _, err := applier.Apply(ctx, obj); err != nil {
			return fmt.Errorf("recording that the pods of namespace %s run on %s: %w", s.namespace, poolName(to), err)
		}
	}
	s.podsPool = to
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
