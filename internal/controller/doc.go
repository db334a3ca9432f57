// Package controller is the home of Landlord's reconcilers, one package each. The suite that
// runs them together, as the operator does, against the whole local cluster is
// test/integration.
//
// The reconcilers, each importing none of the others:
//
//	tenant            a Tenant into its namespace, access, quota, policies, databases, secrets
//	                  and components; a table of phases per lifecycle state, with engines of
//	                  its own for domains (tenant/domains), the namespace (tenant/namespaces),
//	                  pods and volumes (tenant/workloads), databases (tenant/databases) and
//	                  components (tenant/components)
//	tenantpool        a TenantPool's spare tenants, kept Ready
//	tenantclaim       a TenantClaim bound to one of its pool's Ready spares
//	databaseserver    a DatabaseServer's reachability and capacity
//	componentrollout  a ComponentRollout's waves, released one after another
//	admissionpolicy   Landlord's admission policies and bindings, and the audit of what was
//	                  created while they were absent
//	tenantbackup      a TenantBackup or TenantRestore run as a Job over one tenant's databases,
//	                  a schedule's backups, and a Purged tenant's backups and data key dropped
//	databasemove      a DatabaseMove: a tenant's database fenced, copied to another server and
//	                  proven equal, the tenant switched to it, the old copy dropped once confirmed
//	classrollout      a TenantClass's revisions, and how a change of it reaches its tenants: at
//	                  once, in waves, or only tenants joining it
//	templatemirror    the template namespace, mirrored from the secret store by
//	                  internal/templatesync (which landlordctl runs too)
//
// What several of them share, in packages that import no reconciler:
//
//	indexes         every field index they list by, registered with one call
//	jobslots        each database server's limit of Jobs at once, shared by migrations, backups
//	                and restores, and who waits for a place
//	backupjobs      the Jobs of the backup image over a tenant's databases (backups, restores,
//	                database moves' copies): plan Secret, hardened pod, creation and end
//	conditions      the kstatus conditions of a status draft
//	writes          status patched only when changed, deletes only of what the owner controls,
//	                conflicts retried, drift repairs recorded, object names in logs and events
//	leadermetrics   metrics the leader computes from its cache when scraped, never per tenant
//	shutdown        a reconcile cut short by the operator stopping, kept out of the error log
//	controllertest  fixtures for the reconcilers' unit tests (imported by tests only)
//
// The pure rules of a rollout are internal/rollout's; the objects a tenant is made of are built
// by internal/resources; what a backup Job does is internal/backup's; how shards split the
// tenants is internal/shard's. The commands import none of the reconcilers.
package controller
