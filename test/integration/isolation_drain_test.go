package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/test/testenv"
)

// drainNode is the node TestATenantCannotHoldTheDrainOfItsNode drains, where every pod of its
// tenant runs; spareNode, the other node of the tenant's pool, stays cordoned until the drain,
// as a node a platform adds before it drains one, so that the drained pods' replacements have
// somewhere to go.
const (
	drainNode = "pool-drain-0"
	spareNode = "pool-drain-1"
)

// A platform drains a node to upgrade or replace it, and the node is shared: one tenant must
// not be able to hold the drain for every other tenant on it. kubectl drain, the platform's own
// tool, evicts every pod of the tenant's from the node while the tenant admin tries each way to
// hold it (overlapping disruption budgets, a budget over pods that never become ready, a pod
// finalizer of its own), and the drain completes. A pod whose grace period or tolerations would
// hold or dodge a drain is refused when it is created.
func TestATenantCannotHoldTheDrainOfItsNode(t *testing.T) {
	// Its nodes are its own, tainted for its pool: no other test's pod is on them.
	t.Parallel()
	ctx := context.Background()
	addNode(t, localcluster.Node{Name: drainNode, Pool: "pool-drain"})
	addNode(t, localcluster.Node{Name: spareNode, Pool: "pool-drain"})
	createTenant(t, newTenant("drain-hold", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.NodePool = "pool-drain"
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "drain-admin"}}
	}))
	const ns = "tenant-drain-hold"
	admin := impersonate(t, "drain-admin")
	kubeconfig, err := env.WriteKubeconfig(t.TempDir(), "local")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(testenv.RepoRoot(), "bin", "k8s", testenv.KubeVersion, "kubectl"),
			append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := kubectl("cordon", spareNode)
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "kubectl cordon:\n%s", out)

	one := intstr.FromInt32(1)
	budget := func(name string, mutate ...func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
		b := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{
				Selector:                   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				MaxUnavailable:             &one,
				UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
			},
		}
		for _, f := range mutate {
			f(b)
		}
		return b
	}
	web := func(replicas int32, mutate ...func(*corev1.PodTemplateSpec)) *appsv1.Deployment {
		d := testenv.RestrictedDeployment(ns, "web", replicas)
		for _, f := range mutate {
			f(&d.Spec.Template)
		}
		return d
	}
	// create creates obj as the tenant admin; refused is whether the API server must refuse it,
	// naming why in message. An object admitted that should not have been fails the test but
	// lets it go on, so that the drain below shows what the object holds; create says whether
	// the object was created.
	create := func(t *testing.T, obj client.Object, refused bool, message string) bool {
		t.Helper()
		err := admin.Create(ctx, obj)
		if !refused {
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			return true
		}
		if err == nil {
			t.Errorf("%T %s was admitted; want it refused with %q", obj, obj.GetName(), message)
			return true
		}
		g := NewWithT(t)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring(message))
		return false
	}
	// podsOnTheNode waits until the tenant has n pods scheduled on the node and Running.
	podsOnTheNode := func(t *testing.T, n int) {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(n))
			for _, p := range pods.Items {
				g.Expect(p.Spec.NodeName).To(Equal(drainNode))
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			}
		}).WithTimeout(timeout).Should(Succeed())
	}
	// cleanUp leaves the namespace with no workload, pod or budget, and the node schedulable,
	// for the next scenario; it takes off any finalizer a pod kept.
	cleanUp := func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(ns))).To(Succeed())
		g.Expect(k8s.DeleteAllOf(ctx, &policyv1.PodDisruptionBudget{}, client.InNamespace(ns))).To(Succeed())
		g.Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			for i := range pods.Items {
				p := &pods.Items[i]
				if len(p.Finalizers) > 0 {
					g.Expect(k8s.Patch(ctx, p, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
				}
				g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, p))).To(Succeed())
			}
			g.Expect(pods.Items).To(BeEmpty())
			budgets := &policyv1.PodDisruptionBudgetList{}
			g.Expect(k8s.List(ctx, budgets, client.InNamespace(ns))).To(Succeed())
			g.Expect(budgets.Items).To(BeEmpty())
		}).WithTimeout(timeout).Should(Succeed())
		out, err := kubectl("cordon", spareNode)
		g.Expect(err).NotTo(HaveOccurred(), "kubectl cordon:\n%s", out)
		out, err = kubectl("uncordon", drainNode)
		g.Expect(err).NotTo(HaveOccurred(), "kubectl uncordon:\n%s", out)
	}

	scenarios := []struct {
		name string
		// hold is what the tenant admin does to keep its pods on the node; it leaves running
		// the pods it says.
		hold func(t *testing.T) int
	}{
		{"two budgets over the same pods, which make every eviction fail", func(t *testing.T) int {
			create(t, web(2), false, "")
			create(t, budget("web"), false, "")
			create(t, budget("web-again"), true, "exceeded quota: "+"tenant-quota")
			return 2
		}},
		{"a budget of maxUnavailable 1 over three pods that never become ready, evicting unhealthy pods only within the budget", func(t *testing.T) int {
			create(t, web(3, func(p *corev1.PodTemplateSpec) {
				p.Annotations = map[string]string{localcluster.NeverReadyAnnotation: "true"}
			}), false, "")
			if create(t, budget("web", func(b *policyv1.PodDisruptionBudget) { b.Spec.UnhealthyPodEvictionPolicy = nil }), true,
				"unhealthyPodEvictionPolicy") {
				return 3
			}
			if create(t, budget("web", func(b *policyv1.PodDisruptionBudget) {
				b.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.IfHealthyBudget)
			}), true, "set unhealthyPodEvictionPolicy to AlwaysAllow") {
				return 3
			}
			create(t, budget("web"), false, "")
			return 3
		}},
		{"a pod held by a finalizer of the tenant's, set when it is created or added later", func(t *testing.T) int {
			pods := 1
			if create(t, restrictedPod(ns, "held", func(p *corev1.Pod) { p.Finalizers = []string{"example.com/hold"} }), true,
				"pods in tenant-drain-hold may not carry finalizers") {
				pods++
			}
			pod := restrictedPod(ns, "later")
			create(t, pod, false, "")
			hold := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`))
			if err := admin.Patch(ctx, pod, hold); err == nil {
				t.Errorf("a finalizer added to pod %s was admitted", pod.Name)
			} else {
				NewWithT(t).Expect(err.Error()).To(ContainSubstring("ValidatingAdmissionPolicy '" + policy.PodFinalizers + "'"))
			}
			return pods
		}},
		{"a Deployment whose pods Kubernetes would create with a finalizer of the tenant's", func(t *testing.T) int {
			if !create(t, web(2, func(p *corev1.PodTemplateSpec) { p.Finalizers = []string{"example.com/hold"} }), true,
				"the pods of deployments in tenant-drain-hold may not carry finalizers") {
				create(t, web(2), false, "")
			}
			return 2
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name+": kubectl drain evicts every pod of the tenant's from the node all the same", func(t *testing.T) {
			t.Cleanup(func() { cleanUp(t) })
			podsOnTheNode(t, sc.hold(t))
			// kubectl retries a refused eviction every five seconds until its timeout: a drain
			// that is held fails after 20 s, one that is not ends in about a second.
			g := NewWithT(t)
			out, err := kubectl("uncordon", spareNode)
			g.Expect(err).NotTo(HaveOccurred(), "kubectl uncordon:\n%s", out)
			out, err = kubectl("drain", drainNode, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=20s")
			g.Expect(err).NotTo(HaveOccurred(), "kubectl drain:\n%s", out)
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			for _, p := range pods.Items {
				g.Expect(p.Spec.NodeName).NotTo(Equal(drainNode), "pod %s is still on the drained node", p.Name)
			}
		})
	}

	t.Run("a pod, or its deletion, may not keep a drain waiting longer than the grace period the configuration allows", func(t *testing.T) {
		hours := int64(365 * 24 * 3600)
		long := restrictedPod(ns, "long-goodbye", func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = &hours
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: hours - 1}}}
		})
		create(t, long, true, "pods in tenant-drain-hold may not ask for a termination grace period over 300 seconds")
		create(t, web(1, func(p *corev1.PodTemplateSpec) { p.Spec.TerminationGracePeriodSeconds = &hours }), true,
			"the pods of deployments in tenant-drain-hold may not ask for a termination grace period over 300 seconds")
		polite := restrictedPod(ns, "polite", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](300) })
		create(t, polite, false, "")
		// Scheduled: the API server deletes a pod on no node at once, whatever grace it is asked for.
		podsOnTheNode(t, 1)

		// A deletion may not hold the pod instead: not for longer than the bound (the API
		// server takes any grace period a deletion asks for), nor until dependents the tenant
		// made with blockOwnerDeletion are gone.
		g := NewWithT(t)
		err := admin.Delete(ctx, polite, client.GracePeriodSeconds(hours))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("pods in tenant-drain-hold may not be deleted with a grace period over 300 seconds"))
		err = admin.Delete(ctx, polite, client.PropagationPolicy(metav1.DeletePropagationForeground))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("pods in tenant-drain-hold may not be deleted in the foreground"))
		g.Expect(admin.Delete(ctx, polite, client.GracePeriodSeconds(300))).To(Succeed())
	})

	t.Run("a pod may not tolerate a cordoned node, nor a node under memory, disk or process pressure", func(t *testing.T) {
		out, err := kubectl("cordon", drainNode)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "kubectl cordon:\n%s", out)
		t.Cleanup(func() { _, _ = kubectl("uncordon", drainNode) })
		for _, taint := range []string{"node.kubernetes.io/unschedulable", "node.kubernetes.io/memory-pressure",
			"node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure", "node.kubernetes.io/network-unavailable"} {
			create(t, restrictedPod(ns, "dodger-"+strings.TrimPrefix(taint, "node.kubernetes.io/"), func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			}), true, "pods in tenant-drain-hold may not tolerate "+taint)
		}
		// The tolerations Kubernetes adds to every pod itself (DefaultTolerationSeconds) stay allowed.
		create(t, restrictedPod(ns, "patient", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			}
		}), false, "")
		NewWithT(t).Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "patient"}})).To(Succeed())
	})
}
