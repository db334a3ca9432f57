// Package workloads keeps a tenant's pods where and as its spec says, and its persistent volumes
// beyond its namespace: the kept volumes bound again to their claims once the namespace is back,
// the pods placed on a node pool the tenant no longer has deleted for their controllers to
// recreate them on the new one, every pod of a Frozen tenant stopped, and the volumes switched
// to Retain before the namespace goes (deleted instead when the tenant is Purged). The tenant
// reconciler's workloads phase calls it; the namespace engine keeps and deletes the volumes
// through it as it removes the namespace, and so does the reconciler's finalizer.
package workloads

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// A Frozen tenant's pods are deleted, all at once (stopPods), and so are those of a tenant moved
// to another node pool (movePods); the operator reads no pod.
// +kubebuilder:rbac:groups="",resources=pods,verbs=deletecollection

// Engine is what a tenant's pods and kept volumes need of the operator. Its fields are set once,
// before its first use.
type Engine struct {
	// Client reads through the cache and writes; APIReader reads what the cache does not hold
	// (claims and persistent volumes, read live and only as the namespace goes or comes back).
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Secrets keeps the record of a tenant's kept volumes in the secret store.
	Secrets secret.TenantSecrets
	// NamespaceWithPool is the tenant's namespace as built from s.Applied, recording that its
	// pods are placed on pool, and the applier that writes it (the namespace engine's).
	NamespaceWithPool func(ctx context.Context, s Scope, pool string) (*corev1.Namespace, *apply.Applier, error)
}

// Scope is one reconcile of one tenant, as the engine sees it: the tenant as the cache holds it
// (read only), the tenant as its namespace is built from (the domains it holds; only the
// workloads phase needs it), the name of its namespace, whether a reconcile was asked for, the
// node pool the namespace's pods were placed on as the namespace phase found it recorded, and
// the status draft whose status.volumes the engine writes.
type Scope struct {
	Tenant    *tenancyv1alpha1.Tenant
	Applied   *tenancyv1alpha1.Tenant
	Namespace string
	Verify    bool
	PodsPool  string
	Status    *tenancyv1alpha1.TenantStatus
}

// Ensure keeps the tenant's pods where and as its spec says, in the namespace the namespace
// phase applied: its kept volumes bound to it again before any component can create a claim
// that a provisioner would give a new, empty disk; the pods placed on a node pool the tenant no
// longer has deleted, once the namespace names the new pool, for their controllers to recreate
// them there; and, while Frozen, every pod stopped. It returns what the workloads phase reports
// when done, or the error that stopped it.
func (e *Engine) Ensure(ctx context.Context, s Scope) (string, error) {
	t := s.Applied
	if err := e.restoreVolumes(ctx, s); err != nil {
		return "", err
	}
	if s.PodsPool != t.Spec.NodePool {
		if err := e.movePods(ctx, s, s.PodsPool); err != nil {
			return "", err
		}
	}
	if t.Spec.State == tenancyv1alpha1.StateFrozen {
		if err := e.stopPods(ctx, s); err != nil {
			return "", err
		}
		return fmt.Sprintf("the tenant is Frozen: no pod of namespace %s runs", s.Namespace), nil
	}
	return fmt.Sprintf("the pods of namespace %s run on %s", s.Namespace, poolName(t.Spec.NodePool)), nil
}

// movePods deletes the pods of a tenant namespace that were placed on node pool from, which the
// tenant no longer has: a pod's nodeSelector cannot change, so they would go on running on the
// old pool's nodes, beside the pods of the tenant that pool is given to next, or on shared nodes
// when the tenant now has a pool of its own. Their controllers recreate them, and admission
// places the new ones on the tenant's pool now. The namespace (as built for s.Applied, the
// tenant as applied) records the pods' pool; the record is updated once the pods are deleted,
// so a crash before that deletes them again on the next reconcile rather than leaving them
// behind.
// A pod nothing recreates is gone, as when its node is drained; the tenant is told by the event.
func (e *Engine) movePods(ctx context.Context, s Scope, from string) error {
	to := s.Applied.Spec.NodePool
	// The operator's grace period, as for a Frozen tenant: a pod asking for a year to stop would
	// otherwise stay on the other tenant's pool for a year.
	if err := e.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(s.Namespace), client.GracePeriodSeconds(resources.PodStopGracePeriodSeconds)); err != nil {
		return fmt.Errorf("deleting the pods of tenant %s placed on %s: %w", s.Tenant.Name, poolName(from), err)
	}
	e.Recorder.Eventf(s.Tenant, nil, corev1.EventTypeNormal, ReasonNodePoolChanged, "DeletePods",
		"deleted the pods of namespace %s: the tenant moved from %s to %s, where their controllers recreate them",
		s.Namespace, poolName(from), poolName(to))
	ns, applier, err := e.NamespaceWithPool(ctx, s, to)
	if err != nil {
		return err
	}
	if _, err := applier.Apply(ctx, ns); err != nil {
		return fmt.Errorf("recording that the pods of namespace %s run on %s: %w", s.Namespace, poolName(to), err)
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
func (e *Engine) stopPods(ctx context.Context, s Scope) error {
	quota := &corev1.ResourceQuota{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: resources.QuotaName}, quota); err != nil {
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
	if err := e.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(s.Namespace), client.GracePeriodSeconds(resources.PodStopGracePeriodSeconds)); err != nil {
		return fmt.Errorf("stopping the pods of frozen tenant %s: %w", s.Tenant.Name, err)
	}
	if counted {
		e.Recorder.Eventf(s.Tenant, nil, corev1.EventTypeNormal, ReasonPodsStopped, "Freeze",
			"deleted the %s running pods of namespace %s: the tenant is Frozen", used.String(), s.Namespace)
	}
	return nil
}
