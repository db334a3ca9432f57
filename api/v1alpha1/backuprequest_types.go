package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations on what a tenant's own requests make.
const (
	// BackupRequestLabel on a TenantBackup or TenantRestore made for a tenant's own request
	// (BackupRequest, RestoreRequest) carries the tenant's UID: the platform's limits on
	// requests count them, and retention deletes only these of the tenant's backups.
	BackupRequestLabel = "tenancy.landlord.dev/requested-by"
	// RequestAnnotation on them names the request, "namespace/name", and RequestUIDAnnotation
	// its UID, so a request finds what it made, and nothing another made.
	RequestAnnotation    = "tenancy.landlord.dev/request"
	RequestUIDAnnotation = "tenancy.landlord.dev/request-uid"
)

// Request reasons.
const (
	// ReasonSelfServiceOff: the platform lets no tenant ask for its own backups or restores
	// (backups.selfService.enabled is false, or no backup store is configured).
	ReasonSelfServiceOff = "SelfServiceOff"
	// ReasonRequestLimited: the tenant asked for more backups or restores than the platform
	// allows in a day; the message says when the next may be asked for.
	ReasonRequestLimited = "RequestLimited"
	// ReasonBackupNotFound: a RestoreRequest names a backup that does not exist, or is not its
	// tenant's (the two are told apart to no one).
	ReasonBackupNotFound = "BackupNotFound"
	// ReasonBackupDeleted: the backup a request made is deleted (the platform keeps a tenant's
	// newest requested backups only, or an administrator deleted it).
	ReasonBackupDeleted = "BackupDeleted"
)

// BackupRequestSpec is a tenant's request for a backup of its own databases.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a request is made once; create another"
type BackupRequestSpec struct {
	// Databases are the names (as in the tenant's spec) of the databases to back up; all of the
	// tenant's when empty.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Databases []string `json:"databases,omitempty"`
}

// BackupRequestStatus is how a tenant's backup request went.
type BackupRequestStatus struct {
	// ObservedGeneration is the generation the status reports on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// Phase is the backup's: Pending, Running, Succeeded or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Backup is the TenantBackup made for the request: name it in a RestoreRequest to restore it.
	// +optional
	Backup string `json:"backup,omitempty"`
	// CompletionTime is when the backup succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Size is the sum of the dumps' sizes, in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// Conditions: Ready (True once the backup succeeded), Reconciling while it runs or waits,
	// Stalled when it failed or the request is refused.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BackupRequest is a tenant's own request, made in its namespace, for a backup of its
// databases. Landlord makes a TenantBackup of the namespace's tenant for it, within the limits
// the platform sets (backups.selfService), and keeps the tenant's newest requested backups.
// Deleting the request keeps the backup.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=bkr,categories=landlord
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.status.backup`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type BackupRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec BackupRequestSpec `json:"spec,omitempty"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status BackupRequestStatus `json:"status,omitempty"`
}

// BackupRequestList is a list of backup requests.
// +kubebuilder:object:root=true
type BackupRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupRequest `json:"items"`
}

// RestoreRequestSpec is a tenant's request to restore one of its own backups into itself.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a request is made once; create another"
type RestoreRequestSpec struct {
	// Backup is the TenantBackup to restore: one of this tenant's own (a BackupRequest's
	// status.backup, or a scheduled backup the platform names). Any other is not found.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be a TenantBackup's name"
	Backup string `json:"backup"`

	// Databases are the names of the backup's databases to restore; all it holds when empty.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Databases []string `json:"databases,omitempty"`
}

// RestoreRequestStatus is how a tenant's restore request went.
type RestoreRequestStatus struct {
	// ObservedGeneration is the generation the status reports on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// Phase is the restore's: Pending (waiting for the backup, or the safety backup), Running,
	// Succeeded or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Restore is the TenantRestore made for the request.
	// +optional
	Restore string `json:"restore,omitempty"`
	// SafetyBackup is the TenantBackup of the databases taken before the restore replaced them:
	// name it in another RestoreRequest to undo this one.
	// +optional
	SafetyBackup string `json:"safetyBackup,omitempty"`
	// CompletionTime is when the restore succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Conditions: Ready (True once the restore succeeded), Reconciling while it runs or waits,
	// Stalled when it failed or the request is refused.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RestoreRequest is a tenant's own request, made in its namespace, to restore one of its
// backups into its own databases, replacing their data after a safety backup of them. Landlord
// makes a TenantRestore for it within the limits the platform sets (backups.selfService). It
// never restores another tenant's backup, nor into another tenant.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=rsr,categories=landlord
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backup`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Safety Backup",type=string,JSONPath=`.status.safetyBackup`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type RestoreRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RestoreRequestSpec `json:"spec"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status RestoreRequestStatus `json:"status,omitempty"`
}

// RestoreRequestList is a list of restore requests.
// +kubebuilder:object:root=true
type RestoreRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RestoreRequest `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BackupRequest{}, &BackupRequestList{}, &RestoreRequest{}, &RestoreRequestList{})
}
