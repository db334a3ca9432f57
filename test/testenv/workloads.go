package testenv

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/localcluster"
)

// RestrictedPod is a tenant's pod that Pod Security "restricted" admits, changed by mutate.
func RestrictedPod(namespace, name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example.com/app:1",
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	for _, f := range mutate {
		f(p)
	}
	return p
}

// RestrictedDeployment is a tenant's own Deployment of RestrictedPods, selecting app=name.
func RestrictedDeployment(namespace, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: RestrictedPod(namespace, name).Spec},
		},
	}
}

// WaitPodsRunning waits until the namespace has n pods, all Running, and returns them.
func WaitPodsRunning(t *testing.T, c client.Reader, namespace string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.List(context.Background(), pods, client.InNamespace(namespace))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(n))
		for _, p := range pods.Items {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s on %q", p.Name, p.Spec.NodeName)
		}
	}).WithTimeout(timeout).Should(Succeed())
	return pods.Items
}

// AddNode adds a simulated node, which kwok plays, waits until it is Ready and schedulable, and
// removes it when the test ends. A node of a pool is tainted for it: no other test's pod lands
// on it.
func AddNode(t *testing.T, c client.Client, n localcluster.Node, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(c.Create(ctx, n.Object())).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}) })
	g.Eventually(func(g Gomega) {
		node := &corev1.Node{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: n.Name}, node)).To(Succeed())
		g.Expect(node.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
		// The node lifecycle controller lifts the taint every new node starts with.
		g.Expect(node.Spec.Taints).NotTo(ContainElement(HaveField("Key", corev1.TaintNodeNotReady)))
	}).WithTimeout(timeout).Should(Succeed())
}
