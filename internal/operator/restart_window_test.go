package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/resources"
)

// The window a restart leaves, stated: a restarted operator reads none of its tenants' objects
// (TestARestartedOperatorSendsNothingForUnchangedTenants), and takes an object whose applied
// hash matches and that no other field manager owns part of for its own. A field of Landlord's
// that someone removed while no operator ran leaves exactly that, so it stays removed; any later
// change to the object, or a reconcile request on the tenant, compares the object in full and
// puts the field back.
func TestAFieldRemovedWhileTheOperatorWasDownWaitsForAReconcileRequest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, store := sharedEnv(t)
	cfg := config.Default()
	first, err := env.StartOperator(cfg, store)
	g.Expect(err).NotTo(HaveOccurred())
	createTenants(t, env, "window")
	ready := func(g Gomega) *tenancyv1alpha1.Tenant {
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: "window"}, tenant)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		return tenant
	}
	g.Eventually(ready).WithTimeout(timeout).Should(Not(BeNil()))
	g.Eventually(first.Idle).WithTimeout(timeout).Should(BeTrue())
	g.Expect(first.Stop()).To(Succeed())

	// While no operator runs, an administrator removes the quota's cap on Secrets. (A field of
	// a map: removing it gives the administrator's field manager nothing to own. Changing an
	// atomic list, a LimitRange's limits say, makes it own the list, and the restarted operator
	// repairs that at once.)
	key := client.ObjectKey{Namespace: cfg.NamespaceName("window"), Name: resources.QuotaName}
	secretsCap := func(g Gomega) bool {
		q := &corev1.ResourceQuota{}
		g.Expect(env.AdminClient.Get(ctx, key, q)).To(Succeed())
		_, ok := q.Spec.Hard[corev1.ResourceSecrets]
		return ok
	}
	g.Expect(secretsCap(g)).To(BeTrue())
	g.Expect(env.AdminClient.Patch(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec/hard/secrets"}]`)))).To(Succeed())

	second, err := env.StartOperator(cfg, store)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = second.Stop() })
	g.Eventually(second.Reconciles).WithTimeout(timeout).Should(BeNumerically(">=", 1))
	g.Eventually(second.Idle).WithTimeout(timeout).Should(BeTrue())
	g.Expect(secretsCap(g)).To(BeFalse(), "the window is closed: update the restart paragraph of docs/architecture.md and this test")

	requested := time.Now().UTC().Format(time.RFC3339Nano)
	g.Expect(env.AdminClient.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "window"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+tenancyv1alpha1.ReconcileRequestAnnotation+`":"`+requested+`"}}}`)))).To(Succeed())
	g.Eventually(secretsCap).WithTimeout(timeout).Should(BeTrue(), "a reconcile request puts the field back")
	g.Eventually(func(g Gomega) string { return ready(g).Status.LastHandledReconcileAt }).WithTimeout(timeout).Should(Equal(requested))
}
