package integration

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// A rollout's failure budget is for failures of the version. A tenant that never took the
// version up for a reason of its own (here a domain another tenant holds, which keeps its
// namespace, and so its components, from converging) used to count against maxFailures past
// the progress deadline and halt the rollout for every other tenant: whoever could stall its own
// tenant decided the fleet's rollout. It is now listed, with its reason, as failed for a reason
// of its own, and the rollout goes on.
func TestARolloutIsNotHaltedByATenantThatFailsForAReasonOfItsOwn(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "2.0.0"} {
		publish(t, "wave", v, waveManifests(v), "")
	}
	const domain = "shop.own-cause.example.org"
	createTenant(t, newTenant("own-holder", func(t *tenancyv1alpha1.Tenant) { t.Spec.Domains = []tenancyv1alpha1.Domain{domain} }))
	for _, name := range []string{"own-fine", "own-blocked"} {
		createTenant(t, newTenant(name, pin("wave", "1.0.0", "{}"), func(tn *tenancyv1alpha1.Tenant) {
			tn.Labels = map[string]string{"rollout": "own-cause"}
			tn.Spec.Components[0].FollowRollouts = true
		}))
	}
	NewWithT(t).Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "own-blocked"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"domains":["`+domain+`"]}}`)))).To(Succeed())
	waitStalled(t, "own-blocked", tenancyv1alpha1.ReasonDomainConflict)

	ro := newRollout("wave-own-cause", "2.0.0", 2, map[string]string{"rollout": "own-cause"})
	ro.Spec.Strategy.ProgressDeadline = &metav1.Duration{Duration: 5 * time.Second}
	NewWithT(t).Expect(k8s.Create(ctx, ro)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ro) })

	got := rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
		g.Expect(ro.Status.Waves).To(HaveLen(1))
		g.Expect(ro.Status.Waves[0].Failed).To(ConsistOf(And(HaveField("Tenant", "own-blocked"), HaveField("OwnCause", true))), "%s", readyReason(ro))
		g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
	})
	g := NewWithT(t)
	g.Expect(got.Status.Failed).To(BeZero(), "a tenant that failed for a reason of its own is no failure of the version")
	g.Expect(got.Status.Blocked).To(BeEquivalentTo(1))
	g.Expect(got.Status.Done).To(BeEquivalentTo(1))
	g.Expect(readyReason(got)).To(ContainSubstring("own-blocked"))
	cm, st, _ := runs(g, "own-fine")
	g.Expect([]string{cm, st}).To(Equal([]string{"2.0.0", "2.0.0"}))
}

// A tenant that fills its own quota before its wave makes the new version's ReplicaSet fail to
// create pods ("exceeded quota"). That used to count against the rollout's failure budget and,
// with the default maxFailures of 0, halt the fleet's rollout: a tenant decided the fleet's wave
// by running pods of its own. The failure is now the tenant's own, reported on the tenant
// (Stalled, QuotaExceeded), and the rollout goes on for the others.
func TestATenantThatFillsItsQuotaHaltsNoRollout(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "2.0.0"} {
		publish(t, "quota", v, webManifests, `{"replicas": 1}`)
	}
	for _, name := range []string{"quota-fine", "quota-full"} {
		createTenant(t, newTenant(name, pin("quota", "1.0.0", ""), func(tn *tenancyv1alpha1.Tenant) {
			tn.Labels = map[string]string{"rollout": "quota"}
			tn.Spec.Components[0].FollowRollouts = true
			// Room for the component's pod and one more: a rolling update needs the second.
			tn.Spec.Quota = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}
		}))
		rolledOut(t, name, "web")
	}
	// The tenant takes the room the rolling update needs with a pod of its own.
	ns := opConfig.NamespaceName("quota-full")
	NewWithT(t).Expect(k8s.Create(ctx, restrictedPod(ns, "own"))).To(Succeed())

	ro := newRollout("quota-own", "2.0.0", 2, map[string]string{"rollout": "quota"})
	ro.Spec.Component = "quota"
	ro.Spec.Strategy.ProgressDeadline = &metav1.Duration{Duration: 20 * time.Second}
	NewWithT(t).Expect(k8s.Create(ctx, ro)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ro) })

	got := rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
		g.Expect(ro.Status.Waves).To(HaveLen(1), "%s", readyReason(ro))
		g.Expect(ro.Status.Waves[0].Failed).To(ConsistOf(And(HaveField("Tenant", "quota-full"), HaveField("OwnCause", true),
			HaveField("Reason", tenancyv1alpha1.ReasonQuotaExceeded))), "%s", readyReason(ro))
		g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
	})
	g := NewWithT(t)
	g.Expect(got.Status.Failed).To(BeZero(), "a tenant that filled its own quota is no failure of the version")
	g.Expect(got.Status.Done).To(BeEquivalentTo(1))
	msg := waitStalled(t, "quota-full", tenancyv1alpha1.ReasonQuotaExceeded)
	g.Expect(msg).To(ContainSubstring("exceeded quota"), "the tenant is told what holds it")
}

// A quota that only Landlord's own pods fill (no room for a rolling update's extra pod) is no
// trouble of the tenant's: the tenant is not excused, and the version's failure counts against
// the rollout as any other, so that a quota too tight for the version across the fleet halts it
// rather than rolling it out everywhere with every tenant stalled part-way.
func TestAQuotaLandlordsOwnPodsFillIsNoExcuse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "2.0.0"} {
		publish(t, "tight", v, webManifests, `{"replicas": 1}`)
	}
	createTenant(t, newTenant("quota-tight", pin("tight", "1.0.0", ""), func(tn *tenancyv1alpha1.Tenant) {
		tn.Labels = map[string]string{"rollout": "quota-tight"}
		tn.Spec.Components[0].FollowRollouts = true
		tn.Spec.Quota = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	}))
	rolledOut(t, "quota-tight", "web")

	ro := newRollout("quota-tight", "2.0.0", 1, map[string]string{"rollout": "quota-tight"})
	ro.Spec.Component = "tight"
	ro.Spec.Strategy.ProgressDeadline = &metav1.Duration{Duration: 5 * time.Second}
	NewWithT(t).Expect(k8s.Create(ctx, ro)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ro) })

	got := rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
		g.Expect(ro.Status.Waves).To(HaveLen(1), "%s", readyReason(ro))
		g.Expect(ro.Status.Waves[0].Failed).To(ConsistOf(And(HaveField("Tenant", "quota-tight"), HaveField("OwnCause", false))), "%s", readyReason(ro))
	})
	NewWithT(t).Expect(got.Status.Failed).To(BeEquivalentTo(1), "the version's failure counts")
	tn := &tenancyv1alpha1.Tenant{}
	NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKey{Name: "quota-tight"}, tn)).To(Succeed())
	NewWithT(t).Expect(condition(tn, tenancyv1alpha1.ComponentsReadyCondition).Reason).NotTo(Equal(tenancyv1alpha1.ReasonQuotaExceeded))
}
