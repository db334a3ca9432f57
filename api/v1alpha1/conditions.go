package v1alpha1

// Condition types. Ready is always present; Reconciling and Stalled are present only while
// true (kstatus); Suspended only while spec.suspend is true; each of the others is owned by one
// phase of the reconcile.
const (
	// ReadyCondition: always present; True when everything the object's spec asks for is in
	// place, otherwise its reason is that of the first phase not done.
	ReadyCondition = "Ready"
	// ReconcilingCondition: present only while true; Landlord is working towards the current
	// generation, or retrying a transient failure.
	ReconcilingCondition = "Reconciling"
	// StalledCondition: present only while true; Landlord cannot go on without a change from a
	// person, which its reason and message name.
	StalledCondition = "Stalled"
	// SuspendedCondition: present only while spec.suspend is true; Landlord changes nothing of
	// the tenant, whose other conditions keep what was last observed.
	SuspendedCondition = "Suspended"
	// DomainsReadyCondition, while Active or Frozen: every domain of spec.domains is the
	// tenant's, no other tenant holding it and no handover to it under way.
	DomainsReadyCondition = "DomainsReady"
	// NamespaceReadyCondition: the tenant namespace, its RBAC, quota, limits and network
	// policies (or, when Archived or Purged, their removal).
	NamespaceReadyCondition = "NamespaceReady"
	// WorkloadsReadyCondition, while Active or Frozen: the tenant's pods run where and as its
	// spec says (on its node pool, pods left on a former one deleted; none while Frozen), and its
	// kept volumes are bound to its namespace again before any component asks for storage.
	WorkloadsReadyCondition = "WorkloadsReady"
	// SecretsReadyCondition: the shared secrets copied from the template namespace into the
	// tenant's.
	SecretsReadyCondition = "SecretsReady"
	// DatabasesReadyCondition: the tenant's databases, logins and credentials Secrets (or, when
	// Archived or Purged, keeping or dropping them).
	DatabasesReadyCondition = "DatabasesReady"
	// EgressReadyCondition, while Active or Frozen: the tenant's pods may reach the database
	// servers its databases are on, and no other.
	EgressReadyCondition = "EgressReady"
	// ComponentsReadyCondition: the tenant's components, rendered from their ComponentTemplates,
	// applied and rolled out.
	ComponentsReadyCondition = "ComponentsReady"
	// ConnectionsOvercommittedCondition, on a DatabaseServer and only while true: its tenant
	// logins may together hold more sessions than the server has slots for.
	ConnectionsOvercommittedCondition = "ConnectionsOvercommitted"
	// NetworkUndeclaredCondition, on a DatabaseServer and only while true: its host is a DNS name
	// and spec.network declares no address or namespace, so its tenants' NetworkPolicy opens no
	// path to it (ReasonNoTenantPath).
	NetworkUndeclaredCondition = "NetworkUndeclared"
	// SharedDatabasesOpenCondition, on a PostgreSQL DatabaseServer and only while true: PUBLIC
	// keeps rights on the server's shared databases that Landlord takes where it can
	// (ReasonAdministratorCannotConfine).
	SharedDatabasesOpenCondition = "SharedDatabasesOpen"
	// MaxTenantsReachedCondition, on a TenantPool and only while true: the pool has created
	// spec.maxTenants tenants that still exist, and creates no spare.
	MaxTenantsReachedCondition = "MaxTenantsReached"
)

// Condition reasons.
const (
	// ReasonSuspended: spec.suspend is true, and Landlord changes nothing of the tenant.
	ReasonSuspended = "Suspended"
	// ReasonSucceeded: the phase, or the whole object on Ready, is done for the current
	// generation.
	ReasonSucceeded = "Succeeded"
	// ReasonProgressing: work for a new generation has started and is under way.
	ReasonProgressing = "Progressing"
	// ReasonNamespaceTerminating: the tenant namespace (an earlier one of the same name, or this
	// tenant's when Archived) is still being deleted.
	ReasonNamespaceTerminating = "NamespaceTerminating"
	// ReasonNamespaceRemoved: the namespace is removed because the tenant is Archived or
	// Purged; NamespaceReady's done state for those states.
	ReasonNamespaceRemoved = "NamespaceRemoved"
	// ReasonNamespaceMoved: the tenant's namespace, as its status records it, is not the one the
	// operator's configuration names (namespacePrefix changed); Landlord changes nothing of the
	// tenant rather than start it over in a second namespace.
	ReasonNamespaceMoved = "NamespaceMoved"
	// ReasonOwnershipConflict: an object Landlord must write exists and is someone else's (no
	// Landlord owner, another tenant's, or another field manager's); Landlord never takes it over.
	ReasonOwnershipConflict = "OwnershipConflict"
	// ReasonInvalidObject: the API server rejected an object Landlord built, or a shared secret
	// could not be copied.
	ReasonInvalidObject = "InvalidObject"
	// ReasonKindNotAllowed: a component renders a kind the operator may not get, list, watch, create,
	// patch or delete.
	ReasonKindNotAllowed = "KindNotAllowed"
	// ReasonDomainConflict: a domain of the tenant is another tenant's, or no tenant's to take
	// (a wildcard over a public suffix, a name under the base domain).
	ReasonDomainConflict = "DomainConflict"
	// ReasonDomainHandover: a domain the tenant takes over is not its yet, because another
	// tenant's namespace still admits it or another tenant's Ingresses or routes still name it;
	// Landlord deletes those and the tenant takes the domain once they are gone.
	ReasonDomainHandover = "DomainHandover"
	// ReasonApplyFailed: a write to the API server failed for a reason that may pass (a timeout,
	// a conflict); it is retried.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonNamespaceNotReady: a later phase (workloads, secrets, databases, egress,
	// components) waits for the namespace phase.
	ReasonNamespaceNotReady = "NamespaceNotReady"
	// ReasonDomainsNotReady: the components wait for the tenant's domains to be its own: no
	// component is rendered for a domain another tenant holds.
	ReasonDomainsNotReady = "DomainsNotReady"
	// ReasonWorkloadsNotReady: the components wait for the workloads phase: a kept volume is
	// bound to the namespace again before a component could claim new, empty storage.
	ReasonWorkloadsNotReady = "WorkloadsNotReady"

	// ReasonDatabaseUnavailable: a database server did not answer or refused a statement.
	ReasonDatabaseUnavailable = "DatabaseUnavailable"
	// ReasonNoDatabaseServer: no Ready server of the engine has room for the tenant.
	ReasonNoDatabaseServer = "NoDatabaseServer"
	// ReasonClassNotFound: spec.class names a TenantClass that does not exist; nothing of the
	// tenant changes until it does.
	ReasonClassNotFound = "ClassNotFound"
	// ReasonClassOverrideRefused: the tenant sets a field its class does not let it set (one
	// admitted before the class changed); nothing of the tenant changes until one of them does.
	ReasonClassOverrideRefused = "ClassOverrideRefused"
	// ReasonClassMoveFailed: a database no longer fits its class's placement, and the
	// DatabaseMove Landlord made to move it failed; the database stays where it is.
	ReasonClassMoveFailed = "ClassMoveFailed"
	// ReasonDatabaseServerConflict: spec names a server other than the one holding the database.
	ReasonDatabaseServerConflict = "DatabaseServerConflict"
	// ReasonStoreUnavailable: the secret store did not answer.
	ReasonStoreUnavailable = "StoreUnavailable"
	// ReasonDatabasesKept: the databases are kept while the tenant is Archived.
	ReasonDatabasesKept = "DatabasesKept"
	// ReasonDatabasesDropped: a Purged tenant's databases and logins are dropped.
	ReasonDatabasesDropped = "DatabasesDropped"

	// ReasonTemplateNotFound: a pinned ComponentTemplate does not exist.
	ReasonTemplateNotFound = "TemplateNotFound"
	// ReasonRenderFailed: a template did not render, or rendered something not allowed.
	ReasonRenderFailed = "RenderFailed"
	// ReasonRollingOut: applied, waiting for workloads to roll out.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutFailed: a component's workload will not roll out without a change (its
	// Deployment is past its progress deadline); the message is the workload's own.
	ReasonRolloutFailed = "RolloutFailed"
	// ReasonMigrating: a component's migration to a new version runs (its backup, its fence, a
	// pre migration, or a post migration); status.components[].migration says which.
	ReasonMigrating = "Migrating"
	// ReasonMigrationFailed: a component's migration failed, naming the version, the Job and
	// its termination message; the workloads stay on the version they ran. A ComponentRollout
	// counts it as its version's failure.
	ReasonMigrationFailed = "MigrationFailed"
	// ReasonMigrationNotStarted: a component's migration Job never got a pod to run before its
	// timeout (the tenant's quota, limit range or policies refused it): the workloads stay on
	// the version they ran, and a ComponentRollout counts it as the tenant's own failure, not
	// the version's.
	ReasonMigrationNotStarted = "MigrationNotStarted"

	// ReasonForeignData: data the tenant would use (a stored credentials record, a database, a
	// login, a volume) belongs to another tenant, or was not created by Landlord. The message
	// says whose it is; nothing of it is used, changed or dropped.
	ReasonForeignData = "ForeignData"
	// ReasonAdoptedDataMissing: the database or login of the tenant this one adopts
	// (AdoptDataAnnotation), recorded in the secret store, is not on the DatabaseServer the
	// record names; nothing is created in its place.
	ReasonAdoptedDataMissing = "AdoptedDataMissing"
	// ReasonMovedAway: a Purged tenant that was moved to another cluster (MovedToAnnotation)
	// keeps a database the move's destination has not taken over yet.
	ReasonMovedAway = "MovedAway"
	// ReasonDataAbandoned: a deletion or purge forgot data it could not reach, as the tenant's
	// AbandonDataAnnotation asked; the event says what and where it still lives.
	ReasonDataAbandoned = "DataAbandoned"
	// ReasonVolumesKept: the tenant's persistent volumes are switched to Retain and kept while
	// its namespace is gone.
	ReasonVolumesKept = "VolumesKept"
	// ReasonVolumesDeleted: a Purged tenant's kept volumes are deleted.
	ReasonVolumesDeleted = "VolumesDeleted"
	// ReasonShardHandover: the tenant's shard label names another operator shard than the one
	// that reconciled it; that one has handed it over (status.handoverTo), and the tenant waits
	// for the shard named to take it over.
	ReasonShardHandover = "ShardHandover"

	// ReasonReachable: on a DatabaseServer, Landlord connected with its admin credentials and
	// the server answered.
	ReasonReachable = "Reachable"
	// ReasonConnectionLimitTooHigh: the server's tenant logins may together hold more sessions
	// than it has (ConnectionsOvercommitted).
	ReasonConnectionLimitTooHigh = "ConnectionLimitTooHigh"
	// ReasonUnreachable: a DatabaseServer did not answer, refused the admin login, or failed TLS
	// verification.
	ReasonUnreachable = "Unreachable"
	// ReasonCredentialsMissing: a DatabaseServer's admin credentials Secret is missing or
	// incomplete; on a tenant, a database in place has neither its stored credentials nor an
	// intact credentials Secret, and is not given a new password without a rotation request.
	ReasonCredentialsMissing = "CredentialsMissing"
	// ReasonServerMisconfigured: a DatabaseServer's spec makes no connection, whatever its admin
	// credentials (a CA bundle holding no certificate, an unknown TLS mode or engine).
	ReasonServerMisconfigured = "ServerMisconfigured"
	// ReasonQuotaExceeded: a component's workload cannot create its pods because the tenant's
	// quota is used up, by the tenant's own pods among others. It is the tenant's to free room
	// (or the platform's to raise the quota); a rollout counts it as the tenant's own failure,
	// never the version's.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonNoTenantPath: a DatabaseServer's tenants' pods have no declared network path to it
	// (NetworkUndeclared); they reach it only where network.egressCIDRs covers its addresses.
	ReasonNoTenantPath = "NoTenantPath"
	// ReasonAdministratorCannotConfine: the server's administrator neither owns its shared
	// databases nor is a superuser, so PUBLIC keeps rights on them (SharedDatabasesOpen).
	ReasonAdministratorCannotConfine = "AdministratorCannotConfine"
)

// Labels and annotations that Landlord puts on what it manages.
const (
	// ManagedByLabel marks every object Landlord creates; the operator's cache only sees objects
	// carrying it, so memory scales with tenants rather than with the cluster.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "landlord"
	// HelmResourcePolicyAnnotation: keep, and FluxPruneAnnotation: disabled, on what every
	// tenant depends on (CRDs, admission policies, tenant roles) tell `helm uninstall` and Flux's
	// prune to leave it: removing the operator must not remove the tenants or their isolation.
	HelmResourcePolicyAnnotation = "helm.sh/resource-policy"
	FluxPruneAnnotation          = "kustomize.toolkit.fluxcd.io/prune"
	// TenantLabel names the tenant an object belongs to.
	TenantLabel = "tenancy.landlord.dev/tenant"
	// ShardLabel on a Tenant names the operator shard (--shard) that reconciles it; a tenant
	// without it (or with it empty) belongs to the default shard. Every object Landlord writes
	// for the tenant carries the same label, so each shard's cache selects only its own tenants'
	// objects.
	ShardLabel = "tenancy.landlord.dev/shard"
	// NodePoolLabel on a tenant namespace names the node pool its pods run on.
	NodePoolLabel = "tenancy.landlord.dev/node-pool"
	// CostCodeLabel on a tenant namespace, and on every pod created or updated in it, is the
	// tenant's spec.costCode, for cloud cost tools to attribute spend by.
	CostCodeLabel = "tenancy.landlord.dev/cost-code"
	// PodsPoolAnnotation on a tenant namespace names the node pool its running pods were placed
	// on, empty for none. It differs from NodePoolLabel only while the tenant moves to another
	// pool: the operator deletes the pods placed for the old one, then records the new one.
	PodsPoolAnnotation = "tenancy.landlord.dev/pods-pool"
	// DatabasesSwitchedAnnotation on the pod template of a component's Deployment, StatefulSet
	// or DaemonSet is when a DatabaseMove last switched one of the tenant's databases to another
	// server (status.databases[].switchedAt): its change restarts the pods onto the new
	// server's credentials. Absent for a tenant whose databases never moved.
	DatabasesSwitchedAnnotation = "tenancy.landlord.dev/databases-switched"
	// DomainsAnnotation on a tenant namespace lists the domains the tenant serves, comma separated.
	DomainsAnnotation = "tenancy.landlord.dev/domains"
	// IngressClassesAnnotation on a tenant namespace lists the Ingress classes the tenant's
	// Ingresses may name, comma separated; without it any class is allowed.
	IngressClassesAnnotation = "tenancy.landlord.dev/ingress-classes"
	// PriorityClassesAnnotation on a tenant namespace lists the PriorityClasses the tenant's pods
	// may name, comma separated; without it they may name none.
	PriorityClassesAnnotation = "tenancy.landlord.dev/priority-classes"
	// TolerationsAnnotation on a tenant namespace lists the taints the tenant's pods may tolerate
	// besides their node pool's and Kubernetes' node conditions, comma separated, each as
	// "key[=value][:Effect]"; without it they may tolerate no other.
	TolerationsAnnotation = "tenancy.landlord.dev/tolerations"
	// WorkloadsAnnotation on a tenant namespace lists the workloads Landlord renders there for
	// the tenant's components that have a scale subresource, comma separated, each as
	// "resource.group/name" (deployments.apps/web). The scale subresource carries neither the
	// labels nor the owner of its object, so the admission policy that keeps tenant users from
	// scaling Landlord's workloads knows them by this list.
	WorkloadsAnnotation = "tenancy.landlord.dev/workloads"
	// SharedLabel ("true") on a secret in the template namespace shares it with tenants.
	SharedLabel = "tenancy.landlord.dev/shared"
	// TenantSelectorAnnotation on a shared secret limits it to tenants whose labels match this
	// label selector (e.g. "plan=enterprise").
	TenantSelectorAnnotation = "tenancy.landlord.dev/tenant-selector"
	// SharedCopyLabel ("true") marks a tenant's copy of a shared secret.
	SharedCopyLabel = "tenancy.landlord.dev/shared-copy"
	// SourceAnnotation on a copy names the secret it was copied from; SourceHashAnnotation is a
	// digest of the source's type and data, to tell at a glance whether the copy is current.
	SourceAnnotation     = "tenancy.landlord.dev/source"
	SourceHashAnnotation = "tenancy.landlord.dev/source-hash"
	// FromStoreLabel ("true") marks template secrets written from the secret store; only those
	// are removed when they leave the store.
	FromStoreLabel = "tenancy.landlord.dev/from-store"
	// DatabaseServerAnnotation on a credentials Secret names the DatabaseServer holding the
	// database; DatabaseEngineLabel marks stored credentials with the database's engine;
	// RotationAnnotation is the rotation request the password answers; CredentialsDigestAnnotation
	// is a digest of the login and password, so a Secret edited by hand is noticed and rewritten.
	DatabaseServerAnnotation    = "tenancy.landlord.dev/database-server"
	DatabaseEngineLabel         = "tenancy.landlord.dev/database-engine"
	RotationAnnotation          = "tenancy.landlord.dev/rotation"
	CredentialsDigestAnnotation = "tenancy.landlord.dev/credentials-digest"
	// ComponentLabel names the component an object was rendered for.
	ComponentLabel = "tenancy.landlord.dev/component"
	// MigrationLabel marks a component's migration Job and its pods with the move it belongs to
	// (a tenant's component from one version to another): tenant users may neither change nor
	// delete them.
	MigrationLabel = "tenancy.landlord.dev/migration"
	// BackupJobLabel marks the Jobs (and their plans' Secrets) that back up or restore a tenant,
	// in the operator's namespace, with what they do: backup or restore.
	BackupJobLabel = "tenancy.landlord.dev/job"
	// PoolLabel names the TenantPool a tenant was created by. AllocatedLabel ("true") marks a
	// tenant handed to a customer by a claim: the pool never touches it again. ClaimAnnotation
	// names the claim ("namespace/name") and ClaimUIDLabel its UID, so a retried bind finds its
	// own tenant. OrganizationAnnotation and EmailAnnotation carry the claim's customer, since
	// Landlord never writes a tenant's spec.
	PoolLabel              = "tenancy.landlord.dev/pool"
	AllocatedLabel         = "tenancy.landlord.dev/allocated"
	ClaimUIDLabel          = "tenancy.landlord.dev/claim-uid"
	ClaimAnnotation        = "tenancy.landlord.dev/claim"
	OrganizationAnnotation = "tenancy.landlord.dev/organization"
	EmailAnnotation        = "tenancy.landlord.dev/email"
	// TenantUIDLabel carries the UID of the tenant a piece of data belongs to: on stored
	// credentials records (as an annotation) and on the PersistentVolumes Landlord keeps. Data
	// is used, changed or dropped only for the tenant of that UID.
	TenantUIDLabel = "tenancy.landlord.dev/tenant-uid"
	// SecretStoreAnnotation on the template namespace records the identity of the secret store
	// it is mirrored from. A sync reading any other store changes nothing there; removing the
	// annotation is how an administrator moves the cluster to another store on purpose.
	SecretStoreAnnotation = "tenancy.landlord.dev/secret-store"
	// DeletionConfirmationAnnotation on a Tenant, set to the tenant's own name, lets it be deleted
	// while Active or Frozen: without it Landlord's admission policy refuses the deletion, since
	// it would take the customer's namespace and running application down at once.
	DeletionConfirmationAnnotation = "tenancy.landlord.dev/confirm-deletion"
	// AdoptDataAnnotation on a Tenant names the UID of an earlier tenant (deleted without being
	// Purged, or in another cluster) whose kept data the tenant takes over: its databases,
	// logins, stored credentials and volumes. Without it, a tenant never uses another's data.
	AdoptDataAnnotation = "tenancy.landlord.dev/adopt-data-from"
	// MovedToAnnotation on a Tenant names the API server of the cluster it was moved to
	// (landlordctl move). While it is there, Landlord's admission policy refuses to make the
	// tenant Active: it would use the databases the moved tenant uses.
	// Removing it, on purpose, is how the tenant is brought back here.
	MovedToAnnotation = "tenancy.landlord.dev/moved-to"
	// AbandonDataAnnotation on a Tenant, set to the tenant's own UID, lets its deletion or purge
	// forget data it can no longer reach (a DatabaseServer gone for good, a corrupt stored
	// record). What is abandoned is named in an event and the operator log. Requiring the UID
	// keeps the annotation from being copied between tenants by accident.
	AbandonDataAnnotation = "tenancy.landlord.dev/abandon-unreachable-data"
	// VolumeClaimAnnotation on a kept PersistentVolume names the claim it was bound to in the
	// tenant namespace; ReclaimPolicyAnnotation is the reclaim policy it had before Landlord
	// switched it to Retain, restored when the tenant is Purged.
	VolumeClaimAnnotation   = "tenancy.landlord.dev/claim-name"
	ReclaimPolicyAnnotation = "tenancy.landlord.dev/reclaim-policy"
	// ReconcileRequestAnnotation on a Tenant requests a reconcile now: each time its value (any
	// string, commonly an RFC 3339 time) changes, the tenant is converged at once, every object
	// of it compared in full and its databases checked on their servers, and the value is copied
	// to status.lastHandledReconcileAt. It is Landlord's counterpart of Flux's
	// reconcile.fluxcd.io/requestedAt. A suspended tenant handles it once resumed.
	ReconcileRequestAnnotation = "tenancy.landlord.dev/reconcile-requested-at"
	// Finalizer makes tenant deletion orderly.
	Finalizer = "tenancy.landlord.dev/finalizer"
	// BackupsFinalizer is on a tenant that has backups: a Purged tenant goes only once its
	// backups are deleted and its data key destroyed (backups.keepAfterPurge may keep them a
	// while); any other tenant's backups are kept, and the finalizer only removed.
	BackupsFinalizer = "tenancy.landlord.dev/backups"
)
