package tenantbackup

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/controller/jobslots"
)

// Each reconciler of this package computes its kind's status in a pure function of the object
// and what one reconcile observed and did, following kstatus: Ready always, Reconciling and
// Stalled only while true. observedGeneration is always the current generation: every
// reconcile reaches a verdict on the spec it read.

// backupObservation is what one reconcile of a backup learned and did.
type backupObservation struct {
	// recorded is where the backup's Job writes and whose data it is, recorded before there is
	// a Job; nil when the reconcile did not get that far, or it was recorded before.
	recorded *backupPlace
	// started is the Job the reconcile made; nil when it made none.
	started *backupJob
	// ended is how the backup's Job ended; nil while it runs, or before it starts.
	ended *backupEnd
	// err stopped the reconcile: a refusal, which takes a person, or an error tried again.
	err error
	// now is when the reconcile looked.
	now metav1.Time
}

// backupPlace is where a backup's Job writes and whose data it is.
type backupPlace struct {
	tenantUID, location string
}

// backupJob is a backup's Job, started: its namespace and name, and what it dumps.
type backupJob struct {
	namespace, name string
	tenant          string
	databases       int
	backupPlace
}

// backupEnd is how a backup's Job ended: failed with a message, or succeeded with its
// manifest, which holds what was asked for.
type backupEnd struct {
	failed   bool
	message  string
	manifest *backup.Manifest
}

// computeBackupStatus is the backup's status after a reconcile: Reconciling while its Job runs
// (or the store does not answer), Ready once it succeeded, Stalled when its Job failed or the
// backup is refused (no store, no tenant, a tenant purged or made again).
func computeBackupStatus(b *tenancyv1alpha1.TenantBackup, o backupObservation) tenancyv1alpha1.TenantBackupStatus {
	s := *b.Status.DeepCopy()
	s.ObservedGeneration = b.Generation
	conds := conditions.For(&s.Conditions, b.Generation)
	if p := o.recorded; p != nil {
		s.TenantUID, s.Location = p.tenantUID, p.location
	}
	if j := o.started; j != nil {
		s.Phase = tenancyv1alpha1.BackupRunning
		s.TenantUID, s.Location = j.tenantUID, j.location
		s.Job = j.name
		s.StartTime = &o.now
		s.Format = backup.ManifestFormat
		conds.Reconciling(tenancyv1alpha1.ReasonJobRunning, fmt.Sprintf("Job %s/%s dumps %d database(s) of tenant %s", j.namespace, j.name, j.databases, j.tenant))
	}
	if e := o.ended; e != nil {
		s.CompletionTime = &o.now
		if e.failed {
			s.Phase = tenancyv1alpha1.BackupFailed
			conds.Stalled(tenancyv1alpha1.ReasonJobFailed, e.message)
		} else {
			s.Phase = tenancyv1alpha1.BackupSucceeded
			var message string
			s.Databases, s.Size, message = manifestSummary(e.manifest)
			conds.Ready(tenancyv1alpha1.ReasonSucceeded, message)
		}
	}
	var ref *refusal
	var full *jobslots.Full
	switch {
	case errors.As(o.err, &ref):
		s.Phase = tenancyv1alpha1.BackupPending
		conds.Stalled(ref.reason, ref.message)
	case errors.As(o.err, &full):
		s.Phase = tenancyv1alpha1.BackupPending
		conds.Reconciling(tenancyv1alpha1.ReasonWaitingForServer, fmt.Sprintf("waits its turn: %v", full))
	case o.err != nil:
		conds.Reconciling(tenancyv1alpha1.ReasonStoreUnavailable, o.err.Error())
	}
	return s
}

// manifestSummary is what a succeeded backup's status says of its manifest: its databases,
// their size, and a message saying both.
func manifestSummary(m *backup.Manifest) (dbs []tenancyv1alpha1.BackupDatabaseStatus, size int64, message string) {
	for _, d := range m.Databases {
		dbs = append(dbs, tenancyv1alpha1.BackupDatabaseStatus{
			Name: d.Name, Engine: tenancyv1alpha1.DatabaseEngine(d.Engine), ServerVersion: d.ServerVersion, Size: d.Size, SHA256: d.SHA256,
		})
		size += d.Size
	}
	return dbs, size, fmt.Sprintf("%d database(s), %d bytes", len(m.Databases), size)
}

// restoreObservation is what one reconcile of a restore learned and did.
type restoreObservation struct {
	// tenant is the tenant written into, once checked; nil before.
	tenant *restoreTenant
	// safetyBackup is the TenantBackup taken of the data about to be replaced, once named.
	safetyBackup string
	// started is the Job the reconcile made; nil when it made none.
	started *restoreJob
	// ended is how the restore's Job ended; nil while it runs, or before it starts.
	ended *restoreEnd
	// err stopped the reconcile: a refusal, some of which are waits, or an error tried again.
	err error
	// now is when the reconcile looked.
	now metav1.Time
}

// restoreTenant is the tenant a restore writes into.
type restoreTenant struct {
	name, uid string
}

// restoreJob is a restore's Job, started: its namespace and name, and what it writes where.
type restoreJob struct {
	namespace, name string
	tenant          string
	// copyOf is the tenant backed up when it is another than the one written into.
	copyOf    string
	databases []string
}

// restoreEnd is how a restore's Job ended: failed or not, and what the reconcile has to say of
// it (the Job's error, the logins not set back).
type restoreEnd struct {
	failed  bool
	message string
}

// computeRestoreStatus is the restore's status after a reconcile: Reconciling while it waits
// for its backup, its safety backup or another restore of the tenant, while its Job runs, or
// while the store does not answer; Ready once it succeeded; Stalled when its Job or its safety
// backup failed, or the restore is refused.
func computeRestoreStatus(rs *tenancyv1alpha1.TenantRestore, o restoreObservation) tenancyv1alpha1.TenantRestoreStatus {
	s := *rs.Status.DeepCopy()
	s.ObservedGeneration = rs.Generation
	conds := conditions.For(&s.Conditions, rs.Generation)
	if t := o.tenant; t != nil {
		s.Tenant, s.TenantUID = t.name, t.uid
	}
	if o.safetyBackup != "" {
		s.SafetyBackup = o.safetyBackup
	}
	if j := o.started; j != nil {
		s.Phase = tenancyv1alpha1.BackupRunning
		s.Job = j.name
		s.StartTime = &o.now
		what := "replaces the data of"
		if j.copyOf != "" {
			what = "copies the backup of tenant " + j.copyOf + " into"
		}
		conds.Reconciling(tenancyv1alpha1.ReasonJobRunning,
			fmt.Sprintf("Job %s/%s %s tenant %s (%s)", j.namespace, j.name, what, j.tenant, strings.Join(j.databases, ", ")))
	}
	if e := o.ended; e != nil {
		s.CompletionTime = &o.now
		if e.failed {
			s.Phase = tenancyv1alpha1.BackupFailed
			conds.Stalled(tenancyv1alpha1.ReasonJobFailed, e.message)
		} else {
			s.Phase = tenancyv1alpha1.BackupSucceeded
			conds.Ready(tenancyv1alpha1.ReasonSucceeded, restoredMessage(rs, e.message))
		}
	}
	var ref *refusal
	switch {
	case errors.As(o.err, &ref):
		if s.Phase == "" {
			s.Phase = tenancyv1alpha1.BackupPending
		}
		switch ref.reason {
		case tenancyv1alpha1.ReasonBackupNotReady, tenancyv1alpha1.ReasonRestoreWaiting:
			conds.Reconciling(ref.reason, ref.message)
		default:
			conds.Stalled(ref.reason, ref.message)
		}
	case o.err != nil:
		conds.Reconciling(tenancyv1alpha1.ReasonStoreUnavailable, o.err.Error())
	}
	return s
}

// restoredMessage says that the restore succeeded, and what else there is to say of it.
func restoredMessage(rs *tenancyv1alpha1.TenantRestore, message string) string {
	done := fmt.Sprintf("restored TenantBackup %s into tenant %s", rs.Spec.Backup, rs.Status.Tenant)
	if message != "" {
		done += "; " + message
	}
	return done
}

// scheduleObservation is what one reconcile of a schedule learned and did.
type scheduleObservation struct {
	// invalid is why spec.schedule does not parse; nil when it does.
	invalid error
	// ran is the scheduled time of a run that came due in this reconcile; nil when none did.
	ran *time.Time
	// progress is how the latest run goes; nil before the first.
	progress *runProgress
	// upcoming is the schedule's next time.
	upcoming time.Time
}

// computeScheduleStatus is the schedule's status after a reconcile: Ready while it runs as
// asked, suspended included; Stalled while spec.schedule does not parse.
func computeScheduleStatus(sch *tenancyv1alpha1.TenantBackupSchedule, o scheduleObservation) tenancyv1alpha1.TenantBackupScheduleStatus {
	s := *sch.Status.DeepCopy()
	s.ObservedGeneration = sch.Generation
	conds := conditions.For(&s.Conditions, sch.Generation)
	switch {
	case o.invalid != nil:
		conds.Stalled(tenancyv1alpha1.ReasonInvalidSchedule, fmt.Sprintf("spec.schedule %q: %v", sch.Spec.Schedule, o.invalid))
		return s
	case sch.Spec.Suspend:
		s.NextScheduleTime = nil
		conds.Ready(tenancyv1alpha1.ReasonSuspended, "suspended: no backup is made and none deleted")
		return s
	}
	if o.ran != nil {
		s.LastScheduleTime = &metav1.Time{Time: *o.ran}
	}
	if p := o.progress; p != nil {
		s.Tenants = int32(p.made)
		run := p.BackupRunStatus
		s.LastRun = &run
	}
	s.NextScheduleTime = &metav1.Time{Time: o.upcoming}
	msg := "next run at " + o.upcoming.UTC().Format(time.RFC3339)
	if r := s.LastRun; r != nil {
		msg = fmt.Sprintf("last run at %s: %d tenant(s), %d succeeded, %d failed, %d running, %d waiting, %d not yet due; %s",
			r.ScheduleTime.UTC().Format(time.RFC3339), r.Selected, r.Succeeded, r.Failed, r.Running, r.Waiting, r.NotYetDue, msg)
		if r.MissedWindow {
			msg = fmt.Sprintf("last run at %s missed its window: %d backup(s) had not started by %s; %s",
				r.ScheduleTime.UTC().Format(time.RFC3339), r.Late, r.WindowEnd.UTC().Format(time.RFC3339), msg)
		}
	}
	conds.Ready(tenancyv1alpha1.ReasonScheduled, msg)
	return s
}
