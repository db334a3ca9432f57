package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/testenv"
)

// waitPodsRunning waits until the namespace's pods are all Running, and returns them.
func waitPodsRunning(t *testing.T, namespace string, n int) []corev1.Pod {
	t.Helper()
	return testenv.WaitPodsRunning(t, k8s, namespace, n, timeout)
}

// The quota Landlord writes is enforced by the API server and counted by the quota controller:
// a tenant user cannot run more pods than spec.quota allows.
func TestATenantsQuotaCapsAndCountsItsPods(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	createTenant(t, newTenant("capped", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Quota = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}
		t.Spec.Access.Operators = []tenancyv1alpha1.Subject{{Kind: "User", Name: "olga"}}
	}))
	const ns = "tenant-capped"
	olga := impersonate(t, "olga")

	// Admission counts against the quota's status, which the quota controller fills in.
	g.Eventually(func(g Gomega) {
		q := &corev1.ResourceQuota{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, q)).To(Succeed())
		g.Expect(q.Status.Hard.Pods().Value()).To(Equal(int64(2)))
	}).WithTimeout(timeout).Should(Succeed())

	for i := range 2 {
		g.Expect(olga.Create(ctx, restrictedPod(ns, fmt.Sprintf("worker-%d", i)))).To(Succeed())
	}
	err := olga.Create(ctx, restrictedPod(ns, "worker-2"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the third pod: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("exceeded quota: " + resources.QuotaName))
	g.Expect(err.Error()).To(ContainSubstring("limited: pods=2"))

	waitPodsRunning(t, ns, 2)
	g.Eventually(func(g Gomega) {
		q := &corev1.ResourceQuota{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, q)).To(Succeed())
		g.Expect(q.Status.Used.Pods().Value()).To(Equal(int64(2)))
	}).WithTimeout(timeout).Should(Succeed())
}

// The scheduler places a tenant's pods on its node pool's nodes and no others; a tenant without
// a pool never lands on a pool's tainted nodes. (The local cluster's nodes: node-0, open to all,
// and pool-a-0, of pool-a.)
func TestATenantsPodsRunOnItsNodePoolOnly(t *testing.T) {
	for _, tc := range []struct {
		tenant, pool, node string
	}{
		{tenant: "pooled", pool: "pool-a", node: "pool-a-0"},
		{tenant: "unpooled", pool: "", node: "node-0"},
	} {
		t.Run(fmt.Sprintf("a tenant of pool %q runs on %s", tc.pool, tc.node), func(t *testing.T) {
			ctx := context.Background()
			g := NewWithT(t)
			createTenant(t, newTenant(tc.tenant, func(t *tenancyv1alpha1.Tenant) {
				t.Spec.NodePool = tc.pool
				t.Spec.Access.Operators = []tenancyv1alpha1.Subject{{Kind: "User", Name: "olga"}}
			}))
			ns := opConfig.NamespaceName(tc.tenant)
			olga := impersonate(t, "olga")
			// The pods name no pool: the placement policy adds the tenant's.
			for i := range 3 {
				g.Expect(olga.Create(ctx, restrictedPod(ns, fmt.Sprintf("worker-%d", i)))).To(Succeed())
			}
			for _, p := range waitPodsRunning(t, ns, 3) {
				g.Expect(p.Spec.NodeName).To(Equal(tc.node), "pod %s", p.Name)
			}
		})
	}
}
