package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/test/testenv"
)

// webManifests is a realistic component: a Deployment running the component's image (as the
// tenant namespace's restricted Pod Security level requires), a Service in front of it and a
// ConfigMap of settings, all from values and built-ins.
const webManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: web
          image: {{ .Component.ImageRef }}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
          env:
            - name: TENANT
              value: {{ .Tenant.Name | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
    - port: 80
      targetPort: 8080
{{- if .Values.settings }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-settings
data:
  organization: {{ .Tenant.Organization | quote }}
  logLevel: {{ .Values.logLevel | default "info" | quote }}
{{- end }}
`

func jsonValues(doc string) *apiextensionsv1.JSON {
	return &apiextensionsv1.JSON{Raw: []byte(doc)}
}

// publish creates a ComponentTemplate and removes it when the test ends.
func publish(t *testing.T, component, version, manifests, values string) {
	t.Helper()
	ct := &tenancyv1alpha1.ComponentTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.ComponentTemplateName(component, version)},
		Spec: tenancyv1alpha1.ComponentTemplateSpec{
			Component: component, Version: version, Image: "registry.example.com/" + component, Manifests: manifests,
		},
	}
	if values != "" {
		ct.Spec.Values = jsonValues(values)
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), ct)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ct) })
}

func pin(component, version, values string) func(*tenancyv1alpha1.Tenant) {
	return func(t *tenancyv1alpha1.Tenant) {
		c := tenancyv1alpha1.Component{Name: component, Version: version}
		if values != "" {
			c.Values = jsonValues(values)
		}
		t.Spec.Components = append(t.Spec.Components, c)
	}
}

// rolledOut waits until the tenant's Deployment has rolled out (the Deployment controller
// created its pods, the scheduler placed them and kwok ran them) and the tenant is Ready.
func rolledOut(t *testing.T, tenant, name string) *tenancyv1alpha1.Tenant {
	t.Helper()
	got := &tenancyv1alpha1.Tenant{}
	NewWithT(t).Eventually(func(g Gomega) {
		d := renderedDeployment(g, tenant, name)
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.UpdatedReplicas).To(Equal(ptr.Deref(d.Spec.Replicas, 1)), "deployment %s: %s", name, workloadEvents(g, d.Namespace))
		g.Expect(d.Status.AvailableReplicas).To(Equal(ptr.Deref(d.Spec.Replicas, 1)), "deployment %s: %s", name, workloadEvents(g, d.Namespace))
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: tenant}, got)).To(Succeed())
		g.Expect(kstatus(g, got).Status).To(Equal(status.CurrentStatus), "conditions: %+v", got.Status.Conditions)
	}).WithTimeout(2 * timeout).Should(Succeed())
	return got
}

// workloadEvents are the namespace's warning events: why pods are not created or not running.
func workloadEvents(g Gomega, namespace string) string {
	events := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), events, client.InNamespace(namespace))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning {
			out = append(out, e.InvolvedObject.Kind+" "+e.InvolvedObject.Name+": "+e.Message)
		}
	}
	return strings.Join(out, "; ")
}

func renderedDeployment(g Gomega, tenant, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: opConfig.NamespaceName(tenant), Name: name}, d)).To(Succeed())
	return d
}

// waitComponents waits until the tenant's ComponentsReady condition has the reason.
func waitComponents(t *testing.T, name, reason string) *tenancyv1alpha1.Tenant {
	t.Helper()
	got := &tenancyv1alpha1.Tenant{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, got)).To(Succeed())
		c := condition(got, tenancyv1alpha1.ComponentsReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason), "message: %s", c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(timeout).Should(Succeed())
	return got
}

// waitComponentsStalled waits until the tenant's components are refused for reason and the
// tenant is Stalled, and returns the ComponentsReady message.
func waitComponentsStalled(t *testing.T, name, reason string) string {
	t.Helper()
	got := waitComponents(t, name, reason)
	stalled := condition(got, tenancyv1alpha1.StalledCondition)
	g := NewWithT(t)
	g.Expect(stalled).NotTo(BeNil(), "conditions: %+v", got.Status.Conditions)
	g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
	return condition(got, tenancyv1alpha1.ComponentsReadyCondition).Message
}

func TestComponents(t *testing.T) {
	ctx := context.Background()
	publish(t, "web", "1.0.0", webManifests, `{"replicas": 2, "settings": true}`)
	publish(t, "web", "1.1.0", webManifests, `{"replicas": 2}`)
	tenant := newTenant("comp-acme", pin("web", "1.0.0", `{"replicas": 3, "logLevel": "debug"}`))
	g := NewWithT(t)
	g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, tenant.Name) })
	ns := opConfig.NamespaceName(tenant.Name)

	t.Run("the rendered objects are applied with values, built-ins and tenant values over defaults", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			d := renderedDeployment(g, tenant.Name, "web")
			g.Expect(*d.Spec.Replicas).To(Equal(int32(3)))
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/web:1.0.0"))
			g.Expect(d.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ComponentLabel, "web"))
			g.Expect(metav1.IsControlledBy(d, tenant)).To(BeTrue())
			cm := &corev1.ConfigMap{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-settings"}, cm)).To(Succeed())
			g.Expect(cm.Data).To(Equal(map[string]string{"organization": "Acme Inc.", "logLevel": "debug"}))
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.Service{})).To(Succeed())
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("the tenant is Ready once its workloads have rolled out, and lists what it applied", func(t *testing.T) {
		g := NewWithT(t)
		ready := rolledOut(t, tenant.Name, "web")
		g.Expect(ready.Status.Components).To(HaveLen(1))
		g.Expect(ready.Status.Components[0]).To(And(
			HaveField("Version", "1.0.0"), HaveField("Ready", true),
			HaveField("Inventory", []string{"/ConfigMap/web-settings", "/Service/web", "apps/Deployment/web"})))
	})

	t.Run("an unchanged tenant with components costs no API requests", func(t *testing.T) {
		expectNoRequestsOnResync(t, tenant.Name)
	})

	t.Run("a rendered object edited by hand is put back", func(t *testing.T) {
		g := NewWithT(t)
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-settings"}, cm)).To(Succeed())
		cm.Data["logLevel"] = "trace"
		g.Expect(k8s.Update(ctx, cm)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-settings"}, cm)).To(Succeed())
			g.Expect(cm.Data["logLevel"]).To(Equal("debug"))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a frozen tenant's workloads scale to zero and come back when it thaws", func(t *testing.T) {
		g := NewWithT(t)
		setState(t, tenant.Name, tenancyv1alpha1.StateFrozen)
		g.Eventually(func(g Gomega) {
			g.Expect(*renderedDeployment(g, tenant.Name, "web").Spec.Replicas).To(BeZero())
		}).WithTimeout(timeout).Should(Succeed())
		rolledOut(t, tenant.Name, "web")
		g.Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "a frozen tenant still has pods")
		}).WithTimeout(timeout).Should(Succeed())

		setState(t, tenant.Name, tenancyv1alpha1.StateActive)
		g.Eventually(func(g Gomega) {
			g.Expect(*renderedDeployment(g, tenant.Name, "web").Spec.Replicas).To(Equal(int32(3)))
		}).WithTimeout(timeout).Should(Succeed())
		rolledOut(t, tenant.Name, "web")
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(3))
		for _, p := range pods.Items {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
		}
	})

	t.Run("a new version is applied and what left the manifests is pruned", func(t *testing.T) {
		g := NewWithT(t)
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tenant.Name}, got)).To(Succeed())
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Components[0].Version = "1.1.0"
		g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(renderedDeployment(g, tenant.Name, "web").Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/web:1.1.0"))
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-settings"}, &corev1.ConfigMap{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ConfigMap the new version no longer renders is still there")
		}).WithTimeout(timeout).Should(Succeed())
		ready := rolledOut(t, tenant.Name, "web")
		g.Expect(ready.Status.Components[0].Version).To(Equal("1.1.0"))
	})

	t.Run("a version without a ComponentTemplate stalls and keeps what runs", func(t *testing.T) {
		g := NewWithT(t)
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tenant.Name}, got)).To(Succeed())
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Components[0].Version = "9.9.9"
		g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
		stalled := waitComponents(t, tenant.Name, tenancyv1alpha1.ReasonTemplateNotFound)
		g.Expect(kstatus(g, stalled).Status).To(Equal(status.FailedStatus))
		g.Expect(condition(stalled, tenancyv1alpha1.ComponentsReadyCondition).Message).To(ContainSubstring("component web version 9.9.9"))
		g.Expect(renderedDeployment(g, tenant.Name, "web").Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/web:1.1.0"))

		// Publishing the version is enough: the tenant picks it up.
		publish(t, "web", "9.9.9", webManifests, `{"replicas": 1}`)
		g.Eventually(func(g Gomega) {
			g.Expect(renderedDeployment(g, tenant.Name, "web").Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/web:9.9.9"))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a component removed from the spec is pruned", func(t *testing.T) {
		g := NewWithT(t)
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tenant.Name}, got)).To(Succeed())
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Components = nil
		g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(waitReady(t, tenant.Name).Status.Components).To(BeEmpty())
	})
}

func TestComponentsThatCannotRenderStall(t *testing.T) {
	cases := []struct {
		name, manifests, values, schema string
		want                            []string
	}{
		{
			name:      "a template with a syntax error",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Values.a \n",
			want:      []string{"component bad-syntax version 1.0.0, line 7", "unclosed action"},
		},
		{
			name:      "a template that renders into another namespace",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: kube-system\n",
			want:      []string{"ConfigMap x is in namespace kube-system"},
		},
		{
			name:      "values that do not satisfy the template's schema",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
			values:    `{"replicas": "three"}`,
			schema:    `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
			want:      []string{"replicas"},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name+" stalls the tenant with a message naming the component", func(t *testing.T) {
			comp := []string{"bad-syntax", "bad-scope", "bad-namespace", "bad-values"}[i]
			ct := &tenancyv1alpha1.ComponentTemplate{
				ObjectMeta: metav1.ObjectMeta{Name: comp + "-1.0.0"},
				Spec:       tenancyv1alpha1.ComponentTemplateSpec{Component: comp, Version: "1.0.0", Manifests: tc.manifests},
			}
			if tc.schema != "" {
				ct.Spec.ValuesSchema = jsonValues(tc.schema)
			}
			g := NewWithT(t)
			g.Expect(k8s.Create(context.Background(), ct)).To(Succeed())
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), ct) })
			name := fmt.Sprintf("comp-stall-%d", i)
			g.Expect(k8s.Create(context.Background(), newTenant(name, pin(comp, "1.0.0", tc.values)))).To(Succeed())
			t.Cleanup(func() { deleteTenant(t, name) })

			got := waitComponents(t, name, tenancyv1alpha1.ReasonRenderFailed)
			g.Expect(kstatus(g, got).Status).To(Equal(status.FailedStatus))
			msg := condition(got, tenancyv1alpha1.ComponentsReadyCondition).Message
			for _, w := range tc.want {
				g.Expect(msg).To(ContainSubstring(w))
			}
		})
	}
}

func TestComponentTemplatesAreImmutableAndNamedByVersion(t *testing.T) {
	ctx := context.Background()
	t.Run("a template whose name is not component-version is rejected", func(t *testing.T) {
		err := k8s.Create(ctx, &tenancyv1alpha1.ComponentTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "web-latest"},
			Spec:       tenancyv1alpha1.ComponentTemplateSpec{Component: "web", Version: "2.0.0", Manifests: "x"},
		})
		g := NewWithT(t)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("metadata.name must be <spec.component>-<spec.version>"))
	})
	t.Run("a published template cannot be changed", func(t *testing.T) {
		publish(t, "frozen", "1.0.0", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", "")
		g := NewWithT(t)
		ct := &tenancyv1alpha1.ComponentTemplate{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "frozen-1.0.0"}, ct)).To(Succeed())
		ct.Spec.Manifests = "changed"
		err := k8s.Update(ctx, ct)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec is immutable"))
	})
}

// stuckManifests is a Deployment that never rolls out, for one of two reasons kwok plays: its
// pods run but never pass readiness, or its image cannot be pulled. Its progress deadline is
// short, so the Deployment controller gives up on it within the test.
const stuckManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  replicas: 1
  progressDeadlineSeconds: 10
  selector:
    matchLabels: {app: worker}
  template:
    metadata:
      labels: {app: worker}
      annotations: {{ .Values.podAnnotations | toJson }}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: worker
          image: {{ .Values.image | default .Component.ImageRef }}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`

// A workload that never becomes Ready holds the tenant in Reconciling, and once its Deployment
// is past the progress deadline, Stalled with the Deployment's own message; a version that
// fixes it makes the tenant Ready.
func TestAComponentThatNeverRollsOutStallsTheTenant(t *testing.T) {
	// Its tenant is its own, and it asserts nothing of the cluster at large: it runs beside
	// the other parallel tests, once the serial ones (restarts, request counts) are done.
	t.Parallel()
	publish(t, "worker", "1.0.0", stuckManifests, `{"podAnnotations": {}}`)
	for _, tc := range []struct {
		name, tenant, values string
		message              string
	}{
		{"pods that never pass readiness", "stuck-unready", `{"podAnnotations": {"` + localcluster.NeverReadyAnnotation + `": "true"}}`, "has timed out progressing"},
		{"an image that cannot be pulled", "stuck-image", `{"image": "` + localcluster.UnpullableImage + `"}`, "has timed out progressing"},
	} {
		t.Run(tc.name+" leave the tenant Reconciling, then Stalled, until a fixed version", func(t *testing.T) {
			ctx := context.Background()
			g := NewWithT(t)
			tenant := newTenant(tc.tenant, pin("worker", "1.0.0", tc.values))
			g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
			t.Cleanup(func() { deleteTenant(t, tenant.Name) })

			reconciling := waitComponents(t, tenant.Name, tenancyv1alpha1.ReasonRollingOut)
			g.Expect(kstatus(g, reconciling).Status).To(Equal(status.InProgressStatus))

			stuck := waitComponents(t, tenant.Name, tenancyv1alpha1.ReasonRolloutFailed)
			g.Expect(kstatus(g, stuck).Status).To(Equal(status.FailedStatus))
			g.Expect(condition(stuck, tenancyv1alpha1.StalledCondition).Message).To(And(
				ContainSubstring("worker: Deployment worker: Progress deadline exceeded"), ContainSubstring(tc.message)))
			g.Expect(stuck.Status.Components).To(ConsistOf(And(HaveField("Ready", false), HaveField("Version", "1.0.0"))))

			got := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tenant.Name}, got)).To(Succeed())
			patch := client.MergeFrom(got.DeepCopy())
			got.Spec.Components[0].Values = nil
			g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
			rolledOut(t, tenant.Name, "worker")
		})
	}
}

// The shipped sample (a ComponentTemplate and a tenant pinning it) works as documented.
func TestComponentSampleRenders(t *testing.T) {
	g := NewWithT(t)
	applySamples(t, "components", "web-1.0.0.yaml", "tenant.yaml")
	g.Eventually(func(g Gomega) {
		d := renderedDeployment(g, "pied-piper", "web")
		g.Expect(*d.Spec.Replicas).To(Equal(int32(3)))
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/example/web:1.0.0"))
	}).WithTimeout(timeout).Should(Succeed())
	rolledOut(t, "pied-piper", "web")
	// The sample's tenant runs on node pool pool-a: its pods are on that pool's node.
	for _, p := range waitPodsRunning(t, opConfig.NamespaceName("pied-piper"), 3) {
		g.Expect(p.Spec.NodeName).To(Equal("pool-a-0"), "pod %s", p.Name)
	}
}

// applySamples creates shipped sample objects (one per file) and deletes them when the test ends.
func applySamples(t *testing.T, dir string, files ...string) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", dir, file))
		g.Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(data, &u.Object)).To(Succeed())
		g.Expect(k8s.Create(ctx, u)).To(Succeed())
		t.Cleanup(func() {
			if u.GetKind() == "Tenant" {
				deleteTenant(t, u.GetName())
				return
			}
			_ = k8s.Delete(ctx, u)
		})
	}
}
