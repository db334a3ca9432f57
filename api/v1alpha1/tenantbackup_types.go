package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupPhase is where a backup or a restore is.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type BackupPhase string

const (
	// BackupPending: not started; the Ready condition says what it waits for.
	BackupPending BackupPhase = "Pending"
	// BackupRunning: its Job runs.
	BackupRunning BackupPhase = "Running"
	// BackupSucceeded: done; a backup's manifest is in the store.
	BackupSucceeded BackupPhase = "Succeeded"
	// BackupFailed: its Job failed; nothing it wrote counts. Create another to try again.
	BackupFailed BackupPhase = "Failed"
)

// AcceptCopyFromAnnotation on a Tenant names the UID of another tenant whose backups may be
// restored into it (a TenantRestore naming it in spec.tenant). A copy runs the other tenant's
// code (its functions, checks, views, triggers) as this tenant's logins: it is accepted only from
// a tenant of the same customer, and only by someone who may edit Tenants.
const AcceptCopyFromAnnotation = "tenancy.landlord.dev/accept-copy-from"

// Backup and restore reasons.
const (
	// ReasonBackupsNotConfigured: the operator has no backup store (backups.objects).
	ReasonBackupsNotConfigured = "BackupsNotConfigured"
	// ReasonTenantNotFound: the tenant named does not exist.
	ReasonTenantNotFound = "TenantNotFound"
	// ReasonBackupRefused: the tenant's data cannot be backed up or written now: it is Purged,
	// being deleted, moving to another cluster (or adopting a moved tenant's data), or does not
	// have the databases named. The message says which.
	ReasonBackupRefused = "BackupRefused"
	// ReasonJobRunning: the backup or restore Job runs.
	ReasonJobRunning = "JobRunning"
	// ReasonWaitingForServer: a backup waits for a place on a database server, which runs as
	// many Jobs (migrations, backups, restores) as its spec.maxConcurrentJobs allows; it starts
	// when one ends.
	ReasonWaitingForServer = "WaitingForServer"
	// ReasonJobFailed: the Job failed, was killed, or ended without the manifest that makes a
	// backup whole.
	ReasonJobFailed = "JobFailed"
	// ReasonBackupNotReady: a restore waits for its backup (or its safety backup) to succeed.
	ReasonBackupNotReady = "BackupNotReady"
	// ReasonBackupMismatch: the backup cannot be restored into the tenant: another engine, another
	// major server version, or a database the backup does not hold.
	ReasonBackupMismatch = "BackupMismatch"
	// ReasonRestoreWaiting: another restore into the same tenant runs; this one starts after it.
	ReasonRestoreWaiting = "RestoreWaiting"
)

// TenantBackupSpec names the tenant whose databases are backed up.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a backup is taken once; create another"
type TenantBackupSpec struct {
	// Tenant is the Tenant whose databases are dumped.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a tenant's name (a DNS label)"
	Tenant string `json:"tenant"`

	// Databases are the names (as in the tenant's spec) of the databases to back up; all of the
	// tenant's when empty.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Databases []string `json:"databases,omitempty"`
}

// BackupDatabaseStatus is one database in a backup, as its manifest records it.
type BackupDatabaseStatus struct {
	// Name is the database's name in the tenant's spec.
	Name string `json:"name"`
	// Engine of the database.
	Engine DatabaseEngine `json:"engine"`
	// ServerVersion is the version of the server it was dumped from; a restore needs the same
	// engine and major version.
	ServerVersion string `json:"serverVersion"`
	// Size is the dump's size in bytes, before encryption.
	Size int64 `json:"size"`
	// SHA256 is the dump's checksum, before encryption; a restore checks it.
	SHA256 string `json:"sha256"`
}

// TenantBackupStatus is the outcome of a backup.
type TenantBackupStatus struct {
	// ObservedGeneration is the generation the status reports on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// Phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// TenantUID is the UID of the tenant backed up: a tenant deleted and created again under
	// the same name is another customer.
	// +optional
	TenantUID string `json:"tenantUID,omitempty"`
	// Location is the backup's folder in the store, <tenant UID>/<backup UID>/.
	// +optional
	Location string `json:"location,omitempty"`
	// Job is the Job, in the operator's namespace, that makes the backup.
	// +optional
	Job string `json:"job,omitempty"`
	// StartTime is when the Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the backup succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Format is 2 for a backup whose Job was handed its tenant's data key, which seals it;
	// absent for one taken before tenants had keys of their own, sealed under the store's key.
	// The operator sets it when it makes the Job, and a restore goes by it, never by what the
	// store's manifest says.
	// +optional
	Format int32 `json:"format,omitempty"`
	// Databases are what the backup holds, once it succeeded.
	// +listType=map
	// +listMapKey=name
	// +optional
	Databases []BackupDatabaseStatus `json:"databases,omitempty"`
	// Size is the sum of the dumps' sizes, in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// Conditions: Ready (True once it succeeded), Reconciling while it runs or waits, Stalled
	// when it failed or is refused.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TenantBackup is one backup of one tenant's databases: a logical dump of each, made with the
// engine's own tool by a Job, encrypted and kept in the operator's backup store. Deleting it
// deletes the backup from the store.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tbk,categories=landlord
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.spec.tenant`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters, so its Job's name fits"
type TenantBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TenantBackupSpec `json:"spec"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status TenantBackupStatus `json:"status,omitempty"`
}

// TenantBackupList is a list of backups.
// +kubebuilder:object:root=true
type TenantBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantBackup `json:"items"`
}

// TenantRestoreSpec names a backup and the tenant it is written into.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a restore is made once; create another"
type TenantRestoreSpec struct {
	// Backup is the TenantBackup to restore; it must have succeeded.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be a TenantBackup's name"
	Backup string `json:"backup"`

	// Tenant is the Tenant written into: the backup's own when empty, whose databases are
	// replaced by the backup's after a safety backup of them; or another, a copy of the
	// customer (staging), whose own databases and logins receive the data, with nothing of the
	// source's logins carried over. The tenant must have databases of the names restored.
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a tenant's name (a DNS label)"
	// +optional
	Tenant string `json:"tenant,omitempty"`

	// Databases are the names of the backup's databases to restore; all it holds when empty.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Databases []string `json:"databases,omitempty"`
}

// TenantRestoreStatus is the outcome of a restore.
type TenantRestoreStatus struct {
	// ObservedGeneration is the generation the status reports on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// Phase is Pending (waiting for the backup, or for the safety backup), Running, Succeeded
	// or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Tenant is the tenant written into.
	// +optional
	Tenant string `json:"tenant,omitempty"`
	// TenantUID is its UID, fixed when the restore starts.
	// +optional
	TenantUID string `json:"tenantUID,omitempty"`
	// SafetyBackup is the TenantBackup of the tenant's databases taken before they are
	// replaced (a restore into the backup's own tenant).
	// +optional
	SafetyBackup string `json:"safetyBackup,omitempty"`
	// Job is the Job, in the operator's namespace, that writes the data.
	// +optional
	Job string `json:"job,omitempty"`
	// StartTime is when the Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the restore succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Conditions: Ready (True once it succeeded), Reconciling while it runs or waits, Stalled
	// when it failed or is refused.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TenantRestore writes a TenantBackup into a tenant's databases: its own (replacing their data,
// after a safety backup) or another tenant's (a clone).
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=trs,categories=landlord
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backup`
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.status.tenant`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 56",message="metadata.name must be at most 56 characters, so its safety backup's name fits"
type TenantRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TenantRestoreSpec `json:"spec"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status TenantRestoreStatus `json:"status,omitempty"`
}

// TenantRestoreList is a list of restores.
// +kubebuilder:object:root=true
type TenantRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantRestore `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TenantBackup{}, &TenantBackupList{}, &TenantRestore{}, &TenantRestoreList{})
}
