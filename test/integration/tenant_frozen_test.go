package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/testenv"
)

// restrictedDeployment is a tenant's own Deployment, admitted under Pod Security "restricted".
func restrictedDeployment(namespace, name string, replicas int32) *appsv1.Deployment {
	return testenv.RestrictedDeployment(namespace, name, replicas)
}

// Scaling Landlord's components to zero is not enough to freeze a tenant: its own workloads
// would go on running. Frozen runs nothing of the tenant: the quota allows no pod, and the
// running ones are deleted; the real ReplicaSet controller cannot bring them back until the
// tenant is Active.
func TestAFrozenTenantRunsNothing(t *testing.T) {
	// Its tenant is its own, and it asserts nothing of the cluster at large: it runs beside
	// the other parallel tests, once the serial ones (restarts, request counts) are done.
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	createTenant(t, newTenant("icebox", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Operators = []tenancyv1alpha1.Subject{{Kind: "User", Name: "olga"}}
	}))
	const ns = "tenant-icebox"
	olga := impersonate(t, "olga")
	g.Expect(olga.Create(ctx, restrictedDeployment(ns, "own-worker", 2))).To(Succeed())
	g.Expect(olga.Create(ctx, restrictedPod(ns, "bare"))).To(Succeed())
	waitPodsRunning(t, ns, 3)

	setState(t, "icebox", tenancyv1alpha1.StateFrozen)
	quota := &corev1.ResourceQuota{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, quota)).To(Succeed())
		g.Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourcePods, resource.MustParse("0")))
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
		g.Expect(quota.Status.Used.Pods().Value()).To(BeZero())
	}).WithTimeout(timeout).Should(Succeed())

	t.Run("the tenant's own deployment cannot start a pod while Frozen", func(t *testing.T) {
		g := NewWithT(t)
		// The ReplicaSet controller keeps trying, and the quota keeps refusing.
		g.Consistently(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(5 * time.Second).Should(Succeed())
		err := olga.Create(ctx, restrictedPod(ns, "sneaky"))
		g.Expect(err).To(MatchError(ContainSubstring("exceeded quota: " + resources.QuotaName)))
	})

	t.Run("back to Active, the tenant's workloads run again", func(t *testing.T) {
		setState(t, "icebox", tenancyv1alpha1.StateActive)
		waitPodsRunning(t, ns, 2)
	})
}
