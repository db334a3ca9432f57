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
// +kubebuilder:validation:XValidation:rule="!has(self.jitter) || (has(self.window) && duration(self.jitter) <= duration(self.window))",message="jitter must be no longer than window, and needs one"
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

	// Window spreads each run over this long from the schedule's time (at most 24h): each
	// tenant's backup is made at its own offset in the window, the same every run (a hash of the
	// schedule's and the tenant's names), so a fleet never starts at once and each tenant is
	// backed up at about the same time every run. Unset, every backup is made at the schedule's
	// time. Either way a backup then waits for a place on its database servers
	// (DatabaseServer spec.maxConcurrentJobs), and one not started a minute after the window's
	// end (an hour after the schedule's time when unset) missed it: status.lastRun says so. A window as long
	// as the time between two runs leaves the last tenants of a run to the next one.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('24h')",message="must be a duration between 1s and 24h, such as 4h"
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`

	// Jitter moves each tenant's time in the window by up to this much, differently each run,
	// so that tenants whose offsets are close do not start together every night. At most the
	// window.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="must be a duration between 0s and 24h, such as 10m"
	// +optional
	Jitter *metav1.Duration `json:"jitter,omitempty"`

	// Suspend stops the schedule: it makes no backup and deletes none while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// BackupRunStatus is how a schedule's run goes: its backups by phase, and whether each started
// within the run's window.
type BackupRunStatus struct {
	// ScheduleTime is the run's time, the start of its window.
	ScheduleTime metav1.Time `json:"scheduleTime"`
	// WindowEnd is when every backup of the run should have started.
	WindowEnd metav1.Time `json:"windowEnd"`
	// Selected is how many tenants the run backs up: those selected whose data may be read.
	Selected int32 `json:"selected"`
	// NotYetDue is how many of them have their time later in the window.
	NotYetDue int32 `json:"notYetDue"`
	// Waiting is how many backups were made and wait to start (for a place on their servers).
	Waiting int32 `json:"waiting"`
	// Running is how many backups' Jobs run.
	Running int32 `json:"running"`
	// Succeeded is how many backups succeeded.
	Succeeded int32 `json:"succeeded"`
	// Failed is how many backups failed.
	Failed int32 `json:"failed"`
	// Late is how many backups had not started a minute after the window ended.
	// +optional
	Late int32 `json:"late,omitempty"`
	// MissedWindow is true once the window ended with backups of the run not started a minute
	// later; it stays true for the run.
	// +optional
	MissedWindow bool `json:"missedWindow,omitempty"`
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
	// Tenants is how many backups the last run made so far.
	// +optional
	Tenants int32 `json:"tenants,omitempty"`
	// LastRun is how the last run goes, or went.
	// +optional
	LastRun *BackupRunStatus `json:"lastRun,omitempty"`
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
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.spec.window`
// +kubebuilder:printcolumn:name="Keep",type=integer,JSONPath=`.spec.keep`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Succeeded",type=integer,JSONPath=`.status.lastRun.succeeded`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.lastRun.failed`
// +kubebuilder:printcolumn:name="Missed",type=boolean,JSONPath=`.status.lastRun.missedWindow`,priority=1
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
