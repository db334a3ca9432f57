package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels on the TenantBackups a schedule makes.
const (
	// BackupScheduleLabel names the TenantBackupSchedule that made a TenantBackup; its retention
	// counts and deletes only backups with its name.
	BackupScheduleLabel = "tenancy.landlord.dev/backup-schedule"
	// BackupTenantLabel names the tenant a scheduled TenantBackup is of.
	BackupTenantLabel = "tenancy.landlord.dev/backup-tenant"
)

// ReasonInvalidSchedule: a TenantBackupSchedule's spec.schedule is not a cron schedule Landlord
// reads; the message quotes the parser.
const ReasonInvalidSchedule = "InvalidSchedule"

// ReasonScheduled: a TenantBackupSchedule is running; the message says when it last made
// backups and when it makes the next.
const ReasonScheduled = "Scheduled"

// TenantBackupScheduleSpec is when the selected tenants are backed up, and how many backups of
// each are kept.
type TenantBackupScheduleSpec struct {
	// Schedule is a cron schedule in UTC, as a CronJob's: five fields (minute, hour, day of
	// month, month, day of week) or a descriptor (@hourly, @daily, @weekly, @monthly).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[^\\\\s]+\\\\s+[^\\\\s]+\\\\s+[^\\\\s]+\\\\s+[^\\\\s]+\\\\s+[^\\\\s]+)$')",message="must be a cron schedule of five fields (minute hour day-of-month month day-of-week) or a descriptor such as @daily"
	Schedule string `json:"schedule"`

	// Tenants selects the tenants backed up, by label; {} selects every tenant. A tenant that
	// has no database in place, or whose data may not be read now (Purged, being deleted,
	// moved), is left out of that run.
	Tenants metav1.LabelSelector `json:"tenants"`

	// Databases are the names of the databases backed up; all of each tenant's when empty. A
	// tenant without one of them is left out.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Databases []string `json:"databases,omitempty"`

	// Keep is how many succeeded backups of each tenant the schedule keeps: once a newer one has
	// succeeded, the oldest beyond it are deleted, from the store too, and so are failed ones
	// older than the newest that succeeded. Backups the schedule did not make are never touched.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=7
	// +optional
	Keep int32 `json:"keep,omitempty"`

	// Suspend stops the schedule: it makes no backup and deletes none while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// TenantBackupScheduleStatus is when a schedule last ran.
type TenantBackupScheduleStatus struct {
	// ObservedGeneration is the generation the status reports on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// LastScheduleTime is the scheduled time of the last run.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is when the schedule runs next.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// Tenants is how many tenants the last run backed up.
	// +optional
	Tenants int32 `json:"tenants,omitempty"`
	// Conditions: Ready (True while the schedule runs as asked), Stalled when its schedule does
	// not parse.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TenantBackupSchedule backs up the tenants it selects at the times of its cron schedule, each
// as a TenantBackup named <tenant>-<YYYYMMDDhhmm>, and keeps the newest of each tenant's.
// Deleting it keeps the backups it made.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tbs,categories=landlord
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Keep",type=integer,JSONPath=`.spec.keep`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type TenantBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TenantBackupScheduleSpec `json:"spec"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status TenantBackupScheduleStatus `json:"status,omitempty"`
}

// TenantBackupScheduleList is a list of backup schedules.
// +kubebuilder:object:root=true
type TenantBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantBackupSchedule `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TenantBackupSchedule{}, &TenantBackupScheduleList{})
}
