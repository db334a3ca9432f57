package tenant

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/controller/tenant/namespaces"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/controller/tenant/workloads"
)

// workloads is the engine that keeps the tenant's pods where and as its spec says, and its
// volumes beyond its namespace; made on first use, with the client SetupWithManager set.
func (r *Reconciler) workloads() *workloads.Engine {
	r.workloadOnce.Do(func() {
		r.workloadEngine = &workloads.Engine{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, Secrets: r.Secrets,
			// The pods' new pool is recorded on the namespace as the namespace engine writes it.
			NamespaceWithPool: func(ctx context.Context, s workloads.Scope, pool string) (*corev1.Namespace, *apply.Applier, error) {
				return r.namespaces().NamespaceWithPool(ctx, namespaces.Scope{Tenant: s.Tenant, Applied: s.Applied, Namespace: s.Namespace, Verify: s.Verify, Status: s.Status}, pool)
			},
		}
	})
	return r.workloadEngine
}

// ensureWorkloads keeps the tenant's pods where and as its spec says, in the namespace the
// namespace phase applied: its kept volumes bound again, the pods placed on a node pool the
// tenant no longer has moved, and, while Frozen, every pod stopped.
func (r *Reconciler) ensureWorkloads(ctx context.Context, s *tenantScope) outcome {
	msg, err := r.workloads().Ensure(ctx, s.workloadScope())
	if err != nil {
		return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	return phase.Done(tenancyv1alpha1.ReasonSucceeded, "%s", msg)
}

// workloadScope is the reconcile as the workloads engine sees it.
func (s *tenantScope) workloadScope() workloads.Scope {
	return workloads.Scope{Tenant: s.tenant, Applied: s.applied, Namespace: s.namespace, Verify: s.verify, PodsPool: s.podsPool, Status: &s.status}
}
