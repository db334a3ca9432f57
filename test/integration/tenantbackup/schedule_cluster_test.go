package tenantbackup_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/controller/tenantbackup"
)

// stepTo moves the suite's clock to the next 03:00 UTC after it, and 30 s more: the schedule's
// next run falls due, and the minute's tick wakes the schedules.
func stepTo(t *testing.T, hour int) time.Time {
	t.Helper()
	now := suiteClock.Now().UTC()
	next := time.Date(now.Year(), now.Month(), now.Day(), hour, 0, 0, 0, time.UTC)
	if !next.After(now) {
		next = next.AddDate(0, 0, 1)
	}
	suiteClock.Step(next.Add(30 * time.Second).Sub(now))
	return next
}

// scheduled lists the TenantBackups the schedule made, by name.
func scheduled(g Gomega, schedule string) map[string]*tenancyv1alpha1.TenantBackup {
	list := &tenancyv1alpha1.TenantBackupList{}
	g.Expect(k8s.List(context.Background(), list, client.MatchingLabels{tenancyv1alpha1.BackupScheduleLabel: schedule})).To(Succeed())
	out := map[string]*tenancyv1alpha1.TenantBackup{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

func TestABackupScheduleBacksUpItsTenantsAtItsTimesAndKeepsTheNewest(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("bks-acme", withDatabases, func(t *tenancyv1alpha1.Tenant) { t.Labels = map[string]string{"backup": "nightly"} }))
	createTenant(t, newTenant("bks-other", withDatabases))
	s := &tenancyv1alpha1.TenantBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "bks-nightly"},
		Spec: tenancyv1alpha1.TenantBackupScheduleSpec{
			Schedule: "0 3 * * *", Keep: 2,
			Tenants: metav1.LabelSelector{MatchLabels: map[string]string{"backup": "nightly"}},
		},
	}
	NewWithT(t).Expect(k8s.Create(ctx, s)).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, s)
		for name := range scheduled(NewWithT(t), s.Name) {
			deleteBackup(t, name)
		}
	})

	// run steps the clock to the next 03:00 and returns the backup that run makes of bks-acme.
	run := func(t *testing.T) *tenancyv1alpha1.TenantBackup {
		t.Helper()
		at := stepTo(t, 3)
		name := tenantbackup.ScheduledBackupName("bks-acme", at)
		return waitBackup(t, name, tenancyv1alpha1.BackupRunning)
	}

	t.Run("nothing is backed up before the schedule's time, and the schedule says when it runs", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Status.NextScheduleTime).NotTo(BeNil())
			g.Expect(s.Status.NextScheduleTime.UTC().Hour()).To(Equal(3))
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(scheduled(g, s.Name)).To(BeEmpty())
	})

	var first *tenancyv1alpha1.TenantBackup
	t.Run("at its time it backs up the tenants it selects, and no other", func(t *testing.T) {
		g := NewWithT(t)
		first = run(t)
		g.Expect(first.Labels).To(HaveKeyWithValue(tenancyv1alpha1.BackupTenantLabel, "bks-acme"))
		// The run is over once the schedule records it: one tenant, one backup.
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Status.LastScheduleTime).NotTo(BeNil())
			g.Expect(tenantbackup.ScheduledBackupName("bks-acme", s.Status.LastScheduleTime.Time)).To(Equal(first.Name))
			g.Expect(s.Status.Tenants).To(BeEquivalentTo(1))
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(scheduled(g, s.Name)).To(HaveLen(1))
		runJob(t, first.Status.Job)
		first = waitBackup(t, first.Name, tenancyv1alpha1.BackupSucceeded)
	})

	t.Run("it keeps the newest two that succeeded, and deletes the oldest once a newer one has", func(t *testing.T) {
		g := NewWithT(t)
		second := run(t)
		runJob(t, second.Status.Job)
		waitBackup(t, second.Name, tenancyv1alpha1.BackupSucceeded)
		third := run(t)
		// While the third runs, the first is still kept: only a success replaces it.
		g.Expect(scheduled(g, s.Name)).To(HaveKey(first.Name))
		runJob(t, third.Status.Job)
		waitBackup(t, third.Name, tenancyv1alpha1.BackupSucceeded)
		g.Eventually(func(g Gomega) {
			g.Expect(scheduled(g, s.Name)).To(HaveLen(2))
			g.Expect(scheduled(g, s.Name)).To(And(HaveKey(second.Name), HaveKey(third.Name)))
		}).WithTimeout(timeout).Should(Succeed())
		// Deleted from the store too.
		g.Eventually(func() error {
			_, err := backupStore.Manifest(ctx, first.Status.Location)
			return err
		}).WithTimeout(timeout).Should(MatchError(backup.ErrNoManifest))
	})

	t.Run("a failed backup is kept until a newer one succeeds", func(t *testing.T) {
		g := NewWithT(t)
		failed := run(t)
		// Played: the real Job fails on no demand.
		endPod(t, failed.Status.Job, 1)
		waitBackup(t, failed.Name, tenancyv1alpha1.BackupFailed)
		g.Consistently(func(g Gomega) {
			g.Expect(scheduled(g, s.Name)).To(HaveLen(3))
		}).WithTimeout(2 * time.Second).Should(Succeed())
		next := run(t)
		runJob(t, next.Status.Job)
		waitBackup(t, next.Name, tenancyv1alpha1.BackupSucceeded)
		g.Eventually(func(g Gomega) {
			kept := scheduled(g, s.Name)
			g.Expect(kept).To(HaveLen(2))
			g.Expect(kept).To(HaveKey(next.Name))
			g.Expect(kept).NotTo(HaveKey(failed.Name))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("deleting the schedule keeps the backups it made", func(t *testing.T) {
		g := NewWithT(t)
		before := scheduled(g, s.Name)
		g.Expect(k8s.Delete(ctx, s)).To(Succeed())
		g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).WithTimeout(timeout).Should(BeTrue())
		g.Consistently(func(g Gomega) {
			g.Expect(scheduled(g, s.Name)).To(HaveLen(len(before)))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
}
