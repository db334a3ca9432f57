package tenant

import (
	"context"

	"github.com/landlord-dev/landlord/internal/controller/tenant/components"
)

// ensureComponents converges the tenant's components (package components) and records each in
// the status draft.
func (r *Reconciler) ensureComponents(ctx context.Context, s *tenantScope) outcome {
	var res components.Result
	s.status.Components, res = r.components().Ensure(ctx, s.tenant, s.namespace, s.verify)
	return outcome{done: res.Done, stalled: res.Stalled, reason: res.Reason, message: res.Message, err: res.Err}
}

// result is the outcome as the components engine reports it.
func (o outcome) result() components.Result {
	return components.Result{Done: o.done, Stalled: o.stalled, Reason: o.reason, Message: o.message, Err: o.err}
}
