package tenantbackup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/tenantbackup"
	"github.com/landlord-dev/landlord/internal/jobs"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/test/testenv"
)

// setJobLimit sets a DatabaseServer's spec.maxConcurrentJobs, and puts it back when the test ends.
func setJobLimit(t *testing.T, server string, limit int32) {
	t.Helper()
	ctx := context.Background()
	set := func(limit *int32) {
		NewWithT(t).Eventually(func() error {
			s := &tenancyv1alpha1.DatabaseServer{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: server}, s); err != nil {
				return err
			}
			s.Spec.MaxConcurrentJobs = limit
			return k8s.Update(ctx, s)
		}).WithTimeout(timeout).Should(Succeed())
	}
	was := &tenancyv1alpha1.DatabaseServer{}
	NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKey{Name: server}, was)).To(Succeed())
	set(&limit)
	t.Cleanup(func() { set(was.Spec.MaxConcurrentJobs) })
}

func TestAScheduleSpreadsAFleetOverItsWindowAndNoServerRunsMoreBackupsThanItsLimit(t *testing.T) {
	ctx := context.Background()
	const (
		fleet    = 50
		limit    = 2
		schedule = "bks-fleet"
	)
	window := 10 * time.Minute
	// The earlier tests of the suite leave backup Jobs held, running, on the same servers: they
	// hold places, and never end. The limit is this test's places on top of them.
	held := heldJobsOn(NewWithT(t))
	setJobLimit(t, pgServer, limit+int32(held[pgServer]))
	setJobLimit(t, myServer, limit+int32(held[myServer]))

	// Half the fleet has a PostgreSQL database, half a MariaDB one: each server has 25 dumps to
	// run, two at a time.
	names := make([]string, fleet)
	for i := range names {
		names[i] = fmt.Sprintf("bks-fleet-%02d", i)
		tenant := newTenant(names[i], func(t *tenancyv1alpha1.Tenant) {
			t.Labels = map[string]string{"backup": "fleet"}
			if i%2 == 0 {
				t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
			} else {
				t.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: "legacy"}}
			}
		})
		NewWithT(t).Expect(k8s.Create(ctx, tenant)).To(Succeed())
	}
	t.Cleanup(func() { testenv.DeleteTenants(t, k8s, 4*timeout, names...) })
	for _, name := range names {
		testenv.WaitTenantCurrent(t, k8s, name, 3*timeout)
	}

	// Suspended until the clock is at its time: the suite's clock is days ahead of the API
	// server's, and a schedule created then would count a run of an earlier day as due at once.
	s := &tenancyv1alpha1.TenantBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: schedule},
		Spec: tenancyv1alpha1.TenantBackupScheduleSpec{
			Schedule: "0 3 * * *", Keep: 1, Window: &metav1.Duration{Duration: window}, Suspend: true,
			Tenants: metav1.LabelSelector{MatchLabels: map[string]string{"backup": "fleet"}},
		},
	}
	NewWithT(t).Expect(k8s.Create(ctx, s)).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, s)
		for name := range scheduled(NewWithT(t), schedule) {
			deleteBackup(t, name)
		}
	})

	var run time.Time
	t.Run("at the window's start only the tenants whose place in it has come are backed up", func(t *testing.T) {
		g := NewWithT(t)
		// Each tenant's place in the window is the schedule's to compute; the test asks it too.
		run = stepTo(t, 3)
		g.Eventually(func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				return err
			}
			s.Spec.Suspend = false
			return k8s.Update(ctx, s)
		}).WithTimeout(timeout).Should(Succeed())
		due := map[string]bool{}
		for _, name := range names {
			if tenantbackup.Offset(schedule, name, run, window, 0) <= 30*time.Second {
				due[tenantbackup.ScheduledBackupName(name, run)] = true
			}
		}
		g.Eventually(func(g Gomega) {
			made := scheduled(g, schedule)
			g.Expect(made).To(HaveLen(len(due)))
			for name := range made {
				g.Expect(due).To(HaveKey(name))
			}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Status.LastRun).NotTo(BeNil())
			g.Expect(s.Status.LastRun.Selected).To(BeEquivalentTo(fleet))
			g.Expect(s.Status.LastRun.NotYetDue).To(BeEquivalentTo(fleet - len(due)))
		}).WithTimeout(timeout).Should(Succeed())
		// 50 tenants over 10 minutes: about 2.5 in the first 30 seconds, and never all.
		g.Expect(len(due)).To(BeNumerically("<", fleet/2), "the window spreads nothing")
	})

	t.Run("past the window's end every backup is made, each server runs its limit and the rest wait, and the run says it missed its window", func(t *testing.T) {
		g := NewWithT(t)
		suiteClock.Step(window)
		g.Eventually(func(g Gomega) {
			made := scheduled(g, schedule)
			g.Expect(made).To(HaveLen(fleet))
			running := runningBackupJobs(g, schedule)
			g.Expect(running[pgServer]).To(HaveLen(limit), "every Job running, by server: %v (held before: %v)", heldJobsOn(g), held)
			g.Expect(running[myServer]).To(HaveLen(limit), "every Job running, by server: %v (held before: %v)", heldJobsOn(g), held)
			// Every backup not running says what it waits for.
			waiting := 0
			for _, b := range made {
				if c := apimeta.FindStatusCondition(b.Status.Conditions, tenancyv1alpha1.ReconcilingCondition); b.Status.Phase == tenancyv1alpha1.BackupPending &&
					c != nil && c.Reason == tenancyv1alpha1.ReasonWaitingForServer {
					waiting++
				}
			}
			g.Expect(waiting).To(Equal(fleet - 2*limit))
			// A minute's grace after the window's end is not over yet.
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Status.LastRun.MissedWindow).To(BeFalse())
		}).WithTimeout(2 * timeout).Should(Succeed())
		suiteClock.Step(time.Minute)
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Status.LastRun.MissedWindow).To(BeTrue())
			g.Expect(s.Status.LastRun.Late).To(BeEquivalentTo(fleet - 2*limit))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("as dumps end the waiting ones start, and no server ever runs more than its limit", func(t *testing.T) {
		g := NewWithT(t)
		most := map[string]int{}
		// Each look releases what runs, and fails at once, not on a retry, should a server run
		// more than its limit or a backup fail.
		g.Eventually(func(g Gomega) {
			// Every pod is held until released here: a Job the operator created over a server's
			// limit would still be running at the next look, so none can slip between two.
			running := runningBackupJobs(g, schedule)
			for server, jobs := range running {
				if len(jobs) > limit {
					StopTrying(fmt.Sprintf("server %s runs %v, over its limit of %d", server, jobs, limit)).Now()
				}
				most[server] = max(most[server], len(jobs))
				for _, job := range jobs {
					releaseHeld(g, job)
				}
			}
			succeeded := 0
			for _, b := range scheduled(g, schedule) {
				if b.Status.Phase == tenancyv1alpha1.BackupFailed {
					StopTrying(fmt.Sprintf("backup %s failed: %+v", b.Name, b.Status.Conditions)).Now()
				}
				if b.Status.Phase == tenancyv1alpha1.BackupSucceeded {
					succeeded++
				}
			}
			g.Expect(succeeded).To(Equal(fleet))
		}).WithTimeout(6 * timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		g.Expect(most).To(Equal(map[string]int{pgServer: limit, myServer: limit}))
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			g.Expect(s.Status.LastRun.Succeeded).To(BeEquivalentTo(fleet))
			// Missed once, missed for good: the late count is the window's end's.
			g.Expect(s.Status.LastRun.MissedWindow).To(BeTrue())
			g.Expect(s.Status.LastRun.Late).To(BeEquivalentTo(fleet - 2*limit))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("its metrics say how the run went and that no tenant is left without a backup, as its alerts read them", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(gauge(g, "landlord_backup_schedule_backups", map[string]string{"schedule": schedule, "state": "succeeded"})).To(Equal([]float64{fleet}))
			g.Expect(gauge(g, "landlord_backup_schedule_missed_window", map[string]string{"schedule": schedule})).To(Equal([]float64{1}))
			// Tenants made minutes ago, backed up a moment ago: none overdue.
			g.Expect(gauge(g, "landlord_backup_schedule_overdue_tenants", map[string]string{"schedule": schedule})).To(Equal([]float64{0}))
			last := gauge(g, "landlord_tenant_last_backup_timestamp_seconds", map[string]string{"tenant": names[0]})
			g.Expect(last).To(HaveLen(1))
			g.Expect(last[0]).To(BeNumerically(">", float64(time.Now().Add(-5*time.Minute).Unix())))
		}).WithTimeout(timeout).Should(Succeed())
	})
}

// gauge reads the values of a metric of the operator's registry whose labels include want.
func gauge(g Gomega, name string, want map[string]string) []float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var out []float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			out = append(out, m.GetGauge().GetValue())
		}
	}
	return out
}

// heldJobsOn counts, by server, the Jobs that reach a database server and have not ended.
func heldJobsOn(g Gomega) map[string]int {
	list := &batchv1.JobList{}
	g.Expect(k8s.List(context.Background(), list)).To(Succeed())
	out := map[string]int{}
	for i := range list.Items {
		j := &list.Items[i]
		if ended, _, _ := jobs.Ended(j); ended || j.Annotations[indexes.DatabaseServersAnnotation] == "" {
			continue
		}
		for _, server := range strings.Split(j.Annotations[indexes.DatabaseServersAnnotation], ",") {
			out[server]++
		}
	}
	return out
}

// runningBackupJobs are the Jobs of the schedule's backups that have not ended, by the database
// servers they reach.
func runningBackupJobs(g Gomega, schedule string) map[string][]string {
	ctx := context.Background()
	ours := map[types.UID]bool{}
	for _, b := range scheduled(g, schedule) {
		ours[b.UID] = true
	}
	list := &batchv1.JobList{}
	g.Expect(k8s.List(ctx, list, client.InNamespace(opConfig.Backups.Namespace), client.MatchingLabels{tenancyv1alpha1.BackupJobLabel: "backup"})).To(Succeed())
	out := map[string][]string{}
	for i := range list.Items {
		j := &list.Items[i]
		owner := metav1.GetControllerOf(j)
		if owner == nil || !ours[owner.UID] {
			continue
		}
		if ended, _, _ := jobs.Ended(j); ended {
			continue
		}
		for _, server := range strings.Split(j.Annotations[indexes.DatabaseServersAnnotation], ",") {
			out[server] = append(out[server], j.Name)
		}
	}
	return out
}

// releaseHeld releases the Job's pod if it is held; a Job whose pod is not made yet is left to
// the next look.
func releaseHeld(g Gomega, job string) {
	pods := &corev1.PodList{}
	g.Expect(k8s.List(context.Background(), pods, client.InNamespace(opConfig.Backups.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job})).To(Succeed())
	for i := range pods.Items {
		pod := &pods.Items[i]
		if _, held := pod.Annotations[localcluster.HoldAnnotation]; !held {
			continue
		}
		patch := []byte(`{"metadata":{"annotations":{"` + localcluster.HoldAnnotation + `":null}}}`)
		g.Expect(client.IgnoreNotFound(k8s.Patch(context.Background(), pod, client.RawPatch(types.MergePatchType, patch)))).To(Succeed())
	}
}
