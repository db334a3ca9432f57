package tenantbackup

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// No metric carries a tenant: a fleet's worth of series would cost the monitoring more than the
// backups; the TenantBackups' statuses say which tenant's failed.
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
