package tenantbackup

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/controller/controllertest"
)

var statusNow = metav1.NewTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))

// running is the status of a backup or restore whose Job an earlier reconcile of its generation,
// 2, started.
func running(job string) []metav1.Condition {
	return []metav1.Condition{
		{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonJobRunning, Message: "Job " + job + " runs", ObservedGeneration: 2},
		{Type: tenancyv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonJobRunning, Message: "Job " + job + " runs", ObservedGeneration: 2},
	}
}

// want is what a case's status says: its phase, the reason and status of Ready, a part of Ready's
// message, and how kstatus reads the object.
type want struct {
	phase   tenancyv1alpha1.BackupPhase
	ready   metav1.ConditionStatus
	reason  string
	says    string
	kstatus status.Status
}

// checkConditions checks the kstatus conditions of a status against w, at generation 2.
func checkConditions(t *testing.T, conditions []metav1.Condition, w want) {
	t.Helper()
	ready := meta.FindStatusCondition(conditions, tenancyv1alpha1.ReadyCondition)
	if ready == nil || ready.Status != w.ready || ready.Reason != w.reason || !strings.Contains(ready.Message, w.says) || ready.ObservedGeneration != 2 {
		t.Errorf("Ready = %+v, want %s %s at generation 2 saying %q", ready, w.ready, w.reason, w.says)
	}
	if got, want := meta.IsStatusConditionTrue(conditions, tenancyv1alpha1.ReconcilingCondition), w.kstatus == status.InProgressStatus; got != want {
		t.Errorf("Reconciling = %v, want %v", got, want)
	}
	if got, want := meta.IsStatusConditionTrue(conditions, tenancyv1alpha1.StalledCondition), w.kstatus == status.FailedStatus; got != want {
		t.Errorf("Stalled = %v, want %v", got, want)
	}
}

var manifest = &backup.Manifest{TenantUID: "acme-uid", Databases: []backup.DumpEntry{
	{Name: "app", Engine: "postgres", ServerVersion: "17.2", Size: 1000, SHA256: "ab12"},
	{Name: "audit", Engine: "postgres", ServerVersion: "17.2", Size: 24, SHA256: "cd34"},
}}

// backupCases are the states a backup reports.
var backupCases = []struct {
	name     string
	previous tenancyv1alpha1.TenantBackupStatus
	obs      backupObservation
	want     want
}{
	{
		name: "a backup whose Job was started is Running and Reconciling, and says where it writes",
		obs: backupObservation{now: statusNow, started: &backupJob{
			namespace: "landlord-system", name: "landlord-backup-0a1b2c3d4e5f", tenant: "acme", databases: 2,
			backupPlace: backupPlace{tenantUID: "acme-uid", location: "acme-uid/b-uid/"},
		}},
		want: want{phase: tenancyv1alpha1.BackupRunning, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobRunning,
			says: "Job landlord-system/landlord-backup-0a1b2c3d4e5f dumps 2 database(s) of tenant acme", kstatus: status.InProgressStatus},
	},
	{
		name:     "a backup whose Job still runs stays Running and Reconciling",
		previous: tenancyv1alpha1.TenantBackupStatus{Phase: tenancyv1alpha1.BackupRunning, Job: "landlord-backup-0a1b2c3d4e5f", Conditions: running("landlord-backup-0a1b2c3d4e5f")},
		obs:      backupObservation{now: statusNow},
		want: want{phase: tenancyv1alpha1.BackupRunning, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobRunning,
			says: "runs", kstatus: status.InProgressStatus},
	},
	{
		name:     "a backup whose Job wrote what was asked for has Succeeded and is Ready, with its databases and size",
		previous: tenancyv1alpha1.TenantBackupStatus{Phase: tenancyv1alpha1.BackupRunning, Job: "landlord-backup-0a1b2c3d4e5f", Conditions: running("landlord-backup-0a1b2c3d4e5f")},
		obs:      backupObservation{now: statusNow, ended: &backupEnd{manifest: manifest}},
		want: want{phase: tenancyv1alpha1.BackupSucceeded, ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonSucceeded,
			says: "2 database(s), 1024 bytes", kstatus: status.CurrentStatus},
	},
	{
		name:     "a backup whose Job failed has Failed and is Stalled",
		previous: tenancyv1alpha1.TenantBackupStatus{Phase: tenancyv1alpha1.BackupRunning, Job: "landlord-backup-0a1b2c3d4e5f", Conditions: running("landlord-backup-0a1b2c3d4e5f")},
		obs:      backupObservation{now: statusNow, ended: &backupEnd{failed: true, message: "Job landlord-system/landlord-backup-0a1b2c3d4e5f failed: DeadlineExceeded"}},
		want: want{phase: tenancyv1alpha1.BackupFailed, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobFailed,
			says: "DeadlineExceeded", kstatus: status.FailedStatus},
	},
	{
		name: "a backup refused is Pending and Stalled with the reason",
		obs:  backupObservation{err: refuse(tenancyv1alpha1.ReasonBackupsNotConfigured, "the operator has no backup store")},
		want: want{phase: tenancyv1alpha1.BackupPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonBackupsNotConfigured,
			says: "no backup store", kstatus: status.FailedStatus},
	},
	{
		name: "a backup whose store does not answer is Reconciling, and tried again",
		obs:  backupObservation{err: errors.New("dial tcp: connection refused")},
		want: want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonStoreUnavailable, says: "connection refused", kstatus: status.InProgressStatus},
	},
}

// backupAt is a backup at generation 2 with the status an earlier reconcile left.
func backupAt(previous tenancyv1alpha1.TenantBackupStatus) *tenancyv1alpha1.TenantBackup {
	if len(previous.Conditions) > 0 {
		previous.ObservedGeneration = 2
	}
	return &tenancyv1alpha1.TenantBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "acme-nightly", Generation: 2},
		Spec:       tenancyv1alpha1.TenantBackupSpec{Tenant: "acme"},
		Status:     previous,
	}
}

func TestComputeBackupStatus(t *testing.T) {
	for _, tc := range backupCases {
		t.Run(tc.name, func(t *testing.T) {
			b := backupAt(tc.previous)
			s := computeBackupStatus(b, tc.obs)
			if s.Phase != tc.want.phase || s.ObservedGeneration != 2 {
				t.Errorf("phase %q at generation %d, want %q at 2", s.Phase, s.ObservedGeneration, tc.want.phase)
			}
			checkConditions(t, s.Conditions, tc.want)
			switch {
			case tc.obs.started != nil:
				if s.Job != tc.obs.started.name || s.TenantUID != "acme-uid" || s.Location != "acme-uid/b-uid/" || !s.StartTime.Equal(&statusNow) || s.Format != backup.ManifestFormat {
					t.Errorf("a started backup's status %+v does not say its Job, where it writes, when it started and its format", s)
				}
			case tc.obs.ended != nil:
				if !s.CompletionTime.Equal(&statusNow) {
					t.Errorf("completionTime %v, want %v", s.CompletionTime, statusNow)
				}
				if !tc.obs.ended.failed && (s.Size != 1024 || len(s.Databases) != 2 || s.Databases[1].SHA256 != "cd34") {
					t.Errorf("a succeeded backup's status %+v does not hold its manifest's databases and size", s)
				}
			}
		})
	}
	t.Run("recording where a backup writes changes nothing else", func(t *testing.T) {
		b := backupAt(tenancyv1alpha1.TenantBackupStatus{})
		s := computeBackupStatus(b, backupObservation{recorded: &backupPlace{tenantUID: "acme-uid", location: "acme-uid/b-uid/"}})
		if s.TenantUID != "acme-uid" || s.Location != "acme-uid/b-uid/" || s.Phase != "" || len(s.Conditions) != 0 || s.ObservedGeneration != 2 {
			t.Errorf("status %+v, want only its tenant's UID, location and observedGeneration", s)
		}
	})
}

// restoreCases are the states a restore reports.
var restoreCases = []struct {
	name     string
	previous tenancyv1alpha1.TenantRestoreStatus
	obs      restoreObservation
	want     want
}{
	{
		name: "a restore of a backup that has not succeeded yet is Pending and Reconciling",
		obs:  restoreObservation{err: refuse(tenancyv1alpha1.ReasonBackupNotReady, "TenantBackup acme-nightly has not succeeded yet")},
		want: want{phase: tenancyv1alpha1.BackupPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonBackupNotReady,
			says: "has not succeeded yet", kstatus: status.InProgressStatus},
	},
	{
		name: "a restore taking its safety backup first is Pending and Reconciling, and names it",
		obs: restoreObservation{tenant: &restoreTenant{name: "acme", uid: "acme-uid"}, safetyBackup: "acme-restore-safety",
			err: refuse(tenancyv1alpha1.ReasonBackupNotReady, "taking safety backup acme-restore-safety of tenant acme before its data is replaced")},
		want: want{phase: tenancyv1alpha1.BackupPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonBackupNotReady,
			says: "taking safety backup", kstatus: status.InProgressStatus},
	},
	{
		name: "a restore waiting for another restore into its tenant is Pending and Reconciling",
		obs: restoreObservation{tenant: &restoreTenant{name: "acme", uid: "acme-uid"},
			err: refuse(tenancyv1alpha1.ReasonRestoreWaiting, "TenantRestore other is writing into tenant acme; this one starts after it")},
		want: want{phase: tenancyv1alpha1.BackupPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonRestoreWaiting,
			says: "this one starts after it", kstatus: status.InProgressStatus},
	},
	{
		name: "a restore refused is Pending and Stalled with the reason",
		obs:  restoreObservation{err: refuse(tenancyv1alpha1.ReasonBackupMismatch, "TenantBackup acme-nightly holds no database billing")},
		want: want{phase: tenancyv1alpha1.BackupPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonBackupMismatch,
			says: "holds no database billing", kstatus: status.FailedStatus},
	},
	{
		name: "a restore whose safety backup failed is Pending and Stalled: nothing was restored",
		obs: restoreObservation{tenant: &restoreTenant{name: "acme", uid: "acme-uid"}, safetyBackup: "acme-restore-safety",
			err: refuse(tenancyv1alpha1.ReasonJobFailed, "safety backup acme-restore-safety failed, so nothing was restored")},
		want: want{phase: tenancyv1alpha1.BackupPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobFailed,
			says: "nothing was restored", kstatus: status.FailedStatus},
	},
	{
		name: "a restore into the tenant backed up whose Job was started is Running and Reconciling",
		obs: restoreObservation{now: statusNow, tenant: &restoreTenant{name: "acme", uid: "acme-uid"}, safetyBackup: "acme-restore-safety",
			started: &restoreJob{namespace: "landlord-system", name: "landlord-restore-0a1b2c3d4e5f", tenant: "acme", databases: []string{"app", "audit"}}},
		want: want{phase: tenancyv1alpha1.BackupRunning, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobRunning,
			says: "Job landlord-system/landlord-restore-0a1b2c3d4e5f replaces the data of tenant acme (app, audit)", kstatus: status.InProgressStatus},
	},
	{
		name: "a copy into another tenant whose Job was started says whose backup it copies",
		obs: restoreObservation{now: statusNow, tenant: &restoreTenant{name: "acme-staging", uid: "staging-uid"}, safetyBackup: "acme-restore-safety",
			started: &restoreJob{namespace: "landlord-system", name: "landlord-restore-0a1b2c3d4e5f", tenant: "acme-staging", copyOf: "acme", databases: []string{"app"}}},
		want: want{phase: tenancyv1alpha1.BackupRunning, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobRunning,
			says: "copies the backup of tenant acme into tenant acme-staging (app)", kstatus: status.InProgressStatus},
	},
	{
		name:     "a restore whose Job succeeded has Succeeded and is Ready",
		previous: tenancyv1alpha1.TenantRestoreStatus{Phase: tenancyv1alpha1.BackupRunning, Tenant: "acme", TenantUID: "acme-uid", Job: "landlord-restore-0a1b2c3d4e5f", Conditions: running("landlord-restore-0a1b2c3d4e5f")},
		obs:      restoreObservation{now: statusNow, ended: &restoreEnd{}},
		want: want{phase: tenancyv1alpha1.BackupSucceeded, ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonSucceeded,
			says: "restored TenantBackup acme-nightly into tenant acme", kstatus: status.CurrentStatus},
	},
	{
		name:     "a restore whose logins were not set back has Succeeded and says so",
		previous: tenancyv1alpha1.TenantRestoreStatus{Phase: tenancyv1alpha1.BackupRunning, Tenant: "acme", TenantUID: "acme-uid", Job: "landlord-restore-0a1b2c3d4e5f", Conditions: running("landlord-restore-0a1b2c3d4e5f")},
		obs:      restoreObservation{now: statusNow, ended: &restoreEnd{message: "the logins were not set back: tenant acme is gone"}},
		want: want{phase: tenancyv1alpha1.BackupSucceeded, ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonSucceeded,
			says: "into tenant acme; the logins were not set back: tenant acme is gone", kstatus: status.CurrentStatus},
	},
	{
		name:     "a restore whose Job failed has Failed and is Stalled",
		previous: tenancyv1alpha1.TenantRestoreStatus{Phase: tenancyv1alpha1.BackupRunning, Tenant: "acme", TenantUID: "acme-uid", Job: "landlord-restore-0a1b2c3d4e5f", Conditions: running("landlord-restore-0a1b2c3d4e5f")},
		obs:      restoreObservation{now: statusNow, ended: &restoreEnd{failed: true, message: "Job landlord-system/landlord-restore-0a1b2c3d4e5f failed: BackoffLimitExceeded"}},
		want: want{phase: tenancyv1alpha1.BackupFailed, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobFailed,
			says: "BackoffLimitExceeded", kstatus: status.FailedStatus},
	},
	{
		name:     "a restore whose logins' server does not answer once its Job ended is Reconciling, and tried again",
		previous: tenancyv1alpha1.TenantRestoreStatus{Phase: tenancyv1alpha1.BackupRunning, Tenant: "acme", TenantUID: "acme-uid", Job: "landlord-restore-0a1b2c3d4e5f", Conditions: running("landlord-restore-0a1b2c3d4e5f")},
		obs:      restoreObservation{err: errors.New("converging the login of tenant acme's database app: connection refused")},
		want: want{phase: tenancyv1alpha1.BackupRunning, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonStoreUnavailable,
			says: "connection refused", kstatus: status.InProgressStatus},
	},
}

// restoreAt is a restore at generation 2 with the status an earlier reconcile left.
func restoreAt(previous tenancyv1alpha1.TenantRestoreStatus) *tenancyv1alpha1.TenantRestore {
	if len(previous.Conditions) > 0 {
		previous.ObservedGeneration = 2
	}
	return &tenancyv1alpha1.TenantRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "acme-restore", Generation: 2},
		Spec:       tenancyv1alpha1.TenantRestoreSpec{Backup: "acme-nightly"},
		Status:     previous,
	}
}

func TestComputeRestoreStatus(t *testing.T) {
	for _, tc := range restoreCases {
		t.Run(tc.name, func(t *testing.T) {
			rs := restoreAt(tc.previous)
			s := computeRestoreStatus(rs, tc.obs)
			if s.Phase != tc.want.phase || s.ObservedGeneration != 2 {
				t.Errorf("phase %q at generation %d, want %q at 2", s.Phase, s.ObservedGeneration, tc.want.phase)
			}
			checkConditions(t, s.Conditions, tc.want)
			if o := tc.obs.tenant; o != nil && (s.Tenant != o.name || s.TenantUID != o.uid) {
				t.Errorf("tenant %s (%s), want %s (%s)", s.Tenant, s.TenantUID, o.name, o.uid)
			}
			if tc.obs.safetyBackup != "" && s.SafetyBackup != tc.obs.safetyBackup {
				t.Errorf("safetyBackup %q, want %q", s.SafetyBackup, tc.obs.safetyBackup)
			}
			if j := tc.obs.started; j != nil && (s.Job != j.name || !s.StartTime.Equal(&statusNow)) {
				t.Errorf("job %q started at %v, want %q at %v", s.Job, s.StartTime, j.name, statusNow)
			}
			if tc.obs.ended != nil && !s.CompletionTime.Equal(&statusNow) {
				t.Errorf("completionTime %v, want %v", s.CompletionTime, statusNow)
			}
		})
	}
}

var lastRun = time.Date(2025, 3, 1, 11, 0, 0, 0, time.UTC)

// scheduleCases are the states a schedule reports.
var scheduleCases = []struct {
	name    string
	suspend bool
	obs     scheduleObservation
	want    want
}{
	{
		name: "a schedule whose spec.schedule does not parse is Stalled",
		obs:  scheduleObservation{invalid: errors.New("expected exactly 5 fields, found 6")},
		want: want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonInvalidSchedule, says: "expected exactly 5 fields", kstatus: status.FailedStatus},
	},
	{
		name:    "a suspended schedule is Ready and says it makes nothing",
		suspend: true,
		want:    want{ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonSuspended, says: "no backup is made and none deleted", kstatus: status.CurrentStatus},
	},
	{
		name: "a schedule that has just run is Ready and says how its run goes and when it runs next",
		obs: scheduleObservation{ran: &lastRun, upcoming: lastRun.Add(24 * time.Hour), progress: &runProgress{made: 3, BackupRunStatus: tenancyv1alpha1.BackupRunStatus{
			ScheduleTime: metav1.Time{Time: lastRun}, Selected: 5, Succeeded: 1, Failed: 1, Waiting: 1, NotYetDue: 2,
		}}},
		want: want{ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonScheduled,
			says: "last run at 2025-03-01T11:00:00Z: 5 tenant(s), 1 succeeded, 1 failed, 0 running, 1 waiting, 2 not yet due; next run at 2025-03-02T11:00:00Z", kstatus: status.CurrentStatus},
	},
	{
		name: "a schedule whose run missed its window stays Ready, and says how many were late",
		obs: scheduleObservation{upcoming: lastRun.Add(24 * time.Hour), progress: &runProgress{made: 3, BackupRunStatus: tenancyv1alpha1.BackupRunStatus{
			ScheduleTime: metav1.Time{Time: lastRun}, WindowEnd: metav1.Time{Time: lastRun.Add(time.Hour)}, Selected: 3, Waiting: 2, Succeeded: 1, Late: 2, MissedWindow: true,
		}}},
		want: want{ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonScheduled,
			says: "last run at 2025-03-01T11:00:00Z missed its window: 2 backup(s) had not started by 2025-03-01T12:00:00Z", kstatus: status.CurrentStatus},
	},
	{
		name: "a schedule that has not run yet is Ready and says when it runs",
		obs:  scheduleObservation{upcoming: lastRun.Add(24 * time.Hour)},
		want: want{ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonScheduled, says: "next run at 2025-03-02T11:00:00Z", kstatus: status.CurrentStatus},
	},
}

// scheduleAt is a schedule at generation 2 with the status a reconcile of generation 1 left.
func scheduleAt(suspend bool) *tenancyv1alpha1.TenantBackupSchedule {
	return &tenancyv1alpha1.TenantBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 2},
		Spec:       tenancyv1alpha1.TenantBackupScheduleSpec{Schedule: "0 11 * * *", Keep: 7, Suspend: suspend},
		Status: tenancyv1alpha1.TenantBackupScheduleStatus{ObservedGeneration: 1, NextScheduleTime: &metav1.Time{Time: lastRun}, Conditions: []metav1.Condition{
			{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonScheduled, ObservedGeneration: 1},
		}},
	}
}

func TestComputeScheduleStatus(t *testing.T) {
	for _, tc := range scheduleCases {
		t.Run(tc.name, func(t *testing.T) {
			s := computeScheduleStatus(scheduleAt(tc.suspend), tc.obs)
			if s.ObservedGeneration != 2 {
				t.Errorf("observedGeneration %d, want 2", s.ObservedGeneration)
			}
			checkConditions(t, s.Conditions, tc.want)
			switch {
			case tc.suspend && s.NextScheduleTime != nil:
				t.Errorf("a suspended schedule's nextScheduleTime is %v, want none", s.NextScheduleTime)
			case tc.obs.ran != nil && (!s.LastScheduleTime.Time.Equal(lastRun) || s.Tenants != 3 || s.LastRun == nil || s.LastRun.Selected != 5):
				t.Errorf("lastScheduleTime %v, tenants %d, lastRun %+v: want the run's", s.LastScheduleTime, s.Tenants, s.LastRun)
			case tc.obs.invalid == nil && !tc.suspend && !s.NextScheduleTime.Time.Equal(tc.obs.upcoming):
				t.Errorf("nextScheduleTime %v, want %v", s.NextScheduleTime, tc.obs.upcoming)
			}
		})
	}
}

// Every state a backup, a restore or a schedule reports reads the same to kstatus (Flux's health
// checks, kubectl wait, cli-utils) and to the Argo CD health check Landlord ships for its kind.
func TestBackupsRestoresAndSchedulesReadTheSameInKstatusAndArgoCD(t *testing.T) {
	check := func(t *testing.T, obj client.Object, want status.Status) {
		t.Helper()
		if got, _ := controllertest.KstatusAgreesWithArgoCD(t, obj); got != want {
			t.Errorf("kstatus %s, want %s", got, want)
		}
	}
	for _, tc := range backupCases {
		t.Run("TenantBackup: "+tc.name, func(t *testing.T) {
			b := backupAt(tc.previous)
			b.Status = computeBackupStatus(b, tc.obs)
			check(t, b, tc.want.kstatus)
		})
	}
	for _, tc := range restoreCases {
		t.Run("TenantRestore: "+tc.name, func(t *testing.T) {
			rs := restoreAt(tc.previous)
			rs.Status = computeRestoreStatus(rs, tc.obs)
			check(t, rs, tc.want.kstatus)
		})
	}
	for _, tc := range scheduleCases {
		t.Run("TenantBackupSchedule: "+tc.name, func(t *testing.T) {
			s := scheduleAt(tc.suspend)
			s.Status = computeScheduleStatus(s, tc.obs)
			check(t, s, tc.want.kstatus)
		})
	}
}
