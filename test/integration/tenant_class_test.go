package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// A tenant of a class is its class beneath what it sets itself, computed on every reconcile
// from the cached class: at rest it costs what any tenant costs, nothing.
func TestATenantOfAClassCostsNoRequestsOnAResyncBeforeAndAfterItsClassChanges(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	class := &tenancyv1alpha1.TenantClass{
		ObjectMeta: metav1.ObjectMeta{Name: "steady-class"},
		Spec: tenancyv1alpha1.TenantClassSpec{
			Quota:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:      &tenancyv1alpha1.Limits{Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}},
			PodSecurity: tenancyv1alpha1.PodSecurityBaseline,
			NodePool:    &tenancyv1alpha1.ClassNodePool{Name: "pool-a"},
			CostCode:    "steady",
		},
	}
	g.Expect(k8s.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, class) })
	names := make([]string, 3)
	for i := range names {
		names[i] = fmt.Sprintf("class-steady-%d", i)
		createTenant(t, newTenant(names[i], func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Class = class.Name }))
	}
	quotaOf := func(g Gomega, name string) string {
		q := &corev1.ResourceQuota{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.NamespaceName(name), Name: "tenant-quota"}, q)).To(Succeed())
		cpu := q.Spec.Hard[corev1.ResourceRequestsCPU]
		return cpu.String()
	}
	for _, n := range names {
		g.Expect(quotaOf(g, n)).To(Equal("2"))
		g.Expect(namespace(t, n).Labels).To(HaveKeyWithValue(tenancyv1alpha1.NodePoolLabel, "pool-a"))
	}

	t.Run("at rest", func(t *testing.T) { expectNoRequestsOnResync(t, names...) })

	patch := []byte(`{"spec":{"quota":{"cpu":"3"}}}`)
	g.Expect(k8s.Patch(ctx, class, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, n := range names {
			g.Expect(quotaOf(g, n)).To(Equal("3"), "tenant %s", n)
		}
	}).WithTimeout(timeout).Should(Succeed())

	t.Run("once its class's change reached it", func(t *testing.T) { expectNoRequestsOnResync(t, names...) })
}
