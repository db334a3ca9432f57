package controller_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
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
	setStatusNamespace := func(ns string) {
		t.Helper()
		patch := fmt.Sprintf(`{"status":{"namespace":%q}}`, ns)
		tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
		g.Expect(k8s.Status().Patch(ctx, tenant, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
	}
	waitIdle(t)
	before := op.Requests.Snapshot()
	// As the tenant reads after an operator with the prefix "old-" converged it.
	setStatusNamespace(moved)
	resync(t, name)
	made := tenantRequests(op.Requests.Snapshot().Sub(before))
	g.Expect(made).To(Equal(testenv.Counts{"PATCH tenants/status": 1}), "requests: %s", made)

	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
	stalled := condition(tenant, tenancyv1alpha1.StalledCondition)
	g.Expect(stalled).NotTo(BeNil(), "conditions: %+v", tenant.Status.Conditions)
	g.Expect(stalled.Reason).To(Equal(tenancyv1alpha1.ReasonNamespaceMoved))
	g.Expect(stalled.Message).To(And(ContainSubstring(moved), ContainSubstring(configured)))
	g.Expect(tenant.Status.Namespace).To(Equal(moved), "the status keeps naming the namespace the tenant has")

	t.Run("its deletion waits until the prefix is back, then goes ahead", func(t *testing.T) {
		g := NewWithT(t)
		reconciles := tenantReconciles.of(name)
		g.Expect(confirmedDelete(ctx, name)).To(Succeed())
		g.Eventually(func() int { return tenantReconciles.of(name) }).WithTimeout(timeout).Should(BeNumerically(">", reconciles))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
		g.Expect(tenant.DeletionTimestamp).NotTo(BeNil())
		g.Expect(tenant.Finalizers).To(ContainElement(tenancyv1alpha1.Finalizer), "the finalizer is kept while the namespace is not the configured one")

		setStatusNamespace(configured)
		deleteTenant(t, name)
	})
}
