package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// A tenant's pods share the scheduler and the nodes with every other tenant's. A
// tenant admin may not take a system priority class (and preempt other tenants' pods), tolerate
// the control plane's taint or any taint but its pool's and the ones configured, or write a
// PodDisruptionBudget that holds up every drain of the nodes it runs on; and a pod that says
// nothing of its scratch space gets the LimitRange's ephemeral-storage default. The suite's
// configuration allows the priority class tenant-batch and the toleration nvidia.com/gpu:NoSchedule.
func TestTenantPodsStayWithinTheirSchedulingAllowance(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("iso-sched", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.NodePool = "pool-sched"
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "sched-admin"}}
	}))
	waitReady(t, "iso-sched")
	const ns = "tenant-iso-sched"
	admin := impersonate(t, "sched-admin")
	batch := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "tenant-batch"}, Value: 100}
	NewWithT(t).Expect(k8s.Create(ctx, batch)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, batch) })

	tolerating := func(name string, tols ...corev1.Toleration) *corev1.Pod {
		return restrictedPod(ns, name, func(p *corev1.Pod) { p.Spec.Tolerations = tols })
	}
	withPriority := func(name, class string) *corev1.Pod {
		return restrictedPod(ns, name, func(p *corev1.Pod) { p.Spec.PriorityClassName = class })
	}
	budget := func(name string, minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				MinAvailable: minAvailable, MaxUnavailable: maxUnavailable,
				UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
			},
		}
	}
	// workload is a Deployment named name whose pods are changed by mutate.
	workload := func(name string, mutate func(*corev1.PodSpec)) *appsv1.Deployment {
		d := deployment(ns)
		d.Name = name
		d.Spec.Template.Spec = restrictedPod(ns, "").Spec
		mutate(&d.Spec.Template.Spec)
		return d
	}
	controlPlane := corev1.Toleration{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	int0, pct0, pct100, int1 := intstr.FromInt32(0), intstr.FromString("0%"), intstr.FromString("100%"), intstr.FromInt32(1)

	refused := []struct {
		name    string
		policy  string
		obj     client.Object
		message string
	}{
		{"a pod of priority class system-node-critical", policy.PodScheduling, withPriority("node-critical", "system-node-critical"),
			"pods in tenant-iso-sched may not use priority class system-node-critical: use one of tenant-batch, or none"},
		{"a pod of priority class system-cluster-critical", policy.PodScheduling, withPriority("cluster-critical", "system-cluster-critical"),
			"may not use priority class system-cluster-critical"},
		{"a pod tolerating the control plane's taint", policy.PodScheduling, tolerating("control-plane", controlPlane),
			"pods in tenant-iso-sched may not tolerate node-role.kubernetes.io/control-plane:NoSchedule"},
		{"a pod tolerating a configured taint under another effect", policy.PodScheduling,
			tolerating("gpu-noexecute", corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}),
			"may not tolerate nvidia.com/gpu:NoExecute"},
		{"a Deployment whose pods would tolerate the control plane's taint", policy.PodScheduling,
			workload("control-plane", func(p *corev1.PodSpec) { p.Tolerations = []corev1.Toleration{controlPlane} }),
			"the pods of deployments in tenant-iso-sched may not tolerate node-role.kubernetes.io/control-plane:NoSchedule"},
		{"a CronJob whose pods would take priority class system-node-critical", policy.PodScheduling, &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "critical"},
			Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: func() corev1.PodTemplateSpec {
				tpl := restrictedPodTemplate()
				tpl.Spec.PriorityClassName = "system-node-critical"
				return tpl
			}()}}},
		}, "the pods of cronjobs in tenant-iso-sched may not use priority class system-node-critical"},
		{"a PodDisruptionBudget of maxUnavailable 0", policy.DisruptionBudgets, budget("max-0", nil, &int0),
			"PodDisruptionBudgets in tenant-iso-sched must let a drain evict a pod: set maxUnavailable to at least 1 or 1%, and no minAvailable"},
		{"a PodDisruptionBudget of maxUnavailable 0%", policy.DisruptionBudgets, budget("max-0-percent", nil, &pct0), "set maxUnavailable to at least 1"},
		{"a PodDisruptionBudget of minAvailable 100%", policy.DisruptionBudgets, budget("min-100-percent", &pct100, nil), "set maxUnavailable to at least 1"},
		{"a PodDisruptionBudget of minAvailable 1, which blocks a drain of a single replica", policy.DisruptionBudgets, budget("min-1", &int1, nil), "set maxUnavailable to at least 1"},
	}
	for _, tc := range refused {
		t.Run(tc.name+" is refused, saying what to do", func(t *testing.T) {
			g := NewWithT(t)
			// The API server acts on a policy the operator has just written a moment later.
			g.Eventually(func() error {
				return admin.Create(ctx, tc.obj.DeepCopyObject().(client.Object), client.DryRunAll)
			}).WithTimeout(timeout).Should(MatchError(ContainSubstring("ValidatingAdmissionPolicy '" + tc.policy + "'")))
			err := admin.Create(ctx, tc.obj)
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.message))
		})
	}

	// Kubernetes adds these to every pod (DefaultTolerationSeconds) and a tenant may write them itself.
	notReady := corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	unreachable := corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	pct25 := intstr.FromString("25%")
	admitted := []struct {
		name string
		obj  client.Object
	}{
		{"a pod tolerating its own node pool's taint", tolerating("own-pool", poolToleration("pool-sched"))},
		{"a pod tolerating not-ready and unreachable nodes for a while", tolerating("node-conditions", notReady, unreachable)},
		{"a pod tolerating the configured taint", tolerating("gpu", corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})},
		{"a pod of the configured priority class", withPriority("batch", "tenant-batch")},
		{"a Deployment whose pods tolerate the configured taint and take the configured priority class", workload("gpu", func(p *corev1.PodSpec) {
			p.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			p.PriorityClassName = "tenant-batch"
		})},
		{"a PodDisruptionBudget of maxUnavailable 1", budget("max-1", nil, &int1)},
		{"a PodDisruptionBudget of maxUnavailable 25%", budget("max-25-percent", nil, &pct25)},
	}
	for _, tc := range admitted {
		t.Run(tc.name+" is admitted", func(t *testing.T) {
			var opts []client.CreateOption
			if _, ok := tc.obj.(*policyv1.PodDisruptionBudget); ok {
				// The namespace's quota holds one budget: each is judged alone, none kept.
				opts = append(opts, client.DryRunAll)
			}
			NewWithT(t).Expect(admin.Create(ctx, tc.obj, opts...)).To(Succeed())
		})
	}

	t.Run("a pod that names no scratch space gets the LimitRange's ephemeral-storage request and limit", func(t *testing.T) {
		g := NewWithT(t)
		pod := restrictedPod(ns, "scratch")
		g.Expect(admin.Create(ctx, pod)).To(Succeed())
		limits := opConfig.Defaults.Limits
		g.Expect(limits.Default).To(HaveKey(corev1.ResourceEphemeralStorage), "the default configuration limits scratch space")
		res := pod.Spec.Containers[0].Resources
		g.Expect(res.Limits[corev1.ResourceEphemeralStorage]).To(BeComparableTo(limits.Default[corev1.ResourceEphemeralStorage]))
		g.Expect(res.Requests[corev1.ResourceEphemeralStorage]).To(BeComparableTo(limits.DefaultRequest[corev1.ResourceEphemeralStorage]))
	})

	t.Run("a pod asking for more scratch space than the LimitRange's maximum is refused", func(t *testing.T) {
		g := NewWithT(t)
		most := opConfig.Defaults.Limits.Max[corev1.ResourceEphemeralStorage]
		g.Expect(most.IsZero()).To(BeFalse(), "the default configuration caps scratch space")
		over := most.DeepCopy()
		over.Add(resource.MustParse("1Gi"))
		err := admin.Create(ctx, restrictedPod(ns, "hoarder", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: over}
		}))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("maximum ephemeral-storage usage per Container is " + most.String()))
	})
}
