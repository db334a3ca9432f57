package integration

import (
	"context"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// Tenants keep arriving after a rollout finished (signups, a pool's spares), one at a time. Each
// is moved to the rollout's version, and they share the last wave until it holds a batch rather
// than add a wave each: the rollout's status stays bounded however many arrive.
func TestTenantsChosenAfterARolloutFinishedShareItsLastWave(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "2.0.0"} {
		publish(t, "wave", v, waveManifests(v), "")
	}
	following := func(name string) *tenancyv1alpha1.Tenant {
		return newTenant(name, pin("wave", "1.0.0", "{}"), func(tn *tenancyv1alpha1.Tenant) {
			tn.Labels = map[string]string{"rollout": "late"}
			tn.Spec.Components[0].FollowRollouts = true
		})
	}
	for _, name := range []string{"late-a", "late-b"} {
		createTenant(t, following(name))
	}
	ro := newRollout("wave-late", "2.0.0", 2, map[string]string{"rollout": "late"})
	NewWithT(t).Expect(k8s.Create(ctx, ro)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ro) })
	done := func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
		g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
	}
	rolloutWhere(t, ro.Name, done)

	var got *tenancyv1alpha1.ComponentRollout
	for _, name := range []string{"late-c", "late-d", "late-e"} {
		// Kept until the end: a wave that takes a late tenant counts its tenants again.
		t.Cleanup(func() { deleteTenant(t, name) })
		t.Run(name+" arrives, is moved, and the rollout is done again", func(t *testing.T) {
			NewWithT(t).Expect(k8s.Create(ctx, following(name))).To(Succeed())
			got = rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
				g.Expect(ro.Status.Waves).To(ContainElement(HaveField("Tenants", ContainElement(name))))
				done(g, ro)
			})
			NewWithT(t).Eventually(func(g Gomega) {
				cm, st, rollout := runs(g, name)
				g.Expect([]string{cm, st, rollout}).To(Equal([]string{"2.0.0", "2.0.0", ro.Name}))
			}).WithTimeout(timeout).Should(Succeed())
		})
	}
	t.Run("a Ready tenant relabelled into the selector joins the released last wave and is moved", func(t *testing.T) {
		g := NewWithT(t)
		idle := following("late-f")
		idle.Labels["rollout"] = "not-yet"
		createTenant(t, idle)
		waitIdle(t)
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "late-f"}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"rollout":"late"}}}`)))).To(Succeed())
		got = rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(ro.Status.Waves).To(ContainElement(HaveField("Tenants", ContainElement("late-f"))))
			done(g, ro)
		})
		cm, st, rollout := runs(g, "late-f")
		g.Expect([]string{cm, st, rollout}).To(Equal([]string{"2.0.0", "2.0.0", ro.Name}))
	})
	t.Run("the late tenants fill the last wave to the batch size before a new one starts", func(t *testing.T) {
		g := NewWithT(t)
		var waves [][]string
		for _, w := range got.Status.Waves {
			waves = append(waves, w.Tenants)
		}
		g.Expect(waves).To(Equal([][]string{{"late-a", "late-b"}, {"late-c", "late-d"}, {"late-e", "late-f"}}))
		g.Expect(got.Status.Done).To(BeEquivalentTo(6), "%s; waves %+v", readyReason(got), got.Status.Waves)
		g.Expect(got.Status.Released).To(BeEquivalentTo(3))
	})
}
