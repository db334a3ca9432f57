package tenant

import (
	"context"
)

// ensureComponents converges the tenant's components (package components) and records each in
// the status draft.
func (r *Reconciler) ensureComponents(ctx context.Context, s *tenantScope) outcome {
	var res outcome
	s.status.Components, res = r.components().Ensure(ctx, s.tenant, s.namespace, s.verify)
	return res
}
