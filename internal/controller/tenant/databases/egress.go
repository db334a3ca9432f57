package databases

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/resources"
)

// AllowEgress keeps the tenant's NetworkPolicy to its database servers in step with the
// placements of the status draft (Ensure fills them in first, in the phase before, so a
// database placed in this reconcile is reachable by the end of it; its credentials are
// published a moment before, and a failed write here is retried): the servers its databases are on, each read from the
// cache, and no other. It is an isolation object, compared whole with the
// cache: an unchanged tenant costs no request, and a change of placements one write. A server no
// longer in the cache has nothing left to reach. It returns a failure result, or done.
func (r *Engine) AllowEgress(ctx context.Context, s Scope) phase.Result {
	t := s.Tenant
	var servers []*tenancyv1alpha1.DatabaseServer
	seen := map[string]bool{}
	for _, d := range s.Status.Databases {
		if seen[d.Server] {
			continue
		}
		seen[d.Server] = true
		// Read only, by the builder: the cache's own copy.
		ds := &tenancyv1alpha1.DatabaseServer{}
		switch err := r.Client.Get(ctx, client.ObjectKey{Name: d.Server}, ds, client.UnsafeDisableDeepCopy); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		servers = append(servers, ds)
	}
	policy := resources.DatabaseEgress(t, s.Namespace, servers)
	applier := r.applier(s)
	applier.WholeObject = true
	applier.Repaired = writes.DriftRepaired(log.FromContext(ctx).WithValues("tenant", t.Name), r.Recorder, t)
	result, err := applier.Apply(ctx, policy)
	if err != nil {
		return r.ApplyFailed(t, policy, err)
	}
	if result == apply.Updated {
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonApplied, "Apply", "updated %s: its pods reach the servers of its databases", writes.ObjectRef(policy))
	}
	if len(servers) == 0 {
		return phase.Done(tenancyv1alpha1.ReasonSucceeded, "the tenant's pods reach no database server")
	}
	return phase.Done(tenancyv1alpha1.ReasonSucceeded, "the tenant's pods reach the %d database servers its databases are on, and no other", len(servers))
}
