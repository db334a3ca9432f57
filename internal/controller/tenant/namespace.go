package tenant

import (
	"context"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/controller/tenant/namespaces"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
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
		return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	s.applied = s.tenant
	if problem != "" || waiting != "" {
		s.applied = s.tenant.DeepCopy()
		s.applied.Spec.Domains = held
	}
	switch {
	case problem != "" && waiting != "":
		return phase.Stalled(tenancyv1alpha1.ReasonDomainConflict, "%s; %s", problem, waiting)
	case problem != "":
		return phase.Stalled(tenancyv1alpha1.ReasonDomainConflict, "%s", problem)
	case waiting != "":
		return phase.Progressing(tenancyv1alpha1.ReasonDomainHandover, "%s", waiting)
	}
	return phase.Done(tenancyv1alpha1.ReasonSucceeded, "%d domains held", len(held))
}

// namespaces is the engine that applies the tenant's namespace and the objects in it, and
// removes the namespace; made on first use, with the client SetupWithManager set.
func (r *Reconciler) namespaces() *namespaces.Engine {
	r.namespaceOnce.Do(func() {
		r.namespaceEngine = &namespaces.Engine{Client: r.Client, APIReader: r.APIReader, Config: r.Config, Recorder: r.Recorder,
			Applied: r.Applied, Volumes: r.workloads(), Forget: r.forget,
			// A write the API server refuses is reported as the other phases report theirs.
			ApplyFailed: r.applyFailed,
		}
	})
	return r.namespaceEngine
}

// ensureNamespace applies the namespace and everything in it that an Active or Frozen tenant
// owns (RBAC, quota, limit range, network policies), built from the tenant with the domains it
// holds, and finds the node pool its pods were placed on.
func (r *Reconciler) ensureNamespace(ctx context.Context, s *tenantScope) outcome {
	var res outcome
	s.podsPool, res = r.namespaces().Ensure(ctx, s.namespaceScope())
	return res
}

// removeNamespace deletes the namespace of an Archived or Purged tenant, and waits until it is
// gone (keeping an Archived tenant's volumes first, deleting a Purged tenant's after). The
// components in it go with it, so their status goes too.
func (r *Reconciler) removeNamespace(ctx context.Context, s *tenantScope) outcome {
	s.status.Components = keptComponents(s.tenant, s.status.Components)
	removed := conditionCurrent(s.tenant, tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.ReasonNamespaceRemoved)
	return r.namespaces().Remove(ctx, s.namespaceScope(), removed)
}

// keptComponents is what the status keeps of the components of a tenant whose namespace goes:
// what a ComponentRollout gave a component is kept, so that an Archived tenant made Active
// again runs that version, not its spec's older one, against data the newer one may have
// migrated.
func keptComponents(t *tenancyv1alpha1.Tenant, components []tenancyv1alpha1.ComponentStatus) []tenancyv1alpha1.ComponentStatus {
	var kept []tenancyv1alpha1.ComponentStatus
	if t.Spec.State == tenancyv1alpha1.StateArchived {
		for _, c := range components {
			if c.Rollout != "" {
				kept = append(kept, tenancyv1alpha1.ComponentStatus{Name: c.Name, Version: c.Version, Rollout: c.Rollout, RolloutCreated: c.RolloutCreated,
					Message: "not running while the tenant is Archived"})
			}
		}
	}
	return kept
}

// namespaceScope is the reconcile as the namespace engine sees it.
func (s *tenantScope) namespaceScope() namespaces.Scope {
	return namespaces.Scope{Tenant: s.tenant, Applied: s.applied, DomainsErr: s.domainsErr, Namespace: s.namespace, Verify: s.verify, Status: &s.status}
}

// applier applies the tenant's objects: cache-compared, remembered once found in place, and
// compared with the API server's copies when a reconcile was asked for (tenantScope.verify).
func (r *Reconciler) applier(s *tenantScope) *apply.Applier {
	return &apply.Applier{Client: r.Client, APIReader: r.APIReader, Memo: r.Applied, Verify: s.verify}
}
