package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
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
