package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantState is where a tenant is in its lifecycle.
// +kubebuilder:validation:Enum=Active;Frozen;Archived;Purged
type TenantState string

const (
	// StateActive: namespace, RBAC, policy and workloads present and running.
	StateActive TenantState = "Active"
	// StateFrozen: everything kept, workloads scaled to zero.
	StateFrozen TenantState = "Frozen"
	// StateArchived: the namespace is removed; data (databases, stored credentials) is kept, so
	// returning to Active restores the tenant.
	StateArchived TenantState = "Archived"
	// StatePurged: everything is removed, data included. Final.
	StatePurged TenantState = "Purged"
)

// PodSecurityLevel is a Pod Security Standards level enforced on the tenant namespace.
// +kubebuilder:validation:Enum=baseline;restricted
type PodSecurityLevel string

const (
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// Subject is a user, group or service account bound to one of the tenant roles.
// +kubebuilder:validation:XValidation:rule="self.kind == 'ServiceAccount' ? has(self.__namespace__) : !has(self.__namespace__)",message="namespace is required for a ServiceAccount subject and not allowed for a User or Group"
type Subject struct {
	// Kind of the subject.
	// +kubebuilder:validation:Enum=User;Group;ServiceAccount
	Kind string `json:"kind"`

	// Name of the user, group or service account.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// Namespace of a ServiceAccount subject.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// Access lists who may use the tenant's namespace, by role.
type Access struct {
	// Admins manage workloads, configuration and secrets in the tenant namespace.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Admins []Subject `json:"admins,omitempty"`

	// Operators manage workloads and configuration, but cannot read secrets.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Operators []Subject `json:"operators,omitempty"`

	// Viewers read workloads and configuration, but not secrets.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Viewers []Subject `json:"viewers,omitempty"`
}

// Limits are the per-container defaults and maximums of the tenant's LimitRange.
type Limits struct {
	// Default limits for a container that sets none.
	// +optional
	Default corev1.ResourceList `json:"default,omitempty"`

	// DefaultRequest is the request for a container that sets none.
	// +optional
	DefaultRequest corev1.ResourceList `json:"defaultRequest,omitempty"`

	// Max is the largest limit a container may set.
	// +optional
	Max corev1.ResourceList `json:"max,omitempty"`
}

// Domain is a DNS name the tenant may serve, optionally a wildcard ("*.acme.example.com").
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:XValidation:rule="self.matches('^([*][.])?([a-z0-9]([-a-z0-9]*[a-z0-9])?[.])+[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a lowercase DNS name such as acme.example.com, optionally starting with '*.'"
type Domain string

// IngressClassName names an IngressClass: a DNS subdomain.
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be an IngressClass name such as nginx (lowercase letters, digits, '-' and '.')"
type IngressClassName string

// TenantSpec is the desired state of one customer instance.
type TenantSpec struct {
	// State is the lifecycle state. Purged is final and requires purgeConfirmation.
	// +kubebuilder:default=Active
	// +kubebuilder:validation:XValidation:rule="oldSelf != 'Purged' || self == 'Purged'",message="a Purged tenant is final and cannot change state"
	// +optional
	State TenantState `json:"state,omitempty"`

	// Suspend, while true, stops Landlord from changing anything of the tenant: no lifecycle
	// phase runs, nothing that drifted is repaired, no shared secret is copied, no component or
	// database is changed. The status says so with the Suspended condition and otherwise keeps
	// what was last observed. Setting it back to false (or removing it) converges the tenant at
	// once, repairing whatever drifted meanwhile. Deleting a suspended tenant still runs its
	// finalizer, which keeps its data unless it is Purged.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// PurgeConfirmation must equal the tenant's name when state is Purged, so that data is never
	// dropped by a typo or a copied manifest.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	PurgeConfirmation string `json:"purgeConfirmation,omitempty"`

	// Organization is the customer's name, for people. It holds no control characters or line
	// breaks (to YAML, U+0085, U+2028 and U+2029 are line breaks too): templates print it into
	// manifests, where a line break would add fields of the tenant's choosing.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'[\\p{Cc}\\x{2028}\\x{2029}]')",message="organization must not contain control characters or line breaks"
	// +optional
	Organization string `json:"organization,omitempty"`

	// Email is the customer's contact address, without control characters or line breaks.
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^@ ]+@[^@ ]+[.][^@ ]+$')",message="must be an email address such as ops@example.com"
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'[\\p{Cc}\\x{2028}\\x{2029}]')",message="email must not contain control characters or line breaks"
	// +optional
	Email string `json:"email,omitempty"`

	// Class names the TenantClass (the plan, or tier) the tenant is of: its quota, limits, node
	// pool, database placement, maintenance windows, components and cost code are the class's,
	// and the tenant may set only the fields the class's overrides list (refused at admission
	// otherwise). Changing it moves the tenant to the new tier: its pods to the new node pool,
	// its databases (by DatabaseMoves Landlord creates) to servers the new class places them on.
	// A tenant naming a class that does not exist stalls with ClassNotFound, changing nothing.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be a TenantClass's name (lowercase letters, digits, '-' and '.')"
	// +optional
	Class string `json:"class,omitempty"`

	// Access binds users, groups and service accounts to the tenant roles.
	// +optional
	Access Access `json:"access,omitempty"`

	// Quota is the tenant namespace's ResourceQuota (hard limits); resources not named here
	// take the operator's defaults. NodePort and LoadBalancer services are always capped at 0.
	// +optional
	Quota corev1.ResourceList `json:"quota,omitempty"`

	// Limits are the container defaults and maximums; unset fields take the operator's defaults.
	// +optional
	Limits *Limits `json:"limits,omitempty"`

	// PodSecurity is the Pod Security Standards level enforced in the namespace; the operator's
	// default (restricted unless configured otherwise) when empty.
	// +optional
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`

	// NodePool names the pool of nodes the tenant's pods run on.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label (lowercase letters, digits and '-')"
	// +optional
	NodePool string `json:"nodePool,omitempty"`

	// CostCode is what cloud cost tools attribute the tenant's spend to: Landlord labels the
	// tenant's namespace and every pod created or updated in it with
	// tenancy.landlord.dev/cost-code=<costCode>, and reports it with the tenant's usage.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="must be a label value: letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
	// +optional
	CostCode string `json:"costCode,omitempty"`

	// Domains the tenant serves.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	Domains []Domain `json:"domains,omitempty"`

	// IngressClasses are the Ingress classes the tenant's Ingresses may name (spec.ingressClassName
	// or the legacy kubernetes.io/ingress.class annotation); the operator's
	// isolation.ingressClasses when empty. While either lists classes, an Ingress naming none
	// is refused, since the cluster's default class may be any controller.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	IngressClasses []IngressClassName `json:"ingressClasses,omitempty"`

	// Databases are the tenant's own databases and logins on shared database servers.
	// +optional
	Databases Databases `json:"databases,omitempty"`

	// PgBouncer tunes the connection pooler in front of the tenant's PostgreSQL databases.
	// +optional
	PgBouncer *PgBouncer `json:"pgbouncer,omitempty"`

	// Components are the application components the tenant runs, each pinned to a version.
	// Keyed by name, so a tool can change one entry with server-side apply.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	Components []Component `json:"components,omitempty"`

	// MaintenanceWindows are the weekly times a ComponentRollout may move the tenant (take its
	// backup, run its migrations, change its version); any time when empty. A rollout moves the
	// tenant's wave-mates meanwhile, names the tenant and its next window in its status, and
	// counts the tenant's progress deadline from its window's start. A rollout with
	// strategy.ignoreMaintenanceWindows (an urgent fix) moves it at once. A move begun in a
	// window is finished after it closes. Changing spec.components moves the tenant at once.
	// +kubebuilder:validation:MaxItems=14
	// +listType=atomic
	// +optional
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows,omitempty"`
}

// Weekday is a day of the week.
// +kubebuilder:validation:Enum=Monday;Tuesday;Wednesday;Thursday;Friday;Saturday;Sunday
type Weekday string

// MaintenanceWindow is a weekly window: it opens at Start on each of Days, in TimeZone, and
// stays open for Duration (which may run into the next day).
type MaintenanceWindow struct {
	// Days the window opens on; every day when empty.
	// +kubebuilder:validation:MaxItems=7
	// +listType=set
	// +optional
	Days []Weekday `json:"days,omitempty"`

	// Start is the time of day the window opens, HH:MM (24-hour clock).
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="self.matches('^([01][0-9]|2[0-3]):[0-5][0-9]$')",message="must be a time of day as HH:MM, such as 02:00"
	Start string `json:"start"`

	// Duration is how long the window stays open: from 15m to 24h.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('15m') && duration(self) <= duration('24h')",message="must be from 15m to 24h"
	Duration metav1.Duration `json:"duration"`

	// TimeZone is an IANA time zone name (Europe/Paris); UTC when empty, and when the
	// operator's time zone database does not know the name.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// Component pins one application component to a version.
type Component struct {
	// Name of the component (its ComponentTemplates' spec.component).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label (lowercase letters, digits and '-')"
	Name string `json:"name"`

	// Version to run: the ComponentTemplate <name>-<version> renders it. With followRollouts,
	// the version to start from: once a ComponentRollout has moved the component, the version
	// the tenant runs is in status.components.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	Version string `json:"version"`

	// FollowRollouts lets ComponentRollouts that choose the tenant move the component to their
	// version; the spec stays as Git has it. Without it the version is pinned, and rollouts
	// leave the component alone; one that stops following keeps the version a rollout gave it
	// until spec.version names that version or a higher one.
	// +optional
	FollowRollouts bool `json:"followRollouts,omitempty"`

	// Values override the template's and the operator's default values.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// ComponentStatus is how one component of the tenant is doing.
type ComponentStatus struct {
	// Name of the component.
	Name string `json:"name"`
	// Version last applied.
	// +optional
	Version string `json:"version,omitempty"`
	// Rollout is the ComponentRollout whose version the component runs, when one has moved it;
	// the version stays when the rollout is deleted, while the tenant is Archived, and when the
	// component stops following rollouts while its spec names a lower version.
	// +optional
	Rollout string `json:"rollout,omitempty"`
	// RolloutCreated is when that rollout was created: a rollback (spec.rollback) moves the
	// component down only from a version that a rollout created no later than it gave.
	// +optional
	RolloutCreated *metav1.Time `json:"rolloutCreated,omitempty"`
	// Ready is true when every workload of the applied version has rolled out.
	Ready bool `json:"ready"`
	// Message says what the component is waiting for, or why it failed.
	// +optional
	Message string `json:"message,omitempty"`
	// Reason is why the component is stalled, while it is (QuotaExceeded, RolloutFailed,
	// RenderFailed, TemplateNotFound, KindNotAllowed); empty otherwise. A rollout reads it to
	// tell a failure of its version from one of the tenant's own.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Inventory lists the objects applied for the component ("group/Kind/name"), so those that
	// leave its manifests are pruned.
	// +listType=atomic
	// +optional
	Inventory []string `json:"inventory,omitempty"`
	// Migration is the component's last migration: under way, failed, or done.
	// +optional
	Migration *MigrationStatus `json:"migration,omitempty"`
}

// MigrationPhase is where a tenant's migration of a component is.
// +kubebuilder:validation:Enum=BackingUp;Fencing;Pre;Applying;Post;Succeeded;Failed
type MigrationPhase string

const (
	// MigrationBackingUp: the backup taken before the migrations runs.
	MigrationBackingUp MigrationPhase = "BackingUp"
	// MigrationFencing: the running version is being scaled to zero (fenceWriters).
	MigrationFencing MigrationPhase = "Fencing"
	// MigrationPre: a pre migration runs; the workloads are still at the version they ran.
	MigrationPre MigrationPhase = "Pre"
	// MigrationApplying: the pre migrations succeeded; the version is being rolled out.
	MigrationApplying MigrationPhase = "Applying"
	// MigrationPost: every workload is Ready at the version, and a post migration runs.
	MigrationPost MigrationPhase = "Post"
	// MigrationSucceeded: every migration succeeded.
	MigrationSucceeded MigrationPhase = "Succeeded"
	// MigrationFailed: a migration (or the backup it required) failed. The tenant stays on
	// the version it ran (a post migration's failure leaves it at the new one) until another
	// version is chosen, or a reconcile is requested (landlordctl reconcile), which runs the
	// failed migration again as a new attempt.
	MigrationFailed MigrationPhase = "Failed"
)

// MigrationStatus is one migration of a tenant's component from a version to another.
type MigrationStatus struct {
	// From is the version the component ran; empty for a new tenant.
	// +optional
	From string `json:"from,omitempty"`
	// To is the version migrated to.
	To string `json:"to"`
	// Phase is where the migration is.
	Phase MigrationPhase `json:"phase"`
	// Step is the migration running, or that failed: <version>/<pre|post>/<name>.
	// +optional
	Step string `json:"step,omitempty"`
	// Job is the Job of that step, in the tenant's namespace.
	// +optional
	Job string `json:"job,omitempty"`
	// Backup is the TenantBackup taken before the migrations: restore it (a TenantRestore
	// naming it, or landlordctl restore) to bring the data back as it was, losing what was
	// written since. Never restored by Landlord on its own.
	// +optional
	Backup string `json:"backup,omitempty"`
	// Attempts counts the times the migration was started: a reconcile requested after a
	// failure starts another attempt, from the step that failed (from the first step when a
	// TenantRestore into the tenant succeeded since the failed attempt began).
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// Done counts the steps of the move (its pre migrations, then its post ones) that
	// succeeded: never run again, even should their Jobs be deleted.
	// +optional
	Done int32 `json:"done,omitempty"`
	// StepStartedAt is when the Job of the step running was created: a ComponentRollout counts
	// the tenant's progress deadline from it, not from the time the tenant waited its turn.
	// +optional
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`
	// StartedAt is when the migration began; FinishedAt when it succeeded or failed.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Message says what the migration waits for, or why it failed (the Job's termination
	// message).
	// +optional
	Message string `json:"message,omitempty"`
	// Reason is why a failed migration failed: MigrationFailed (it ran and failed, or its backup
	// did), or MigrationNotStarted (its Job never got a pod to run: the tenant's namespace
	// refused it, which says nothing of the version).
	// +optional
	Reason string `json:"reason,omitempty"`
}

// Databases lists a tenant's databases by engine. A name is used once across engines, because
// it names the tenant's credentials Secret, db-<name>.
// +kubebuilder:validation:XValidation:rule="!has(self.postgres) || !has(self.mysql) || self.postgres.all(p, !self.mysql.exists(m, m.name == p.name))",message="a database name may be used by only one engine: it names the Secret db-<name>"
type Databases struct {
	// Postgres are PostgreSQL databases.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Postgres []Database `json:"postgres,omitempty"`

	// MySQL are MySQL or MariaDB databases.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	MySQL []Database `json:"mysql,omitempty"`
}

// Database is one tenant database and the login that owns it.
type Database struct {
	// Name identifies the database within the tenant; its credentials are in the Secret
	// db-<name> in the tenant namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label (lowercase letters, digits and '-')"
	Name string `json:"name"`

	// Server names the DatabaseServer to place the database on. When empty, Landlord picks a
	// Ready server of the engine with the fewest tenants and records it in status. Changing it
	// once the database is in place moves nothing by itself: the tenant reports
	// DatabaseServerConflict until a DatabaseMove to the server named has switched it there.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Server string `json:"server,omitempty"`

	// Rotation requests new credentials: each time it changes to a value not yet applied (a
	// date, a ticket number), a new password is generated and applied to the server, the
	// secret store and the Secret db-<name>.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Rotation string `json:"rotation,omitempty"`
}

// PgBouncer tunes the connection pooler in front of the tenant's PostgreSQL databases.
type PgBouncer struct {
	// DefaultPoolSize is the number of server connections per database and login.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	DefaultPoolSize int32 `json:"defaultPoolSize,omitempty"`
}

// DatabaseStatus is where one of the tenant's databases lives and whether it is in place.
type DatabaseStatus struct {
	// Engine of the database.
	Engine DatabaseEngine `json:"engine"`
	// Name of the database in the tenant spec.
	Name string `json:"name"`
	// Server is the DatabaseServer holding the database; only a DatabaseMove changes it.
	Server string `json:"server"`
	// Database is the database's name on the server.
	Database string `json:"database"`
	// Username is the login that owns the database.
	Username string `json:"username"`
	// SecretName is the Secret in the tenant namespace holding the credentials.
	SecretName string `json:"secretName"`
	// Rotation is the last rotation request applied.
	// +optional
	Rotation string `json:"rotation,omitempty"`
	// ConnectionLimit is the session limit the login was last given (the server's
	// status.connectionLimit, or its spec.connectionLimit; 0 is unlimited): when the server's
	// changes, the login is given the new one.
	// +optional
	ConnectionLimit *int32 `json:"connectionLimit,omitempty"`
	// SwitchedAt is when a DatabaseMove last switched the database to this server. The pods of
	// the tenant's components carry it (the annotation tenancy.landlord.dev/databases-switched),
	// so that they restart with the new server's credentials.
	// +optional
	SwitchedAt *metav1.Time `json:"switchedAt,omitempty"`
}

// VolumeStatus is a persistent volume of the tenant that Landlord keeps while the tenant
// namespace is gone (Archived): its reclaim policy is Retain, and the claim of the same name
// is bound to it again when the tenant is Active.
type VolumeStatus struct {
	// Claim is the PersistentVolumeClaim's name in the tenant namespace.
	Claim string `json:"claim"`
	// Volume is the PersistentVolume's name.
	Volume string `json:"volume"`
}

// TenantStatus is the observed state of a tenant.
type TenantStatus struct {
	// ObservedGeneration is the generation last reconciled to completion or to a terminal error.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`

	// Namespace is the tenant's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Databases are the tenant's databases that are in place, and where.
	// +listType=map
	// +listMapKey=engine
	// +listMapKey=name
	// +optional
	Databases []DatabaseStatus `json:"databases,omitempty"`

	// Volumes are the tenant's persistent volumes kept while its namespace is gone, to be bound
	// again to claims of the same names when it is Active.
	// +listType=map
	// +listMapKey=claim
	// +optional
	Volumes []VolumeStatus `json:"volumes,omitempty"`

	// Components are the tenant's components as last applied.
	// +listType=map
	// +listMapKey=name
	// +optional
	Components []ComponentStatus `json:"components,omitempty"`

	// Usage is what the tenant uses, as the operator last sampled it (usage.interval), for
	// billing: it is written only when a sample differs from it.
	// +optional
	Usage *TenantUsage `json:"usage,omitempty"`

	// LastHandledReconcileAt is the value of the ReconcileRequestAnnotation the last reconcile
	// handled, so a client that set the annotation can wait for its request to be served.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// Class is the TenantClass the tenant converges to, and the class's revision: its current
	// one, or while a change of the class has not reached the tenant (its updates strategy), the
	// one before.
	// +optional
	Class *TenantClassRef `json:"class,omitempty"`

	// Shard is the operator shard that reconciles the tenant, empty for the default shard. It
	// changes only once the shard that takes the tenant over has written every object of the
	// tenant with its own shard label.
	// +optional
	Shard string `json:"shard,omitempty"`

	// HandoverTo is set by the shard that gives the tenant up (its shard label now names
	// another): the shard it names ("" for the default shard) may take the tenant over, the
	// shard giving it up writes nothing of the tenant again.
	// +optional
	HandoverTo *string `json:"handoverTo,omitempty"`

	// Purge records what Landlord dropped of a Purged tenant's backups, where and when, and
	// what it keeps until when (backups.keepAfterPurge). It is written once the tenant is
	// Purged, and only where a backup store is configured.
	// +optional
	Purge *PurgeRecord `json:"purge,omitempty"`

	// Conditions: Ready (always), Reconciling and Stalled (only while true), Suspended (only
	// while spec.suspend is true), and one condition per concern: NamespaceReady and
	// DatabasesReady always; DomainsReady, WorkloadsReady, SecretsReady, EgressReady and
	// ComponentsReady while Active or Frozen.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TenantClassRef is a revision of a TenantClass.
type TenantClassRef struct {
	Name     string `json:"name"`
	Revision string `json:"revision,omitempty"`
}

// PurgeRecord is the deletion record of a Purged tenant's backups: what was dropped, where, when,
// and when any copy kept after the purge goes.
type PurgeRecord struct {
	// Started is when Landlord began purging the tenant's backups.
	Started metav1.Time `json:"started"`
	// Store is the backup store the backups were kept in, and KeyStore where the tenant's data
	// key was (the URLs without their query).
	Store    string `json:"store"`
	KeyStore string `json:"keyStore"`
	// KeepUntil is when the backups kept after the purge are deleted and the data key
	// destroyed (backups.keepAfterPurge after Started); absent when nothing was kept.
	// +optional
	KeepUntil *metav1.Time `json:"keepUntil,omitempty"`
	// Backups are the tenant's backups Landlord knew of at its purge (at most 100, the newest;
	// BackupCount counts them all), each with when it was deleted from the store.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Backups []PurgedBackup `json:"backups,omitempty"`
	// BackupCount is how many backups of the tenant there were at its purge.
	BackupCount int32 `json:"backupCount"`
	// Export is the tenant's final export, written before any of its backups was deleted
	// (backups.exportAtPurge); absent when none was configured at the purge.
	// +optional
	Export *PurgeExport `json:"export,omitempty"`
	// KeyDestroyed is when the tenant's data key was destroyed: from then on no copy of any of
	// its backups, wherever it is kept, can be read.
	// +optional
	KeyDestroyed *metav1.Time `json:"keyDestroyed,omitempty"`
	// Completed is when nothing of the tenant's backups was left: every backup deleted and the
	// key destroyed.
	// +optional
	Completed *metav1.Time `json:"completed,omitempty"`
}

// PurgeExport is a Purged tenant's final export: its newest backup that succeeded, written as
// the engines' own dumps, decrypted, with the manifest, where the platform hands it over.
type PurgeExport struct {
	// Location is the bucket the export is in, as backups.exportAtPurge names it, without its
	// query but for its prefix.
	Location string `json:"location"`
	// Folder is the export's folder in it: <tenant>-<tenant UID>/.
	Folder string `json:"folder"`
	// Backup is the TenantBackup exported; empty when the tenant had none that succeeded, and
	// nothing was exported.
	// +optional
	Backup string `json:"backup,omitempty"`
	// BackupCompleted is when that backup succeeded: the export holds the data as it was then.
	// +optional
	BackupCompleted *metav1.Time `json:"backupCompleted,omitempty"`
	// Databases is how many databases the export holds.
	// +optional
	Databases int32 `json:"databases,omitempty"`
	// Completed is when the export was written whole, its manifest last; absent while it is
	// written, and no backup is deleted before.
	// +optional
	Completed *metav1.Time `json:"completed,omitempty"`
}

// PurgedBackup is one of a Purged tenant's backups.
type PurgedBackup struct {
	// Name is the TenantBackup's name.
	Name string `json:"name"`
	// Location is its folder in the store.
	// +optional
	Location string `json:"location,omitempty"`
	// Created is when the TenantBackup was made.
	Created metav1.Time `json:"created"`
	// Deleted is when its objects were deleted from the store; absent while it is kept.
	// +optional
	Deleted *metav1.Time `json:"deleted,omitempty"`
}

// TenantUsage is one sample of what a tenant uses.
type TenantUsage struct {
	// SampledAt is when the sample that last changed these figures was taken: the usage of a
	// tenant whose figures hold still keeps an older time (the metric
	// landlord_usage_last_sample_timestamp_seconds says when the operator last sampled).
	SampledAt metav1.Time `json:"sampledAt"`

	// Resources are what the tenant namespace's ResourceQuota counts as used: CPU and memory
	// requested (requests.cpu, requests.memory) and limited (limits.cpu, limits.memory), storage
	// requested by volume claims (requests.storage), and object counts (pods, services, secrets,
	// configmaps, persistentvolumeclaims), each as far as the quota tracks it. Empty while the
	// tenant has no namespace (Archived, Purged).
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`

	// Used is what the tenant's pods use now (cpu to the millicore, memory as working set to the
	// mebibyte), summed, from the cluster's metrics API (metrics.k8s.io) at the sample: a gauge,
	// not a metered total. Absent without the API; zero with no pod; last figures kept while
	// the API does not answer or has not reported the quota's pods; moves beyond 5% (at least
	// 10m, 16Mi) are written.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// Databases are the bytes each of the tenant's databases holds, as its server reports them.
	// A database its server could not be asked about, or did not report, keeps its last figure.
	// Empty once the tenant is Purged.
	// +listType=map
	// +listMapKey=engine
	// +listMapKey=name
	// +optional
	Databases []DatabaseUsage `json:"databases,omitempty"`
}

// DatabaseUsage is the size of one of a tenant's databases.
type DatabaseUsage struct {
	// Engine is the database's engine.
	Engine DatabaseEngine `json:"engine"`
	// Name is the database's name in the tenant's spec.
	Name string `json:"name"`
	// Bytes is the database's size on its server.
	Bytes int64 `json:"bytes"`
}

// Tenant is one customer's isolated instance of the application.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tnt,categories=landlord
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.state`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.namespace`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 50",message="metadata.name must be a DNS label of at most 50 characters (lowercase letters, digits and '-') so the tenant's namespace name fits"
// +kubebuilder:validation:XValidation:rule="self.spec.state != 'Purged' || (has(self.spec.purgeConfirmation) && self.spec.purgeConfirmation == self.metadata.name)",message="spec.purgeConfirmation must equal the tenant's name to purge it",fieldPath=".spec.purgeConfirmation"
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TenantSpec `json:"spec"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status TenantStatus `json:"status,omitempty"`
}

// TenantList is a list of tenants.
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Tenant{}, &TenantList{})
}

// OrganizationName is the customer's name: spec.organization, or for a spare handed out by a
// pool, the claim's (kept in an annotation, because Landlord never writes a tenant's spec).
func (t *Tenant) OrganizationName() string {
	if t.Spec.Organization != "" {
		return t.Spec.Organization
	}
	return t.Annotations[OrganizationAnnotation]
}

// ContactEmail is the customer's contact address, from the spec or the claim.
func (t *Tenant) ContactEmail() string {
	if t.Spec.Email != "" {
		return t.Spec.Email
	}
	return t.Annotations[EmailAnnotation]
}
