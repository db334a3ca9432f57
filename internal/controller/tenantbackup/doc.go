// Package tenantbackup runs TenantBackups and TenantRestores: each is a Job in the operator's
// namespace, given a plan in a Secret of its own, whose outcome the controllers read from the
// Job and from the store's manifest. The controllers never read a dump. It also runs
// TenantBackupSchedules, which make backups at the times of a cron schedule and delete what
// their retention no longer keeps, and purges a Purged tenant's backups and data key.
//
// The shape every reconciler has:
//   - wiring: each reconciler's SetupWithManager (backup_controller.go, restore_controller.go,
//     schedule_controller.go, purge_controller.go) and the handlers that map a Job's, a tenant's
//     or a backup's event to the objects waiting on it;
//   - Reconcile, a short list of named steps: get the object, let a deleted one go (forget,
//     purge), then start or watch the Job (start, watch), or run the schedule and its retention
//     (run, retain), each recording what it found and made in an observation, then write the
//     status;
//   - computeBackupStatus, computeRestoreStatus and computeScheduleStatus (status.go), pure
//     functions of the object and its observation, the clock included. The purge reconciler
//     writes no status of its own.
package tenantbackup
