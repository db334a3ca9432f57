package tenant

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// ensureComponents converges the tenant's components (package components) and records each in
// the status draft.
func (r *Reconciler) ensureComponents(ctx context.Context, s *tenantScope) outcome {
	var res outcome
	s.status.Components, res = r.components().Ensure(ctx, s.tenant, s.namespace, s.verify, databasesSwitched(s.status.Databases))
	return res
}

// databasesSwitched is the last time a move switched one of the databases to another server, as
// the databases phase recorded it in the draft; "" when none ever moved.
func databasesSwitched(dbs []tenancyv1alpha1.DatabaseStatus) string {
	var last *metav1.Time
	for i := range dbs {
		if at := dbs[i].SwitchedAt; at != nil && (last == nil || last.Before(at)) {
			last = at
		}
	}
	if last == nil {
		return ""
	}
	return last.UTC().Format(time.RFC3339)
}
