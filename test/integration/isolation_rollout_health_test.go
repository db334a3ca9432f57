package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/policy"
)

// brokenWebManifests is a component whose pods never pass readiness: its Deployment never
// becomes Available, and so never counts as rolled out.
const brokenWebManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  progressDeadlineSeconds: 3600
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations: {"` + localcluster.NeverReadyAnnotation + `": "true"}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: web
          image: {{ .Component.ImageRef }}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`

// A tenant's component counts as rolled out when its workloads are Current, and that verdict
// decides the tenant's rollout wave. A tenant admin used to make a broken version pass: a Ready
// pod of its own, labelled as Landlord's ReplicaSet selects (its pod-template-hash read off the
// ReplicaSet), was adopted, and the ReplicaSet scaled its own never-ready pod away; or the scale
// subresource, which the component policy did not match, took Landlord's Deployment to zero
// replicas, which kstatus calls Current. Only Kubernetes' controllers may now set the labels
// their controllers adopt pods by, and only the platform may scale what Landlord renders.
func TestATenantCannotDecideItsOwnRolloutHealth(t *testing.T) {
	ctx := context.Background()
	publish(t, "health", "1.0.0", brokenWebManifests, "")
	tenant := newTenant("health-acme", pin("health", "1.0.0", ""), func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "Group", Name: "oidc:health-acme.admins"}}
	})
	NewWithT(t).Expect(k8s.Create(ctx, tenant)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, tenant.Name) })
	waitComponents(t, tenant.Name, tenancyv1alpha1.ReasonRollingOut)
	ns := opConfig.NamespaceName("health-acme")
	admin := impersonate(t, "mallory", "oidc:health-acme.admins")

	// The ReplicaSet of Landlord's Deployment, the hash it selects its pods by, and its pod.
	var hash, replicaSet, pod string
	NewWithT(t).Eventually(func(g Gomega) {
		sets := &appsv1.ReplicaSetList{}
		g.Expect(k8s.List(ctx, sets, client.InNamespace(ns), client.MatchingLabels{"app": "web"})).To(Succeed())
		g.Expect(sets.Items).To(HaveLen(1), "%s", workloadEvents(g, ns))
		replicaSet, hash = sets.Items[0].Name, sets.Items[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		g.Expect(hash).NotTo(BeEmpty())
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{appsv1.DefaultDeploymentUniqueLabelKey: hash})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		pod = pods.Items[0].Name
	}).WithTimeout(timeout).Should(Succeed())
	adopted := map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}

	own := deployment(ns)
	own.Name = "tenants-own"
	NewWithT(t).Expect(admin.Create(ctx, own)).To(Succeed())
	ownPod := restrictedPod(ns, "tenants-own-pod")
	NewWithT(t).Expect(admin.Create(ctx, ownPod)).To(Succeed())

	expectAttempts(t, []attempt{
		{"a tenant admin creating a pod that Landlord's ReplicaSet would adopt", false, func() error {
			return admin.Create(ctx, restrictedPod(ns, "fake-web", func(p *corev1.Pod) { p.Labels = adopted }))
		}},
		{"a tenant admin creating a ReplicaSet whose pods Landlord's ReplicaSet would adopt once orphaned", false, func() error {
			tmpl := restrictedPodTemplate()
			tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
			tmpl.Labels = adopted
			return admin.Create(ctx, &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fake-web"},
				Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: adopted}, Template: tmpl},
			})
		}},
		{"a tenant admin relabelling a pod of its own into Landlord's ReplicaSet", false, func() error {
			return admin.Patch(ctx, named(&corev1.Pod{}, ns, ownPod.Name),
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"web","pod-template-hash":"`+hash+`"}}}`)))
		}},
		{"a tenant admin creating a pod a Job of Landlord's would count as its own", false, func() error {
			return admin.Create(ctx, restrictedPod(ns, "fake-job", func(p *corev1.Pod) {
				p.Labels = map[string]string{"batch.kubernetes.io/controller-uid": "0b5e5b5e-0000-4000-8000-000000000000"}
			}))
		}},
		{"a tenant admin changing the image of the pod of Landlord's Deployment", false, func() error {
			return admin.Patch(ctx, named(&corev1.Pod{}, ns, pod),
				client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"web","image":"registry.example.com/health:good"}]}}`)))
		}},
		{"a tenant admin taking the pod of Landlord's Deployment from its ReplicaSet", false, func() error {
			return admin.Patch(ctx, named(&corev1.Pod{}, ns, pod), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"ownerReferences":null}}`)))
		}},
		{"a tenant admin labelling the pod of Landlord's Deployment with keys of its own", true, func() error {
			return admin.Patch(ctx, named(&corev1.Pod{}, ns, pod),
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"checkout"}}}`)), client.DryRunAll)
		}},
		{"a tenant admin labelling a pod of its own with keys of its own", true, func() error {
			return admin.Patch(ctx, named(&corev1.Pod{}, ns, ownPod.Name),
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"checkout"}}}`)))
		}},
	}, policy.ControllerLabels)

	scale := func(name string, replicas int32) func() error {
		return func() error {
			return admin.SubResource("scale").Update(ctx, named(&appsv1.Deployment{}, ns, name),
				client.WithSubResourceBody(&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}))
		}
	}
	expectAttempts(t, []attempt{
		{"a tenant admin scaling Landlord's Deployment to zero", false, scale("web", 0)},
		{"a tenant admin scaling the ReplicaSet of Landlord's Deployment", false, func() error {
			return admin.Patch(ctx, named(&appsv1.ReplicaSet{}, ns, replicaSet), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`)))
		}},
		{"a tenant admin creating an autoscaler of Landlord's Deployment", false, func() error {
			return admin.Create(ctx, autoscaler(ns, "web"))
		}},
		{"a tenant admin creating an autoscaler of Landlord's Deployment, its kind in lower case", false, func() error {
			hpa := autoscaler(ns, "web")
			hpa.Name, hpa.Spec.ScaleTargetRef.Kind = "web-lower", "deployment"
			return admin.Create(ctx, hpa)
		}},
		{"a tenant admin creating an autoscaler of a Deployment of its own", true, func() error {
			return admin.Create(ctx, autoscaler(ns, own.Name), client.DryRunAll)
		}},
		{"a tenant admin scaling a Deployment of its own", true, scale(own.Name, 2)},
		{"the platform's administrator scaling Landlord's Deployment", true, func() error {
			return k8s.SubResource("scale").Update(ctx, named(&appsv1.Deployment{}, ns, "web"),
				client.WithSubResourceBody(&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}), client.DryRunAll)
		}},
	}, policy.ComponentScale)

	d := renderedDeployment(NewWithT(t), "health-acme", "web")
	NewWithT(t).Expect(d.Status.AvailableReplicas).To(BeZero(), "no pod but Landlord's own, never ready, counts for its Deployment")
	NewWithT(t).Expect(*d.Spec.Replicas).To(BeEquivalentTo(1))
}

// autoscaler is a HorizontalPodAutoscaler of a Deployment that holds it at one replica.
func autoscaler(namespace, deployment string) *autoscalingv1.HorizontalPodAutoscaler {
	return &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: deployment},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 1,
		},
	}
}
