package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// The operator's namespacePrefix changed under a tenant that has a namespace: its status names
// the namespace it has, the configuration another. Following the configuration would start the
// tenant over in a second namespace, its volumes left in the first and its stored credentials
// (keyed by namespace) out of reach. The tenant stalls instead, with nothing written but its
// status, and its deletion waits until the prefix is back.
func TestATenantWhoseNamespacePrefixChangedStallsAndKeepsItsNamespace(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	name := "prefix-moved"
	createTenant(t, newTenant(name))
	configured, moved := opConfig.NamespaceName(name), "old-"+name
	setStatusNamespace := func(ns string) error {
		patch := fmt.Sprintf(`{"status":{"namespace":%q}}`, ns)
		tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
		return k8s.Status().Patch(ctx, tenant, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	// Whatever happens below, the tenant's deletion (registered by createTenant, run after this)
	// finds the configured namespace again.
	t.Cleanup(func() {
		if err := setStatusNamespace(configured); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})

	waitIdle(t)
	before := op.Requests.Snapshot()
	// As the tenant reads after an operator with the prefix "old-" converged it. A status write
	// wakes no reconcile; a label change does, and its event carries the tenant as it now is
	// (a resync could reach the cache before the status write does).
	g.Expect(setStatusNamespace(moved)).To(Succeed())
	label := fmt.Sprintf(`{"metadata":{"labels":{"test.landlord.dev/moved":%q}}}`, "yes")
	g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
		client.RawPatch(types.MergePatchType, []byte(label)))).To(Succeed())

	tenant := &tenancyv1alpha1.Tenant{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
		stalled := condition(tenant, tenancyv1alpha1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil(), "conditions: %+v", tenant.Status.Conditions)
		g.Expect(stalled.Reason).To(Equal(tenancyv1alpha1.ReasonNamespaceMoved))
		g.Expect(stalled.Message).To(And(ContainSubstring(moved), ContainSubstring(configured)))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(tenant.Status.Namespace).To(Equal(moved), "the status keeps naming the namespace the tenant has")
	waitIdle(t)
	made := tenantRequests(op.Requests.Snapshot().Sub(before))
	g.Expect(made).To(Equal(testenv.Counts{"PATCH tenants/status": 1}), "requests: %s", made)
	// A resync reads the tenant from the operator's cache: one that does not yet hold the
	// stalled status (its watch event late on a loaded machine) would send the same status
	// again, which is no cost of the stall. The cache is caught up first.
	g.Eventually(func(g Gomega) {
		cached := &tenancyv1alpha1.Tenant{}
		g.Expect(op.GetCache().Get(ctx, client.ObjectKey{Name: name}, cached)).To(Succeed())
		g.Expect(cached.ResourceVersion).To(Equal(tenant.ResourceVersion))
	}).WithTimeout(timeout).Should(Succeed())
	resync(t, name)
	made = tenantRequests(op.Requests.Snapshot().Sub(before))
	g.Expect(made).To(Equal(testenv.Counts{"PATCH tenants/status": 1}), "requests after a resync of the stalled tenant: %s", made)

	t.Run("its deletion waits until the prefix is back, then goes ahead", func(t *testing.T) {
		g := NewWithT(t)
		reconciles := tenantReconciles.of(name)
		g.Expect(confirmedDelete(ctx, name)).To(Succeed())
		g.Eventually(func() int { return tenantReconciles.of(name) }).WithTimeout(timeout).Should(BeNumerically(">", reconciles))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
		g.Expect(tenant.DeletionTimestamp).NotTo(BeNil())
		g.Expect(tenant.Finalizers).To(ContainElement(tenancyv1alpha1.Finalizer), "the finalizer is kept while the namespace is not the configured one")

		g.Expect(setStatusNamespace(configured)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{}))
		}).WithTimeout(timeout).Should(BeTrue(), "the deletion went ahead once the prefix was back")
	})
}
