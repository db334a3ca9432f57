package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// runsWindow reads the version of the component window that a tenant runs, as its ConfigMap
// and its status say it, and the rollout its status names.
func runsWindow(g Gomega, name string) []string {
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: opConfig.NamespaceName(name), Name: "window"}, cm)).To(Succeed())
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	i := slices.IndexFunc(tenant.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool { return c.Name == "window" })
	g.Expect(i).NotTo(Equal(-1), "tenant %s reports no component window", name)
	return []string{cm.Data["version"], tenant.Status.Components[i].Version, tenant.Status.Components[i].Rollout}
}

// A tenant whose maintenance window is tomorrow waits while the rest of its wave moves: it keeps
// its version, Ready, and the rollout names it with its next window and waits for it. A rollout
// that ignores maintenance windows (an urgent fix) moves it at once.
func TestATenantWaitsForItsMaintenanceWindowButNotForAnUrgentFix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "2.0.0", "3.0.0"} {
		publish(t, "window", v, `apiVersion: v1
kind: ConfigMap
metadata:
  name: window
data:
  version: "`+v+`"
`, "")
	}
	// A daily window of an hour that opens in 12 hours (to the minute): closed for the test.
	opens := time.Now().UTC().Add(12 * time.Hour)
	nextWindow := time.Date(opens.Year(), opens.Month(), opens.Day(), opens.Hour(), opens.Minute(), 0, 0, time.UTC)
	following := func(name string, windows ...tenancyv1alpha1.MaintenanceWindow) *tenancyv1alpha1.Tenant {
		return newTenant(name, pin("window", "1.0.0", ""), func(tn *tenancyv1alpha1.Tenant) {
			tn.Labels = map[string]string{"rollout": "window"}
			tn.Spec.Components[0].FollowRollouts = true
			tn.Spec.MaintenanceWindows = windows
		})
	}
	t.Cleanup(func() { deleteTenants(t, "window-any", "window-tomorrow") })
	createTenant(t, following("window-any"))
	createTenant(t, following("window-tomorrow", tenancyv1alpha1.MaintenanceWindow{
		Start: nextWindow.Format("15:04"), Duration: metav1.Duration{Duration: time.Hour},
	}))

	planned := newRollout("window-2.0.0", "2.0.0", 10, map[string]string{"rollout": "window"})
	planned.Spec.Component = "window"
	NewWithT(t).Expect(k8s.Create(ctx, planned)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, planned) })

	t.Run("the tenant without windows moves, the other waits, Ready, named with its next window", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			g.Expect(runsWindow(g, "window-any")).To(Equal([]string{"2.0.0", "2.0.0", "window-2.0.0"}))
		}).WithTimeout(timeout).Should(Succeed())
		ro := rolloutWhere(t, planned.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(ro.Status.Waves).To(HaveLen(1))
			g.Expect(ro.Status.Waves[0].Done).To(BeEquivalentTo(1))
			g.Expect(ro.Status.Waves[0].Waiting).To(HaveLen(1))
		})
		w := ro.Status.Waves[0]
		g.Expect(w.Waiting[0].Tenant).To(Equal("window-tomorrow"))
		g.Expect(w.Waiting[0].NextWindow.Time).To(BeTemporally("==", nextWindow))
		g.Expect(w.Pending).To(BeEquivalentTo(1))
		g.Expect(w.Failed).To(BeEmpty())
		g.Expect(w.CompletedAt).To(BeNil(), "the wave completed while a tenant waits")
		g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.InProgressStatus), "%s", readyReason(ro))

		waitReady(t, "window-tomorrow")
		g.Expect(runsWindow(g, "window-tomorrow")).To(Equal([]string{"1.0.0", "1.0.0", ""}))
		g.Consistently(func(g Gomega) {
			g.Expect(runsWindow(g, "window-tomorrow")).To(Equal([]string{"1.0.0", "1.0.0", ""}))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	t.Run("an urgent rollout moves it now, and the waiting rollout counts it as taken", func(t *testing.T) {
		g := NewWithT(t)
		urgent := newRollout("window-3.0.0", "3.0.0", 10, map[string]string{"rollout": "window"})
		urgent.Spec.Component = "window"
		urgent.Spec.Strategy.IgnoreMaintenanceWindows = true
		g.Expect(k8s.Create(ctx, urgent)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, urgent) })
		rolloutWhere(t, urgent.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
			g.Expect(ro.Status.Done).To(BeEquivalentTo(2))
		})
		for _, name := range []string{"window-any", "window-tomorrow"} {
			g.Expect(runsWindow(g, name)).To(Equal([]string{"3.0.0", "3.0.0", "window-3.0.0"}), name)
		}
		ro := rolloutWhere(t, planned.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
		})
		g.Expect(ro.Status.Waves[0].Waiting).To(BeEmpty())
	})
}
