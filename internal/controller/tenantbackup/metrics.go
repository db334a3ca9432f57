package tenantbackup

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// No counter carries a tenant: a fleet's worth of series would cost the monitoring more than the
// backups; the TenantBackups' statuses say which tenant's failed. The one series per tenant is
// the time of its last good backup (backupAges), which an alert on a tenant left
// without one needs.
var (
	backupsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "landlord_backups_total",
		Help: "Tenant backups ended, by result (succeeded, failed).",
	}, []string{"result"})
	restoresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "landlord_restores_total",
		Help: "Tenant restores ended, by result (succeeded, failed).",
	}, []string{"result"})
	backupBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "landlord_backup_bytes_total",
		Help: "Bytes of database dumps, before encryption, in tenant backups that succeeded.",
	})
	backupSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "landlord_backup_duration_seconds",
		Help:    "Time from a tenant backup's Job being created to the backup succeeding.",
		Buckets: prometheus.ExponentialBuckets(5, 2, 12),
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(backupsTotal, restoresTotal, backupBytes, backupSeconds)
}

// A schedule's series carry its name: a cluster has few schedules.
var (
	scheduleBackups = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "landlord_backup_schedule_backups",
		Help: "Backups of a schedule's latest run, by state (not_yet_due, waiting, running, succeeded, failed).",
	}, []string{"schedule", "state"})
	scheduleMissedWindow = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "landlord_backup_schedule_missed_window",
		Help: "1 when a schedule's latest run ended its window with backups not started, else 0.",
	}, []string{"schedule"})
	backupFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "landlord_backup_failures_total",
		Help: "Tenant backups failed, by reason (job_failed: the Job failed or went; no_manifest: it wrote no manifest; wrong_manifest: not the one asked for).",
	}, []string{"reason"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(scheduleBackups, scheduleMissedWindow, backupFailures)
	for _, reason := range []string{failedJob, failedNoManifest, failedWrongManifest} {
		backupFailures.WithLabelValues(reason)
	}
}

// The reasons a backup fails, as landlord_backup_failures_total counts them.
const (
	failedJob           = "job_failed"
	failedNoManifest    = "no_manifest"
	failedWrongManifest = "wrong_manifest"
)

// observeSchedule sets a schedule's series from its latest run.
func observeSchedule(name string, run *tenancyv1alpha1.BackupRunStatus) {
	if run == nil {
		return
	}
	for state, n := range map[string]int32{
		"not_yet_due": run.NotYetDue, "waiting": run.Waiting, "running": run.Running,
		"succeeded": run.Succeeded, "failed": run.Failed,
	} {
		scheduleBackups.WithLabelValues(name, state).Set(float64(n))
	}
	missed := 0.0
	if run.MissedWindow {
		missed = 1
	}
	scheduleMissedWindow.WithLabelValues(name).Set(missed)
}

// forgetSchedule drops the series of a schedule that is gone.
func forgetSchedule(name string) {
	scheduleBackups.DeletePartialMatch(prometheus.Labels{"schedule": name})
	scheduleMissedWindow.DeletePartialMatch(prometheus.Labels{"schedule": name})
}
