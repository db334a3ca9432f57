package tenantbackup

import (
	"context"
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

var requestNow = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// requestWorld is a tenant acme in namespace tenant-acme, with what each case adds.
func requestWorld(t *testing.T, objs ...client.Object) (*RequestReconciler, client.Client) {
	t.Helper()
	cfg := config.Default()
	cfg.Backups.SelfService = config.SelfService{Enabled: true, BackupsPerDay: 2, Keep: 2, RestoresPerDay: 1}
	acme := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "acme-uid"},
		Status: tenancyv1alpha1.TenantStatus{Namespace: "tenant-acme"}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-acme", Labels: map[string]string{tenancyv1alpha1.TenantLabel: "acme"}}}
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
		WithObjects(append([]client.Object{acme, ns}, objs...)...).
		WithStatusSubresource(&tenancyv1alpha1.BackupRequest{}, &tenancyv1alpha1.RestoreRequest{}, &tenancyv1alpha1.TenantBackup{}).Build()
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
	br := backupRequest("tenant-acme", "now", "11111111-2222")
	br.Status.Backup = "acme-req-11111111"
	newest := requested("acme-req-11111111", requestNow.Add(-time.Minute), tenancyv1alpha1.BackupSucceeded)
	newest.Annotations[tenancyv1alpha1.RequestUIDAnnotation] = "11111111-2222"
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
			w:    want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobRunning, says: "the backup runs", kstatus: status.InProgressStatus}},
		{name: "a failed backup says who sees why, not why", phase: tenancyv1alpha1.BackupFailed,
			cond: metav1.Condition{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonJobFailed, Message: jobWords},
			w:    want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonJobFailed, says: "administrators see why in acme-req-1", kstatus: status.FailedStatus}},
		{name: "a backup refused for the tenant's own databases says which", phase: tenancyv1alpha1.BackupPending,
			cond: metav1.Condition{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonBackupRefused, Message: "tenant acme has no database billing"},
			w:    want{ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonBackupRefused, says: "no database billing", kstatus: status.FailedStatus}},
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
