package main

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// backupTable is the backups as `get backups` shows them.
func backupTable(backups []tenancyv1alpha1.TenantBackup) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Tenant", Type: "string"},
		{Name: "Phase", Type: "string"},
		{Name: "Size", Type: "integer"},
		{Name: "Completed", Type: "string"},
		{Name: "Age", Type: "string"},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, backups, func(b *tenancyv1alpha1.TenantBackup) []any {
		_, _, message := readyOf(b.Status.Conditions)
		return []any{b.Name, b.Spec.Tenant, orNone(string(b.Status.Phase)), b.Status.Size, completed(b.Status.CompletionTime),
			age(b.CreationTimestamp), orNone(message)}
	})
}

// restoreTable is the restores as `get restores` shows them.
func restoreTable(restores []tenancyv1alpha1.TenantRestore) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Backup", Type: "string"},
		{Name: "Tenant", Type: "string"},
		{Name: "Phase", Type: "string"},
		{Name: "Completed", Type: "string"},
		{Name: "Age", Type: "string"},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, restores, func(r *tenancyv1alpha1.TenantRestore) []any {
		_, _, message := readyOf(r.Status.Conditions)
		return []any{r.Name, r.Spec.Backup, orNone(r.Status.Tenant), orNone(string(r.Status.Phase)), completed(r.Status.CompletionTime),
			age(r.CreationTimestamp), orNone(message)}
	})
}

// backupRequestTable is a tenant's backup requests as `get backuprequests` shows them.
func backupRequestTable(requests []tenancyv1alpha1.BackupRequest) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Phase", Type: "string"},
		{Name: "Backup", Type: "string"},
		{Name: "Size", Type: "integer"},
		{Name: "Completed", Type: "string"},
		{Name: "Age", Type: "string"},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, requests, func(r *tenancyv1alpha1.BackupRequest) []any {
		_, _, message := readyOf(r.Status.Conditions)
		return []any{r.Name, orNone(string(r.Status.Phase)), orNone(r.Status.Backup), r.Status.Size, completed(r.Status.CompletionTime),
			age(r.CreationTimestamp), orNone(message)}
	})
}

// restoreRequestTable is a tenant's restore requests as `get restorerequests` shows them.
func restoreRequestTable(requests []tenancyv1alpha1.RestoreRequest) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Backup", Type: "string"},
		{Name: "Phase", Type: "string"},
		{Name: "Safety Backup", Type: "string"},
		{Name: "Completed", Type: "string"},
		{Name: "Age", Type: "string"},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, requests, func(r *tenancyv1alpha1.RestoreRequest) []any {
		_, _, message := readyOf(r.Status.Conditions)
		return []any{r.Name, r.Spec.Backup, orNone(string(r.Status.Phase)), orNone(r.Status.SafetyBackup), completed(r.Status.CompletionTime),
			age(r.CreationTimestamp), orNone(message)}
	})
}

// describeBackupRequest writes a tenant's backup request: what it asked for and the backup made.
func describeBackupRequest(d *describer, r *tenancyv1alpha1.BackupRequest) {
	d.objectMeta(r, true)
	d.values("Databases asked", r.Spec.Databases)
	d.field("Phase", string(r.Status.Phase))
	d.verdict(r, "BackupRequest")
	d.field("Backup", r.Status.Backup)
	d.field("Completed", timeOf(r.Status.CompletionTime))
	d.conditions(r.Status.Conditions)
	d.eventsSection()
}

// describeRestoreRequest writes a tenant's restore request: the backup, the restore made and its
// safety backup.
func describeRestoreRequest(d *describer, r *tenancyv1alpha1.RestoreRequest) {
	d.objectMeta(r, true)
	d.field("Backup", r.Spec.Backup)
	d.values("Databases asked", r.Spec.Databases)
	d.field("Phase", string(r.Status.Phase))
	d.verdict(r, "RestoreRequest")
	d.field("Restore", r.Status.Restore)
	d.field("Safety backup", r.Status.SafetyBackup)
	d.field("Completed", timeOf(r.Status.CompletionTime))
	d.conditions(r.Status.Conditions)
	d.eventsSection()
}

// completed is how long ago something ended, as kubectl writes a date column.
func completed(t *metav1.Time) string {
	if t == nil {
		return "<none>"
	}
	return age(*t)
}

// describeBackup writes a backup: whose, where in the store, the Job, and what it holds.
func describeBackup(d *describer, b *tenancyv1alpha1.TenantBackup) {
	d.objectMeta(b, false)
	d.field("Tenant", b.Spec.Tenant)
	d.values("Databases asked", b.Spec.Databases)
	d.field("Phase", string(b.Status.Phase))
	d.verdict(b, "TenantBackup")
	d.field("Tenant UID", b.Status.TenantUID)
	d.field("Location", b.Status.Location)
	d.field("Job", b.Status.Job)
	d.field("Started", timeOf(b.Status.StartTime))
	d.field("Completed", timeOf(b.Status.CompletionTime))
	var rows [][]string
	for _, db := range b.Status.Databases {
		rows = append(rows, []string{db.Name, string(db.Engine), db.ServerVersion, fmt.Sprint(db.Size), db.SHA256})
	}
	d.section("Databases", []string{"NAME", "ENGINE", "SERVER VERSION", "SIZE", "SHA-256"}, rows)
	d.conditions(b.Status.Conditions)
	d.eventsSection()
}

// describeRestore writes a restore: from which backup, into which tenant, its safety backup and
// its Job.
func describeRestore(d *describer, r *tenancyv1alpha1.TenantRestore) {
	d.objectMeta(r, false)
	d.field("Backup", r.Spec.Backup)
	d.field("Tenant asked", r.Spec.Tenant)
	d.field("Databases asked", strings.Join(r.Spec.Databases, ", "))
	d.field("Phase", string(r.Status.Phase))
	d.verdict(r, "TenantRestore")
	d.field("Tenant", r.Status.Tenant)
	d.field("Safety backup", r.Status.SafetyBackup)
	d.field("Job", r.Status.Job)
	d.field("Started", timeOf(r.Status.StartTime))
	d.field("Completed", timeOf(r.Status.CompletionTime))
	d.conditions(r.Status.Conditions)
	d.eventsSection()
}

func timeOf(t *metav1.Time) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format("2006-01-02T15:04:05Z"), age(*t))
}

// scheduleTable is the backup schedules as `get backupschedules` shows them.
func scheduleTable(schedules []tenancyv1alpha1.TenantBackupSchedule) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Schedule", Type: "string"},
		{Name: "Window", Type: "string"},
		{Name: "Keep", Type: "integer"},
		{Name: "Suspended", Type: "boolean"},
		{Name: "Last", Type: "string"},
		{Name: "Succeeded", Type: "integer"},
		{Name: "Failed", Type: "integer"},
		{Name: "Missed", Type: "boolean", Priority: 1},
		{Name: "Age", Type: "string"},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, schedules, func(s *tenancyv1alpha1.TenantBackupSchedule) []any {
		_, _, message := readyOf(s.Status.Conditions)
		window := "<none>"
		if s.Spec.Window != nil {
			window = s.Spec.Window.Duration.String()
		}
		var run tenancyv1alpha1.BackupRunStatus
		if s.Status.LastRun != nil {
			run = *s.Status.LastRun
		}
		return []any{s.Name, s.Spec.Schedule, window, int64(s.Spec.Keep), s.Spec.Suspend, completed(s.Status.LastScheduleTime),
			int64(run.Succeeded), int64(run.Failed), run.MissedWindow, age(s.CreationTimestamp), orNone(message)}
	})
}

// describeSchedule writes a backup schedule: when, whom, how many kept, and its last run.
func describeSchedule(d *describer, s *tenancyv1alpha1.TenantBackupSchedule) {
	d.objectMeta(s, false)
	d.field("Schedule", s.Spec.Schedule+" (UTC)")
	d.field("Tenants", metav1.FormatLabelSelector(&s.Spec.Tenants))
	d.values("Databases", s.Spec.Databases)
	d.fieldf("Keep", "%d", s.Spec.Keep)
	d.fieldf("Suspended", "%t", s.Spec.Suspend)
	d.verdict(s, "TenantBackupSchedule")
	if s.Spec.Window != nil {
		d.field("Window", s.Spec.Window.Duration.String())
	}
	if s.Spec.Jitter != nil {
		d.field("Jitter", s.Spec.Jitter.Duration.String())
	}
	d.field("Last run", timeOf(s.Status.LastScheduleTime))
	d.fieldf("Tenants last run", "%d", s.Status.Tenants)
	if r := s.Status.LastRun; r != nil {
		d.fieldf("Last run's backups", "%d selected: %d succeeded, %d failed, %d running, %d waiting, %d not yet due",
			r.Selected, r.Succeeded, r.Failed, r.Running, r.Waiting, r.NotYetDue)
		d.field("Window end", timeOf(&r.WindowEnd))
		if r.MissedWindow {
			d.fieldf("Missed its window", "%d backup(s) had not started a minute after its end", r.Late)
		}
	}
	d.field("Next run", timeOf(s.Status.NextScheduleTime))
	d.conditions(s.Status.Conditions)
	d.eventsSection()
}
