package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// orderManifests is a component whose ConfigMap says which version rendered it.
func orderManifests(version string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: order
data:
  version: "` + version + `"
`
}

// runsOrder reads the version of the component order that a tenant runs, as its ConfigMap and
// its status say it, and the rollout its status names.
func runsOrder(g Gomega, name string) []string {
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: opConfig.NamespaceName(name), Name: "order"}, cm)).To(Succeed())
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	i := slices.IndexFunc(tenant.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool { return c.Name == "order" })
	g.Expect(i).NotTo(Equal(-1), "tenant %s reports no component order", name)
	return []string{cm.Data["version"], tenant.Status.Components[i].Version, tenant.Status.Components[i].Rollout}
}

// orderRollout is a rollout of the component order to version, choosing every tenant labelled
// rollout=order, in one wave.
func orderRollout(name, version string, mutate func(*tenancyv1alpha1.ComponentRollout)) *tenancyv1alpha1.ComponentRollout {
	ro := newRollout(name, version, 10, map[string]string{"rollout": "order"})
	ro.Spec.Component = "order"
	if mutate != nil {
		mutate(ro)
	}
	return ro
}

func rolloutCurrent(t *testing.T, name string) *tenancyv1alpha1.ComponentRollout {
	t.Helper()
	return rolloutWhere(t, name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
		g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
	})
}

// Which rollout wins is decided by version, not by when the rollouts were created: two created
// in the same second pick the higher version, an old one deleted and applied again moves no
// tenant back, and only a rollout that says it is a rollback moves tenants down. A tenant that
// stops following rollouts keeps the version it runs.
func TestRolloutsAreOrderedByVersion(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "1.9.0", "1.10.0", "2.0.0"} {
		publish(t, "order", v, orderManifests(v), "")
	}
	names := []string{"order-a", "order-b"}
	t.Cleanup(func() { deleteTenants(t, names...) })
	// Each subtest goes on from where the one before left the rollouts: they go when the test ends.
	t.Cleanup(func() {
		for _, name := range []string{"order-1.9.0", "order-1.10.0", "order-1.9.0-rollback"} {
			_ = k8s.Delete(ctx, &tenancyv1alpha1.ComponentRollout{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	for _, name := range names {
		NewWithT(t).Expect(k8s.Create(ctx, newTenant(name, pin("order", "1.0.0", ""), func(tn *tenancyv1alpha1.Tenant) {
			tn.Labels = map[string]string{"rollout": "order"}
			tn.Spec.Components[0].FollowRollouts = true
		}))).To(Succeed())
	}
	for _, name := range names {
		waitReady(t, name)
	}

	t.Run("two rollouts created in the same second move the tenants to the higher version", func(t *testing.T) {
		g := NewWithT(t)
		// Created halted, so that nothing moves until both exist; created again until the API
		// server gave them the same creation second, which is what this case is about.
		var low, high *tenancyv1alpha1.ComponentRollout
		g.Eventually(func(g Gomega) {
			for _, ro := range []*tenancyv1alpha1.ComponentRollout{low, high} {
				if ro != nil {
					deleteRollout(t, ro.Name)
				}
			}
			low, high = nil, nil
			l := orderRollout("order-1.9.0", "1.9.0", func(ro *tenancyv1alpha1.ComponentRollout) { ro.Spec.Halted = true })
			g.Expect(k8s.Create(ctx, l)).To(Succeed())
			low = l
			h := orderRollout("order-1.10.0", "1.10.0", func(ro *tenancyv1alpha1.ComponentRollout) { ro.Spec.Halted = true })
			g.Expect(k8s.Create(ctx, h)).To(Succeed())
			high = h
			g.Expect(low.CreationTimestamp.Equal(&high.CreationTimestamp)).To(BeTrue(), "created in different seconds")
		}).WithTimeout(timeout).Should(Succeed())
		for _, ro := range []*tenancyv1alpha1.ComponentRollout{low, high} {
			g.Expect(k8s.Patch(ctx, ro, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"halted":false}}`)))).To(Succeed())
		}
		rolloutCurrent(t, high.Name)
		rolloutCurrent(t, low.Name)
		resync(t, names...)
		for _, name := range names {
			g.Expect(runsOrder(g, name)).To(Equal([]string{"1.10.0", "1.10.0", high.Name}), "tenant %s", name)
		}
	})

	t.Run("an old rollout deleted and applied again after a newer one moves no tenant back", func(t *testing.T) {
		g := NewWithT(t)
		deleteRollout(t, "order-1.9.0")
		g.Expect(k8s.Create(ctx, orderRollout("order-1.9.0", "1.9.0", nil))).To(Succeed())
		rolloutCurrent(t, "order-1.9.0")
		resync(t, names...)
		for _, name := range names {
			g.Expect(runsOrder(g, name)).To(Equal([]string{"1.10.0", "1.10.0", "order-1.10.0"}), "tenant %s", name)
		}
	})

	t.Run("once the newer rollout is deleted the old one counts the tenants ahead of it and leaves them there", func(t *testing.T) {
		g := NewWithT(t)
		deleteRollout(t, "order-1.10.0")
		got := rolloutWhere(t, "order-1.9.0", func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(ro.Status.Ahead).To(BeEquivalentTo(2), "%s", readyReason(ro))
			g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
		})
		g.Expect(readyReason(got)).To(ContainSubstring("2 ahead"))
		resync(t, names...)
		for _, name := range names {
			g.Expect(runsOrder(g, name)).To(Equal([]string{"1.10.0", "1.10.0", "order-1.10.0"}), "tenant %s", name)
		}
	})

	t.Run("a tenant that stops following rollouts keeps the version it runs, not its spec's older one", func(t *testing.T) {
		g := NewWithT(t)
		patch := []byte(`{"spec":{"components":[{"name":"order","version":"1.0.0"}]}}`)
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "order-a"}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		waitReady(t, "order-a")
		g.Expect(runsOrder(g, "order-a")).To(Equal([]string{"1.10.0", "1.10.0", "order-1.10.0"}))
	})

	t.Run("its spec naming the version it runs or a higher one pins it there", func(t *testing.T) {
		g := NewWithT(t)
		patch := []byte(`{"spec":{"components":[{"name":"order","version":"2.0.0"}]}}`)
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "order-a"}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		waitReady(t, "order-a")
		g.Expect(runsOrder(g, "order-a")).To(Equal([]string{"2.0.0", "2.0.0", ""}))
	})

	t.Run("a rollout with rollback: true moves the tenants down to its version", func(t *testing.T) {
		g := NewWithT(t)
		// A rollback takes the tenants no rollout of a higher version chooses.
		deleteRollout(t, "order-1.9.0")
		g.Expect(k8s.Create(ctx, orderRollout("order-1.9.0-rollback", "1.9.0", func(ro *tenancyv1alpha1.ComponentRollout) { ro.Spec.Rollback = true }))).To(Succeed())
		got := rolloutCurrent(t, "order-1.9.0-rollback")
		g.Expect(got.Status.Done).To(BeEquivalentTo(1), "%s", readyReason(got))
		g.Expect(got.Status.Ahead).To(BeZero())
		g.Expect(runsOrder(g, "order-b")).To(Equal([]string{"1.9.0", "1.9.0", "order-1.9.0-rollback"}))
		// order-a no longer follows rollouts: the rollback leaves it alone.
		g.Expect(runsOrder(g, "order-a")).To(Equal([]string{"2.0.0", "2.0.0", ""}))
	})
}
