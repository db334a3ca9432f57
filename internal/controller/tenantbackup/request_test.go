package tenantbackup

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

var requestNow = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// requestWorld is a tenant acme in namespace tenant-acme, with what each case adds.
func requestWorld(t *testing.T, objs ...client.Object) (*RequestReconciler, client.Client) {
	t.Helper()
	cfg := config.Default()
	cfg.Backups.SelfService = config.SelfService{Enabled: true, BackupsPerDay: ptr.To[int32](2), Keep: 2, RestoresPerDay: ptr.To[int32](1)}
	acme := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "acme-uid"},
		Status: tenancyv1alpha1.TenantStatus{Namespace: "tenant-acme"}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-acme", Labels: map[string]string{tenancyv1alpha1.TenantLabel: "acme"}}}
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
		WithObjects(append([]client.Object{acme, ns}, objs...)...).
		WithStatusSubresource(&tenancyv1alpha1.BackupRequest{}, &tenancyv1alpha1.RestoreRequest{}, &tenancyv1alpha1.TenantBackup{}).
		WithIndex(&tenancyv1alpha1.TenantRestore{}, indexes.OpenRestoreBackup, indexes.OpenRestoreKeys).Build()
	return &RequestReconciler{Client: c, APIReader: c, Config: &cfg, Recorder: events.NewFakeRecorder(100),
		Clock: clocktesting.NewFakePassiveClock(requestNow), Enabled: true}, c
}

func backupRequest(ns, name, uid string) *tenancyv1alpha1.BackupRequest {
	return &tenancyv1alpha1.BackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Generation: 1}}
}

// requested is a backup an earlier request of acme's made, at the time given, in the phase given.
func requested(name string, at time.Time, phase tenancyv1alpha1.BackupPhase) *tenancyv1alpha1.TenantBackup {
	return &tenancyv1alpha1.TenantBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at),
			Labels:      map[string]string{tenancyv1alpha1.BackupRequestLabel: "acme-uid"},
			Annotations: map[string]string{tenancyv1alpha1.RequestAnnotation: "tenant-acme/" + name, tenancyv1alpha1.RequestUIDAnnotation: name + "-uid"}},
		Spec:   tenancyv1alpha1.TenantBackupSpec{Tenant: "acme"},
		Status: tenancyv1alpha1.TenantBackupStatus{Phase: phase, TenantUID: "acme-uid"},
	}
}

// followed is a request of acme's and the backup it made a minute ago, in the phase given,
// which its status names.
func followed(phase tenancyv1alpha1.BackupPhase) (*tenancyv1alpha1.BackupRequest, *tenancyv1alpha1.TenantBackup) {
	br := backupRequest("tenant-acme", "now", "11111111-2222")
	br.Status.Backup = "acme-req-11111111"
	made := requested(br.Status.Backup, requestNow.Add(-time.Minute), phase)
	made.Annotations[tenancyv1alpha1.RequestUIDAnnotation] = string(br.UID)
	return br, made
}

func reconcileBackupRequest(t *testing.T, r *RequestReconciler, c client.Client, br *tenancyv1alpha1.BackupRequest) *tenancyv1alpha1.BackupRequest {
	t.Helper()
	if _, err := r.reconcileBackup(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(br)}); err != nil {
		t.Fatal(err)
	}
	got := &tenancyv1alpha1.BackupRequest{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(br), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestABackupRequestIsAnsweredForItsNamespacesTenantOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		// namespace the request is made in, and what else is there.
		namespace string
		objs      []client.Object
		off       bool
		// made is the backup made, "" for none; reason the Ready condition's when none is.
		made, reason string
	}{
		{name: "a request in the tenant's namespace backs up that tenant", namespace: "tenant-acme", made: "acme-req-11111111"},
		{name: "a request while self-service is off is refused", namespace: "tenant-acme", off: true, reason: tenancyv1alpha1.ReasonSelfServiceOff},
		{name: "a request in a namespace of no tenant is refused", namespace: "default",
			objs: []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}, reason: tenancyv1alpha1.ReasonTenantNotFound},
		{name: "a namespace labelled with a tenant's name is not that tenant's unless the tenant says so", namespace: "tenant-fake",
			objs:   []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-fake", Labels: map[string]string{tenancyv1alpha1.TenantLabel: "acme"}}}},
			reason: tenancyv1alpha1.ReasonTenantNotFound},
		{name: "a third request of the day is refused", namespace: "tenant-acme",
			objs:   []client.Object{requested("one", requestNow.Add(-23*time.Hour), tenancyv1alpha1.BackupSucceeded), requested("two", requestNow.Add(-time.Hour), tenancyv1alpha1.BackupSucceeded)},
			reason: tenancyv1alpha1.ReasonRequestLimited},
		{name: "backups requested more than a day ago do not count", namespace: "tenant-acme",
			objs: []client.Object{requested("one", requestNow.Add(-25*time.Hour), tenancyv1alpha1.BackupSucceeded), requested("two", requestNow.Add(-time.Hour), tenancyv1alpha1.BackupSucceeded)},
			made: "acme-req-11111111"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := backupRequest(tc.namespace, "now", "11111111-2222")
			r, c := requestWorld(t, append(tc.objs, br)...)
			r.Config.Backups.SelfService.Enabled = !tc.off
			got := reconcileBackupRequest(t, r, c, br)
			if got.Status.Backup != tc.made {
				t.Fatalf("status.backup = %q, want %q (conditions %+v)", got.Status.Backup, tc.made, got.Status.Conditions)
			}
			if tc.made == "" {
				checkConditions(t, regen(got.Status.Conditions), want{ready: metav1.ConditionFalse, reason: tc.reason, kstatus: status.FailedStatus})
				if got.Status.Phase != tenancyv1alpha1.BackupFailed {
					t.Errorf("phase = %s, want Failed: a refusal is final", got.Status.Phase)
				}
				// Final: a later reconcile (a restart, a day later) makes nothing.
				r.Config.Backups.SelfService.Enabled = true
				r.Clock = clocktesting.NewFakePassiveClock(requestNow.Add(48 * time.Hour))
				if again := reconcileBackupRequest(t, r, c, got); again.Status.Backup != "" {
					t.Errorf("a refused request made %s on a later reconcile", again.Status.Backup)
				}
				return
			}
			b := &tenancyv1alpha1.TenantBackup{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: tc.made}, b); err != nil {
				t.Fatal(err)
			}
			if b.Spec.Tenant != "acme" || b.Labels[tenancyv1alpha1.BackupRequestLabel] != "acme-uid" || b.Annotations[tenancyv1alpha1.RequestUIDAnnotation] != "11111111-2222" {
				t.Errorf("backup made = %+v", b.ObjectMeta)
			}
		})
	}
}

// regen stamps conditions with generation 2, as checkConditions expects.
func regen(conds []metav1.Condition) []metav1.Condition {
	out := slices.Clone(conds)
	for i := range out {
		out[i].ObservedGeneration = 2
	}
	return out
}

func TestARequestWhoseStatusWriteWasLostFollowsTheBackupItMade(t *testing.T) {
	br := backupRequest("tenant-acme", "now", "11111111-2222")
	// Made by a reconcile that did not get to write the request's status; the day's limit is
	// reached with it, and must not refuse the request that made it.
	made := requested("acme-req-11111111", requestNow.Add(-time.Minute), tenancyv1alpha1.BackupRunning)
	made.Annotations[tenancyv1alpha1.RequestUIDAnnotation] = "11111111-2222"
	r, c := requestWorld(t, br, made, requested("one", requestNow.Add(-time.Hour), tenancyv1alpha1.BackupSucceeded))
	got := reconcileBackupRequest(t, r, c, br)
	if got.Status.Backup != made.Name || got.Status.Phase != tenancyv1alpha1.BackupRunning {
		t.Errorf("status = %+v, want the running backup %s", got.Status, made.Name)
	}
}

func TestRequestedBackupsBeyondTheKeptAreDeletedOnceANewerOneSucceeds(t *testing.T) {
	ctx := context.Background()
	br, newest := followed(tenancyv1alpha1.BackupSucceeded)
	scheduled := &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: "acme-202612010300", CreationTimestamp: metav1.NewTime(requestNow.Add(-200 * time.Hour)),
		Labels: map[string]string{tenancyv1alpha1.BackupScheduleLabel: "nightly"}}, Status: tenancyv1alpha1.TenantBackupStatus{Phase: tenancyv1alpha1.BackupSucceeded}}
	r, c := requestWorld(t, br, newest, scheduled,
		requested("older", requestNow.Add(-48*time.Hour), tenancyv1alpha1.BackupSucceeded),
		requested("oldest", requestNow.Add(-72*time.Hour), tenancyv1alpha1.BackupSucceeded),
		requested("failed", requestNow.Add(-60*time.Hour), tenancyv1alpha1.BackupFailed))
	got := reconcileBackupRequest(t, r, c, br)
	checkConditions(t, regen(got.Status.Conditions), want{ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonSucceeded, kstatus: status.CurrentStatus})
	list := &tenancyv1alpha1.TenantBackupList{}
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, b := range list.Items {
		left = append(left, b.Name)
	}
	slices.Sort(left)
	// Two requested kept, the newest two that succeeded; the schedule's is not the requests'.
	if want := []string{"acme-202612010300", "acme-req-11111111", "older"}; !slices.Equal(left, want) {
		t.Errorf("backups left = %v, want %v", left, want)
	}
}

func TestARestoreRequestRestoresOnlyItsOwnTenantsBackups(t *testing.T) {
	mine := requested("mine", requestNow.Add(-time.Hour), tenancyv1alpha1.BackupSucceeded)
	before := requested("before", requestNow.Add(-time.Hour), tenancyv1alpha1.BackupSucceeded)
	// A tenant acme deleted and made again: the same name, another customer.
	before.Status.TenantUID = "the-acme-before"
	theirs := requested("theirs", requestNow.Add(-time.Hour), tenancyv1alpha1.BackupSucceeded)
	theirs.Spec.Tenant, theirs.Status.TenantUID = "globex", "globex-uid"
	pending := requested("pending", requestNow.Add(-time.Minute), tenancyv1alpha1.BackupPending)
	pending.Status.TenantUID = ""
	for _, tc := range []struct {
		name, backup, reason string
		made                 bool
	}{
		{name: "its own backup is restored into it", backup: "mine", made: true},
		{name: "another tenant's is not found", backup: "theirs", reason: tenancyv1alpha1.ReasonBackupNotFound},
		{name: "one of a tenant of the same name before it is not found", backup: "before", reason: tenancyv1alpha1.ReasonBackupNotFound},
		{name: "one that does not exist is not found", backup: "none", reason: tenancyv1alpha1.ReasonBackupNotFound},
		{name: "its own that has not started is waited for", backup: "pending", reason: tenancyv1alpha1.ReasonBackupNotReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := &tenancyv1alpha1.RestoreRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "undo", UID: "33333333-4444", Generation: 1},
				Spec: tenancyv1alpha1.RestoreRequestSpec{Backup: tc.backup}}
			r, c := requestWorld(t, rr, mine, before, theirs, pending)
			if _, err := r.reconcileRestore(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rr)}); err != nil {
				t.Fatal(err)
			}
			got := &tenancyv1alpha1.RestoreRequest{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(rr), got); err != nil {
				t.Fatal(err)
			}
			if tc.made {
				rs := &tenancyv1alpha1.TenantRestore{}
				if err := c.Get(context.Background(), client.ObjectKey{Name: got.Status.Restore}, rs); err != nil {
					t.Fatalf("restore %q: %v", got.Status.Restore, err)
				}
				if rs.Spec.Backup != "mine" || rs.Spec.Tenant != "" {
					t.Errorf("restore made = %+v, want mine into its own tenant", rs.Spec)
				}
				return
			}
			if got.Status.Restore != "" {
				t.Fatalf("made restore %s", got.Status.Restore)
			}
			kst := status.FailedStatus
			if tc.reason == tenancyv1alpha1.ReasonBackupNotReady {
				kst = status.InProgressStatus
			}
			checkConditions(t, regen(got.Status.Conditions), want{ready: metav1.ConditionFalse, reason: tc.reason, kstatus: kst})
		})
	}
}

func TestARequestSaysOnlyWhatTheTenantMayRead(t *testing.T) {
	const jobWords = "Job landlord-system/landlord-backup-0a1b pg_dump: connection to 10.0.0.5 failed"
	for _, tc := range []struct {
		name  string
		phase tenancyv1alpha1.BackupPhase
		cond  metav1.Condition
		w     want
	}{
		{name: "a backup whose Job runs runs", phase: tenancyv1alpha1.BackupRunning,
			cond: metav1.Condition{Type: tenancyv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonJobRunning, Message: jobWords},
			w:    want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobRunning, says: "the backup: it runs", kstatus: status.InProgressStatus}},
		{name: "a failed backup says who sees why, not why", phase: tenancyv1alpha1.BackupFailed,
			cond: metav1.Condition{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonJobFailed, Message: jobWords},
			w:    want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobFailed, says: "administrators see why in acme-req-1", kstatus: status.FailedStatus}},
		{name: "a refused backup says what may be the tenant's to change, in words of its own", phase: tenancyv1alpha1.BackupPending,
			cond: metav1.Condition{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonBackupRefused, Message: "Secret landlord-system/landlord-backup-0a1b exists"},
			w:    want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonBackupRefused, says: "does not have the databases the request names", kstatus: status.FailedStatus}},
		{name: "a backup waiting for its server says so", phase: tenancyv1alpha1.BackupPending,
			cond: metav1.Condition{Type: tenancyv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonWaitingForServer, Message: "waits its turn: server pg-1 runs 4 of 4"},
			w:    want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonWaitingForServer, says: "waits for a place", kstatus: status.InProgressStatus}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready := tc.cond
			ready.Type, ready.Status = tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse
			b := &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: "acme-req-1"},
				Status: tenancyv1alpha1.TenantBackupStatus{Phase: tc.phase, Conditions: []metav1.Condition{ready, tc.cond}}}
			br := &tenancyv1alpha1.BackupRequest{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			s := computeBackupRequestStatus(br, requestObservation{made: b, name: b.Name})
			checkConditions(t, s.Conditions, tc.w)
			for _, c := range s.Conditions {
				if c.Message == jobWords || containsAny(c.Message, "10.0.0.5", "landlord-system", "pg-1") {
					t.Errorf("condition %s tells the tenant the platform's words: %q", c.Type, c.Message)
				}
			}
		})
	}
}

func containsAny(s string, parts ...string) bool {
	return slices.ContainsFunc(parts, func(p string) bool { return strings.Contains(s, p) })
}

func TestARequestsFailuresAndEndsAreFinalAndSayNothingOfThePlatform(t *testing.T) {
	br := &tenancyv1alpha1.BackupRequest{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	t.Run("an error tried again says nothing of its words", func(t *testing.T) {
		s := computeBackupRequestStatus(br, requestObservation{err: errors.New("dial tcp 10.0.0.5:6443: landlord-system/landlord-controller-manager forbidden")})
		checkConditions(t, s.Conditions, want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonProgressing, says: "tries again", kstatus: status.InProgressStatus})
		for _, c := range s.Conditions {
			if containsAny(c.Message, "10.0.0.5", "landlord-system", "forbidden") {
				t.Errorf("condition %s tells the tenant the platform's words: %q", c.Type, c.Message)
			}
		}
	})
	t.Run("a backup deleted after it succeeded leaves the request Ready, saying so", func(t *testing.T) {
		done := br.DeepCopy()
		done.Status = tenancyv1alpha1.BackupRequestStatus{Phase: tenancyv1alpha1.BackupSucceeded, Backup: "acme-req-1"}
		s := computeBackupRequestStatus(done, requestObservation{gone: true})
		checkConditions(t, s.Conditions, want{ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonBackupDeleted, says: "has since been deleted", kstatus: status.CurrentStatus})
	})
	t.Run("a backup deleted before it ended fails the request", func(t *testing.T) {
		running := br.DeepCopy()
		running.Status = tenancyv1alpha1.BackupRequestStatus{Phase: tenancyv1alpha1.BackupRunning, Backup: "acme-req-1"}
		s := computeBackupRequestStatus(running, requestObservation{gone: true})
		if s.Phase != tenancyv1alpha1.BackupFailed {
			t.Errorf("phase = %s, want Failed", s.Phase)
		}
		checkConditions(t, s.Conditions, want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonBackupDeleted, says: "make another request", kstatus: status.FailedStatus})
	})
}

func TestARefusedOrAbandonedRestoreIsEndedBeforeItCanRunOverNewerData(t *testing.T) {
	ctx := context.Background()
	mine := requested("mine", requestNow.Add(-time.Hour), tenancyv1alpha1.BackupSucceeded)
	refusedRestore := func(name, request string) *tenancyv1alpha1.TenantRestore {
		return &tenancyv1alpha1.TenantRestore{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"),
				Labels:      map[string]string{tenancyv1alpha1.BackupRequestLabel: "acme-uid"},
				Annotations: map[string]string{tenancyv1alpha1.RequestAnnotation: "tenant-acme/" + request, tenancyv1alpha1.RequestUIDAnnotation: "33333333-4444"}},
			Spec: tenancyv1alpha1.TenantRestoreSpec{Backup: "mine"},
			Status: tenancyv1alpha1.TenantRestoreStatus{Phase: tenancyv1alpha1.BackupPending, Conditions: []metav1.Condition{
				{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonBackupMismatch, Message: "database billing is not in place"},
				{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonBackupMismatch, Message: "database billing is not in place"},
			}},
		}
	}
	t.Run("a restore refused before it started is deleted, and its request fails for good", func(t *testing.T) {
		rr := &tenancyv1alpha1.RestoreRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "undo", UID: "33333333-4444", Generation: 1},
			Spec: tenancyv1alpha1.RestoreRequestSpec{Backup: "mine"}, Status: tenancyv1alpha1.RestoreRequestStatus{Restore: "req-33333333-4444"}}
		r, c := requestWorld(t, rr, mine, refusedRestore("req-33333333-4444", "undo"))
		if _, err := r.reconcileRestore(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rr)}); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "req-33333333-4444"}, &tenancyv1alpha1.TenantRestore{}); err == nil {
			t.Error("the refused restore is still there, to run once what refused it changes")
		}
		got := &tenancyv1alpha1.RestoreRequest{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(rr), got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != tenancyv1alpha1.BackupFailed {
			t.Errorf("phase = %s, want Failed", got.Status.Phase)
		}
		checkConditions(t, regen(got.Status.Conditions), want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonBackupMismatch, says: "cannot be restored", kstatus: status.FailedStatus})
	})
	t.Run("a restore whose request is deleted before it started is deleted; one that runs is left to end", func(t *testing.T) {
		waiting := refusedRestore("req-waiting", "gone")
		waiting.Status.Conditions = nil
		running := refusedRestore("req-running", "gone")
		running.Status.Conditions, running.Status.Phase, running.Status.Job = nil, tenancyv1alpha1.BackupRunning, "landlord-restore-1"
		other := refusedRestore("req-other", "kept")
		other.Status.Conditions = nil
		r, c := requestWorld(t, mine, waiting, running, other)
		if _, err := r.reconcileRestore(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "tenant-acme", Name: "gone"}}); err != nil {
			t.Fatal(err)
		}
		for name, kept := range map[string]bool{"req-waiting": false, "req-running": true, "req-other": true} {
			err := c.Get(ctx, client.ObjectKey{Name: name}, &tenancyv1alpha1.TenantRestore{})
			if (err == nil) != kept {
				t.Errorf("restore %s: kept = %t, want %t", name, err == nil, kept)
			}
		}
	})
}

func TestRetentionKeepsABackupARestoreStillReads(t *testing.T) {
	ctx := context.Background()
	br, newest := followed(tenancyv1alpha1.BackupSucceeded)
	read := &tenancyv1alpha1.TenantRestore{ObjectMeta: metav1.ObjectMeta{Name: "undo"}, Spec: tenancyv1alpha1.TenantRestoreSpec{Backup: "oldest"},
		Status: tenancyv1alpha1.TenantRestoreStatus{Phase: tenancyv1alpha1.BackupPending}}
	r, c := requestWorld(t, br, newest, read,
		requested("older", requestNow.Add(-48*time.Hour), tenancyv1alpha1.BackupSucceeded),
		requested("oldest", requestNow.Add(-72*time.Hour), tenancyv1alpha1.BackupSucceeded))
	reconcileBackupRequest(t, r, c, br)
	if err := c.Get(ctx, client.ObjectKey{Name: "oldest"}, &tenancyv1alpha1.TenantBackup{}); err != nil {
		t.Errorf("retention deleted the backup a restore waits to read: %v", err)
	}
}

func TestARequestInTheMomentBeforeItsTenantRecordsItsNamespaceIsAnsweredLater(t *testing.T) {
	br := backupRequest("tenant-new", "early", "55555555-6666")
	fresh := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "new-uid"}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-new", Labels: map[string]string{tenancyv1alpha1.TenantLabel: "new"}}}
	r, c := requestWorld(t, br, fresh, ns)
	if _, err := r.reconcileBackup(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(br)}); err == nil {
		t.Fatal("answered at once: want an error tried again")
	}
	got := &tenancyv1alpha1.BackupRequest{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(br), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase == tenancyv1alpha1.BackupFailed {
		t.Errorf("refused for good: %+v", got.Status.Conditions)
	}
}

func TestALimitOfZeroTakesNoRequests(t *testing.T) {
	br := backupRequest("tenant-acme", "now", "11111111-2222")
	r, c := requestWorld(t, br)
	r.Config.Backups.SelfService.BackupsPerDay = ptr.To[int32](0)
	got := reconcileBackupRequest(t, r, c, br)
	if got.Status.Backup != "" {
		t.Fatalf("made %s with a limit of 0", got.Status.Backup)
	}
	checkConditions(t, regen(got.Status.Conditions), want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonRequestLimited, says: "takes no backup requests", kstatus: status.FailedStatus})
}

func TestABackupRefusedBeforeItStartedIsEndedAndItsRequestFails(t *testing.T) {
	ctx := context.Background()
	br, refused := followed(tenancyv1alpha1.BackupPending)
	refused.Status.TenantUID = ""
	refused.Status.Conditions = []metav1.Condition{
		{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonBackupRefused, Message: "tenant acme has no database billing"},
		{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonBackupRefused, Message: "tenant acme has no database billing"},
	}
	r, c := requestWorld(t, br, refused)
	got := reconcileBackupRequest(t, r, c, br)
	if err := c.Get(ctx, client.ObjectKey{Name: refused.Name}, &tenancyv1alpha1.TenantBackup{}); err == nil {
		t.Error("the refused backup is still there, waiting for good")
	}
	if got.Status.Phase != tenancyv1alpha1.BackupFailed {
		t.Errorf("phase = %s, want Failed", got.Status.Phase)
	}
	checkConditions(t, regen(got.Status.Conditions), want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonBackupRefused, says: "does not have the databases the request names", kstatus: status.FailedStatus})
}
