package tenant

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/databases"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
)

// The database phase of each lifecycle state: each asks the engine that owns the tenant's
// databases and their credentials (package databases), which writes status.databases of the
// draft, and reports its result as the phase's outcome.

// databases is the engine that places, provisions, publishes and drops the tenant's databases;
// made on first use, with the client SetupWithManager set.
func (r *Reconciler) databases() *databases.Engine {
	r.databaseOnce.Do(func() {
		r.databaseEngine = &databases.Engine{Client: r.Client, APIReader: r.APIReader, Config: r.Config, Recorder: r.Recorder,
			Secrets: r.Secrets, Databases: r.Databases, Applied: r.Applied, ApplyFailed: r.applyFailed, Moves: r.Moves}
	})
	return r.databaseEngine
}

// ensureDatabases converges an Active or Frozen tenant's databases and their credentials
// Secrets.
func (r *Reconciler) ensureDatabases(ctx context.Context, s *tenantScope) outcome {
	return r.databases().Ensure(ctx, s.databaseScope())
}

// ensureEgress lets an Active or Frozen tenant's pods reach the servers its databases are on,
// as the databases phase recorded them in the draft, and no other.
func (r *Reconciler) ensureEgress(ctx context.Context, s *tenantScope) outcome {
	return r.databases().AllowEgress(ctx, s.databaseScope())
}

// keepDatabases reports an Archived tenant's databases, which are kept untouched.
func (r *Reconciler) keepDatabases(_ context.Context, s *tenantScope) outcome {
	return r.databases().Keep(s.tenant)
}

// purgeDatabases drops a Purged tenant's databases and forgets their stored credentials, unless
// its condition reports that done for its generation already.
func (r *Reconciler) purgeDatabases(ctx context.Context, s *tenantScope) outcome {
	t := s.tenant
	if conditionCurrent(t, tenancyv1alpha1.DatabasesReadyCondition, tenancyv1alpha1.ReasonDatabasesDropped) {
		s.status.Databases = nil
		c := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.DatabasesReadyCondition)
		return phase.Done(c.Reason, "%s", c.Message)
	}
	return r.databases().Purge(ctx, s.databaseScope())
}

// databaseScope is the reconcile as the database engine sees it.
func (s *tenantScope) databaseScope() databases.Scope {
	scope := databases.Scope{Tenant: s.tenant, Namespace: s.namespace, Verify: s.verify, Status: &s.status}
	if s.class != nil {
		scope.Class, scope.Placement = s.class.Name, s.class.Spec.Databases
	}
	return scope
}
