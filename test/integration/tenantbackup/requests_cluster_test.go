package tenantbackup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenantbackup"
)

// withAdmin makes the user the tenant's admin.
func withAdmin(user string) func(*tenancyv1alpha1.Tenant) {
	return func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: user}}
	}
}

// waitRequest waits until the request (a BackupRequest or RestoreRequest in the tenant's
// namespace) has a Ready condition for which check holds, and returns it as read then.
func waitRequest[T client.Object](t *testing.T, obj T, conds func(T) []metav1.Condition, check func(g Gomega, ready *metav1.Condition, obj T)) T {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		ready := meta.FindStatusCondition(conds(obj), tenancyv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		check(g, ready, obj)
	}).WithTimeout(timeout).Should(Succeed())
	return obj
}

func backupRequestConds(r *tenancyv1alpha1.BackupRequest) []metav1.Condition {
	return r.Status.Conditions
}
func restoreRequestConds(r *tenancyv1alpha1.RestoreRequest) []metav1.Condition {
	return r.Status.Conditions
}

// stalledWith checks a request is refused for the reason, with msg in its message.
func stalledWith[T client.Object](reason, msg string) func(Gomega, *metav1.Condition, T) {
	return func(g Gomega, ready *metav1.Condition, _ T) {
		g.Expect(ready.Reason).To(Equal(reason))
		g.Expect(ready.Message).To(ContainSubstring(msg))
	}
}

// cleanUpRequested deletes, when the test ends, the backups and restores made for the tenant's
// requests, with the restores' safety backups.
func cleanUpRequested(t *testing.T, tenant string) {
	t.Cleanup(func() {
		ctx := context.Background()
		tn := &tenancyv1alpha1.Tenant{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: tenant}, tn); err != nil {
			return
		}
		restores := &tenancyv1alpha1.TenantRestoreList{}
		_ = k8s.List(ctx, restores, client.MatchingLabels{tenancyv1alpha1.BackupRequestLabel: string(tn.UID)})
		for i := range restores.Items {
			_ = k8s.Delete(ctx, &restores.Items[i])
			deleteBackup(t, tenantbackup.SafetyBackupName(restores.Items[i].Name))
		}
		backups := &tenancyv1alpha1.TenantBackupList{}
		_ = k8s.List(ctx, backups, client.MatchingLabels{tenancyv1alpha1.BackupRequestLabel: string(tn.UID)})
		for _, b := range backups.Items {
			deleteBackup(t, b.Name)
		}
	})
}

func TestATenantAdminBacksUpAndRestoresItsOwnTenantAndNoOther(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("rq-acme", withDatabases, withAdmin("acme-admin")))
	createTenant(t, newTenant("rq-globex", withDatabases, withAdmin("globex-admin")))
	cleanUpRequested(t, "rq-acme")
	cleanUpRequested(t, "rq-globex")
	acmeNS, globexNS := opConfig.NamespaceName("rq-acme"), opConfig.NamespaceName("rq-globex")
	acme, globex := env.Impersonate(t, "acme-admin"), env.Impersonate(t, "globex-admin")
	for _, tenant := range []string{"rq-acme", "rq-globex"} {
		execAs(NewWithT(t), tenant, "app",
			"CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(64))",
			"INSERT INTO notes VALUES (1, '"+tenant+" before')")
	}
	var acmeBackup string

	t.Run("a tenant admin's backup request becomes a backup of its tenant, which really runs", func(t *testing.T) {
		g := NewWithT(t)
		br := &tenancyv1alpha1.BackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: acmeNS, Name: "before-upgrade"}}
		// The quota counts requests once its controller has seen the new namespace's quota; until
		// then the API server refuses them, as it does any counted kind.
		g.Eventually(func() error { return acme.Create(ctx, br) }).WithTimeout(timeout).Should(Succeed())
		br = waitRequest(t, br, backupRequestConds, func(g Gomega, _ *metav1.Condition, br *tenancyv1alpha1.BackupRequest) {
			g.Expect(br.Status.Backup).NotTo(BeEmpty())
		})
		acmeBackup = br.Status.Backup
		b := waitBackup(t, acmeBackup, tenancyv1alpha1.BackupRunning)
		g.Expect(b.Spec.Tenant).To(Equal("rq-acme"))
		runJob(t, b.Status.Job)
		waitBackup(t, acmeBackup, tenancyv1alpha1.BackupSucceeded)
		br = waitRequest(t, br, backupRequestConds, func(g Gomega, ready *metav1.Condition, br *tenancyv1alpha1.BackupRequest) {
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
			g.Expect(br.Status.Phase).To(Equal(tenancyv1alpha1.BackupSucceeded))
		})
		g.Expect(br.Status.Size).To(BeNumerically(">", 0))
	})

	execAs(NewWithT(t), "rq-acme", "app", "UPDATE notes SET body = 'broken by the upgrade'")

	t.Run("a tenant admin restores its own backup into its tenant, after a safety backup of what it replaces", func(t *testing.T) {
		g := NewWithT(t)
		rr := &tenancyv1alpha1.RestoreRequest{ObjectMeta: metav1.ObjectMeta{Namespace: acmeNS, Name: "undo-upgrade"},
			Spec: tenancyv1alpha1.RestoreRequestSpec{Backup: acmeBackup}}
		g.Expect(acme.Create(ctx, rr)).To(Succeed())
		rr = waitRequest(t, rr, restoreRequestConds, func(g Gomega, _ *metav1.Condition, rr *tenancyv1alpha1.RestoreRequest) {
			g.Expect(rr.Status.Restore).NotTo(BeEmpty())
		})
		safety := waitBackup(t, tenantbackup.SafetyBackupName(rr.Status.Restore), tenancyv1alpha1.BackupRunning)
		g.Expect(safety.Spec.Tenant).To(Equal("rq-acme"))
		runJob(t, safety.Status.Job)
		rs := waitRestore(t, rr.Status.Restore, tenancyv1alpha1.BackupRunning)
		g.Expect(rs.Status.Tenant).To(Equal("rq-acme"))
		runJob(t, rs.Status.Job)
		rr = waitRequest(t, rr, restoreRequestConds, func(g Gomega, ready *metav1.Condition, rr *tenancyv1alpha1.RestoreRequest) {
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		})
		g.Expect(rr.Status.SafetyBackup).To(Equal(safety.Name))
		g.Expect(rows(g, "rq-acme", "app")).To(Equal([]string{"rq-acme before"}))
	})

	t.Run("another tenant's backup is answered as one that does not exist, and nothing is restored", func(t *testing.T) {
		g := NewWithT(t)
		theirs := &tenancyv1alpha1.RestoreRequest{ObjectMeta: metav1.ObjectMeta{Namespace: globexNS, Name: "take-acme"},
			Spec: tenancyv1alpha1.RestoreRequestSpec{Backup: acmeBackup}}
		none := &tenancyv1alpha1.RestoreRequest{ObjectMeta: metav1.ObjectMeta{Namespace: globexNS, Name: "take-nothing"},
			Spec: tenancyv1alpha1.RestoreRequestSpec{Backup: "no-such-backup"}}
		g.Expect(globex.Create(ctx, theirs)).To(Succeed())
		g.Expect(globex.Create(ctx, none)).To(Succeed())
		theirs = waitRequest(t, theirs, restoreRequestConds, stalledWith[*tenancyv1alpha1.RestoreRequest](tenancyv1alpha1.ReasonBackupNotFound, acmeBackup))
		none = waitRequest(t, none, restoreRequestConds, stalledWith[*tenancyv1alpha1.RestoreRequest](tenancyv1alpha1.ReasonBackupNotFound, "no-such-backup"))
		said := meta.FindStatusCondition(theirs.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message
		saidOfNone := meta.FindStatusCondition(none.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message
		g.Expect(strings.ReplaceAll(said, acmeBackup, "X")).To(Equal(strings.ReplaceAll(saidOfNone, "no-such-backup", "X")))
		g.Expect(theirs.Status.Restore).To(BeEmpty())
		g.Expect(theirs.Status.Phase).To(Equal(tenancyv1alpha1.BackupFailed))
		g.Expect(rows(g, "rq-globex", "app")).To(Equal([]string{"rq-globex before"}))
		g.Expect(rows(g, "rq-acme", "app")).To(Equal([]string{"rq-acme before"}))
	})

	t.Run("a tenant admin can make no request in another tenant's namespace, nor write a request's status", func(t *testing.T) {
		g := NewWithT(t)
		err := globex.Create(ctx, &tenancyv1alpha1.BackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: acmeNS, Name: "globex-was-here"}})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
		err = globex.Create(ctx, &tenancyv1alpha1.RestoreRequest{ObjectMeta: metav1.ObjectMeta{Namespace: acmeNS, Name: "globex-was-here"},
			Spec: tenancyv1alpha1.RestoreRequestSpec{Backup: acmeBackup}})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)

		br := &tenancyv1alpha1.BackupRequest{}
		g.Expect(acme.Get(ctx, client.ObjectKey{Namespace: acmeNS, Name: "before-upgrade"}, br)).To(Succeed())
		orig := br.DeepCopy()
		br.Status.Backup = "rq-globex-anything"
		err = acme.Status().Patch(ctx, br, client.MergeFrom(orig))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	})

	t.Run("requests beyond the platform's daily limits are refused, and make nothing", func(t *testing.T) {
		g := NewWithT(t)
		// Two backups a day: the second is made, the third refused.
		second := &tenancyv1alpha1.BackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: acmeNS, Name: "second"}}
		g.Expect(acme.Create(ctx, second)).To(Succeed())
		waitRequest(t, second, backupRequestConds, func(g Gomega, _ *metav1.Condition, br *tenancyv1alpha1.BackupRequest) {
			g.Expect(br.Status.Backup).NotTo(BeEmpty())
		})
		third := &tenancyv1alpha1.BackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: acmeNS, Name: "third"}}
		g.Expect(acme.Create(ctx, third)).To(Succeed())
		third = waitRequest(t, third, backupRequestConds, stalledWith[*tenancyv1alpha1.BackupRequest](tenancyv1alpha1.ReasonRequestLimited, "daily limit of backup requests per tenant is 2"))
		g.Expect(third.Status.Backup).To(BeEmpty())
		tn := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "rq-acme"}, tn)).To(Succeed())
		made := &tenancyv1alpha1.TenantBackupList{}
		g.Expect(k8s.List(ctx, made, client.MatchingLabels{tenancyv1alpha1.BackupRequestLabel: string(tn.UID)})).To(Succeed())
		var requested []string
		for _, b := range made.Items {
			// (The restore's safety backup is kept among them, and counts against nothing.)
			if b.Labels[tenantbackup.SafetyBackupUIDLabel] == "" {
				requested = append(requested, b.Name)
			}
		}
		g.Expect(requested).To(HaveLen(2), "the refused request made a backup")

		// One restore a day, already made.
		again := &tenancyv1alpha1.RestoreRequest{ObjectMeta: metav1.ObjectMeta{Namespace: acmeNS, Name: "undo-again"},
			Spec: tenancyv1alpha1.RestoreRequestSpec{Backup: acmeBackup}}
		g.Expect(acme.Create(ctx, again)).To(Succeed())
		again = waitRequest(t, again, restoreRequestConds, stalledWith[*tenancyv1alpha1.RestoreRequest](tenancyv1alpha1.ReasonRequestLimited, "daily limit of restore requests per tenant is 1"))
		g.Expect(again.Status.Restore).To(BeEmpty())

		// Deleting the requests resets nothing: the limit counts what they made.
		g.Expect(acme.Delete(ctx, third)).To(Succeed())
		g.Expect(acme.Delete(ctx, second)).To(Succeed())
		fourth := &tenancyv1alpha1.BackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: acmeNS, Name: "fourth"}}
		g.Expect(acme.Create(ctx, fourth)).To(Succeed())
		waitRequest(t, fourth, backupRequestConds, stalledWith[*tenancyv1alpha1.BackupRequest](tenancyv1alpha1.ReasonRequestLimited, "make another request after"))
	})

	t.Run("a tenant namespace holds at most the quota's requests, whatever the daily limits", func(t *testing.T) {
		g := NewWithT(t)
		list := &tenancyv1alpha1.BackupRequestList{}
		g.Expect(acme.List(ctx, list, client.InNamespace(acmeNS))).To(Succeed())
		held, refused := len(list.Items), false
		for i := 0; i < 40 && !refused; i++ {
			err := acme.Create(ctx, &tenancyv1alpha1.BackupRequest{ObjectMeta: metav1.ObjectMeta{Namespace: acmeNS, Name: fmt.Sprintf("flood-%d", i)}})
			if refused = apierrors.IsForbidden(err); refused {
				g.Expect(err.Error()).To(ContainSubstring("exceeded quota"))
				break
			}
			g.Expect(err).NotTo(HaveOccurred())
			held++
		}
		g.Expect(refused).To(BeTrue(), "40 more requests were all taken")
		// The quota controller recounts what the namespace holds in the background, from its own
		// cache: requests deleted a moment ago may still count, and a burst may pass the count by
		// one or two before it is refused.
		g.Expect(held).To(BeNumerically("~", 20, 2), "the namespace holds %d requests", held)
	})
}
