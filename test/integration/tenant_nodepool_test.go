package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/test/testenv"
)

// A pod is placed on its tenant's node pool when admitted, and its nodeSelector cannot change:
// a tenant moved to another pool had its pods go on running on the old pool's nodes, beside the
// pods of the tenant the pool was given to next, or on the shared nodes once it had a pool of
// its own. Landlord deletes them; their controllers recreate them on the tenant's pool now.
func TestATenantMovedToAnotherNodePoolRunsItsPodsThere(t *testing.T) {
	addNode(t, localcluster.Node{Name: "pool-b-0", Pool: "pool-b"})
	cases := []struct {
		name             string
		from, to         string
		fromNode, toNode string
		move             string
	}{
		{"a tenant moved from pool-a to pool-b", "pool-a", "pool-b", "pool-a-0", "pool-b-0",
			"from node pool pool-a to node pool pool-b"},
		{"a tenant taken off its pool", "pool-a", "", "pool-a-0", "node-0",
			"from node pool pool-a to no dedicated node pool"},
		{"a tenant given a pool", "", "pool-b", "node-0", "pool-b-0",
			"from no dedicated node pool to node pool pool-b"},
	}
	for i, tc := range cases {
		t.Run(tc.name+" has its pods deleted and run again where its namespace now says", func(t *testing.T) {
			ctx := context.Background()
			g := NewWithT(t)
			name := fmt.Sprintf("pool-move-%d", i)
			ns := opConfig.NamespaceName(name)
			before := op.Requests.Snapshot()
			createTenant(t, newTenant(name, func(t *tenancyv1alpha1.Tenant) {
				t.Spec.NodePool = tc.from
				t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "pool-mover"}}
			}))
			t.Run("its namespace records the pool in the write that creates it", func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(namespace(t, name).Annotations).To(HaveKeyWithValue(tenancyv1alpha1.PodsPoolAnnotation, tc.from))
				g.Expect(op.Requests.Snapshot().Sub(before)).To(HaveKeyWithValue("PATCH namespaces", 1))
			})
			g.Expect(impersonate(t, "pool-mover").Create(ctx, restrictedDeployment(ns, "web", 2))).To(Succeed())
			placed := map[types.UID]bool{}
			for _, p := range waitPodsRunning(t, ns, 2) {
				g.Expect(p.Spec.NodeName).To(Equal(tc.fromNode), "pod %s", p.Name)
				placed[p.UID] = true
			}

			setNodePool(t, name, tc.to)
			moved := waitPodsReplaced(t, ns, placed, tc.toNode)
			g.Eventually(func(g Gomega) {
				g.Expect(tenantEvents(g, name, "NodePoolChanged")).To(ConsistOf(ContainSubstring(tc.move)))
				g.Expect(getNamespace(g, ns).Annotations).To(HaveKeyWithValue(tenancyv1alpha1.PodsPoolAnnotation, tc.to))
			}).WithTimeout(timeout).Should(Succeed())

			t.Run("a second reconcile deletes nothing more", func(t *testing.T) {
				g := NewWithT(t)
				expectNoRequestsOnResync(t, name)
				pods := &corev1.PodList{}
				g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
				g.Expect(uids(pods.Items)).To(Equal(moved))
			})

			t.Run("a move the operator left before deleting the pods is finished by the next reconcile", func(t *testing.T) {
				g := NewWithT(t)
				// What a crash between the namespace's write and the pods' deletion leaves: the
				// namespace names the new pool, its record the old one.
				record := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, tenancyv1alpha1.PodsPoolAnnotation, tc.from)
				g.Expect(k8s.Patch(ctx, named(&corev1.Namespace{}, "", ns), client.RawPatch(types.MergePatchType, []byte(record)))).To(Succeed())
				waitPodsReplaced(t, ns, moved, tc.toNode)
				// (The event of this second move joins the first's series, which the recorder
				// reports later: it is not looked for.)
				g.Eventually(func(g Gomega) {
					g.Expect(getNamespace(g, ns).Annotations).To(HaveKeyWithValue(tenancyv1alpha1.PodsPoolAnnotation, tc.to))
				}).WithTimeout(timeout).Should(Succeed())
			})
		})
	}
}

// waitPodsReplaced waits until the namespace runs two pods, none of them one of before, all on
// node, and returns their UIDs.
func waitPodsReplaced(t *testing.T, namespace string, before map[types.UID]bool, node string) map[types.UID]bool {
	t.Helper()
	var now map[types.UID]bool
	NewWithT(t).Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8s.List(context.Background(), pods, client.InNamespace(namespace))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2))
		for _, p := range pods.Items {
			g.Expect(before).NotTo(HaveKey(p.UID), "pod %s is still there, on %s", p.Name, p.Spec.NodeName)
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			g.Expect(p.Spec.NodeName).To(Equal(node), "pod %s", p.Name)
		}
		now = uids(pods.Items)
	}).WithTimeout(2 * timeout).Should(Succeed())
	return now
}

func uids(pods []corev1.Pod) map[types.UID]bool {
	set := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		set[p.UID] = true
	}
	return set
}

// setNodePool moves a tenant to a node pool, or off any with "".
func setNodePool(t *testing.T, name, pool string) {
	t.Helper()
	g := NewWithT(t)
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.NodePool = pool
	g.Expect(k8s.Patch(context.Background(), tenant, patch)).To(Succeed())
}

// addNode adds a simulated node, which kwok plays, and removes it when the test ends.
func addNode(t *testing.T, n localcluster.Node) {
	t.Helper()
	testenv.AddNode(t, k8s, n, timeout)
}
