package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/test/testenv"
)

// handedOverManifests is a component whose Deployment gives a first replica count and a first
// value of an annotation a service mesh rewrites; the HorizontalPodAutoscaler beside it takes
// the count over once its minimum is above it. revisionHistoryLimit is Landlord's throughout.
const handedOverManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  annotations:
    mesh.example.com/status: pending
spec:
  replicas: 2
  revisionHistoryLimit: {{ .Values.history }}
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: api
          image: {{ .Component.ImageRef }}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
          resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {memory: 64Mi}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: {{ .Values.minReplicas }}
  maxReplicas: 5
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`

// handedOver are the fields the template declares others own.
var handedOver = []tenancyv1alpha1.FieldOwnedByOthers{
	{Group: "apps", Kind: "Deployment", Name: "api", JSONPointer: "/spec/replicas"},
	{Kind: "Deployment", JSONPointer: "/metadata/annotations/mesh.example.com~1status"},
}

// publishOwnedByOthers creates a ComponentTemplate declaring fields others own, and removes it
// when the test ends.
func publishOwnedByOthers(t *testing.T, component, version, manifests, values string, fields []tenancyv1alpha1.FieldOwnedByOthers) {
	t.Helper()
	ct := &tenancyv1alpha1.ComponentTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.ComponentTemplateName(component, version)},
		Spec: tenancyv1alpha1.ComponentTemplateSpec{
			Component: component, Version: version, Image: "registry.example.com/" + component,
			Manifests: manifests, Values: jsonValues(values), FieldsOwnedByOthers: fields,
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), ct)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ct) })
}

// fieldOwners are the field managers that own a field of obj, as its managed fields say: the
// path is of field names ("spec", "replicas").
func fieldOwners(g Gomega, obj metav1.Object, path ...string) []string {
	var owners []string
	for _, e := range obj.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		g.Expect(json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields)).To(Succeed())
		found := true
		for _, name := range path {
			next, ok := fields["f:"+name].(map[string]any)
			if !ok {
				found = false
				break
			}
			fields = next
		}
		if found {
			owners = append(owners, e.Manager)
		}
	}
	return owners
}

// A template that declares spec.replicas and an annotation as owned by others gives them their
// first values, and keeps them while no one else has written them: an apply that left out a
// field only Landlord owns would delete it. Once Kubernetes' own autoscaler (the cluster runs
// it) has scaled the Deployment and a mesh has rewritten the annotation, Landlord leaves both:
// no write, no DriftRepaired event, no landlord_drift_repairs_total, and a resync of the tenant
// makes no request. Every field the template does not declare is still repaired, and a Frozen
// tenant still runs nothing.
func TestFieldsOwnedByOthersAreHandedOverOnceAnotherManagerWritesThem(t *testing.T) {
	ctx := context.Background()
	publishOwnedByOthers(t, "handed", "1.0.0", handedOverManifests, `{"history": 5, "minReplicas": 1}`, handedOver)
	const name = "handed"
	createTenant(t, newTenant(name, pin("handed", "1.0.0", "")))
	key := client.ObjectKey{Namespace: opConfig.NamespaceName(name), Name: "api"}

	t.Run("the template's values are the first ones, and stay Landlord's while no one else writes them", func(t *testing.T) {
		g := NewWithT(t)
		rolledOut(t, name, "api")
		d := renderedDeployment(g, name, "api")
		g.Expect(ptr.Deref(d.Spec.Replicas, 1)).To(Equal(int32(2)))
		g.Expect(d.Annotations).To(HaveKeyWithValue("mesh.example.com/status", "pending"))

		// New values change the Deployment: Landlord writes it, and the fields it declared
		// others own, which no one else has written, keep their values rather than being
		// deleted with Landlord's ownership.
		setComponentValues(t, name, "handed", "1.0.0", `{"history": 3, "minReplicas": 1}`)
		g.Eventually(func(g Gomega) {
			g.Expect(ptr.Deref(renderedDeployment(g, name, "api").Spec.RevisionHistoryLimit, 0)).To(Equal(int32(3)))
		}).WithTimeout(timeout).Should(Succeed())
		rolledOut(t, name, "api")
		d = renderedDeployment(g, name, "api")
		g.Expect(ptr.Deref(d.Spec.Replicas, 1)).To(Equal(int32(2)), "the count was deleted with Landlord's ownership")
		g.Expect(d.Annotations).To(HaveKeyWithValue("mesh.example.com/status", "pending"))
		g.Expect(fieldOwners(g, d, "spec", "replicas")).To(ConsistOf("landlord"))
	})

	t.Run("once the autoscaler and the mesh have written them, Landlord leaves them and writes nothing", func(t *testing.T) {
		g := NewWithT(t)
		repairs := driftRepairs(g, "Deployment")
		mesh := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, key, mesh)).To(Succeed())
		g.Expect(k8s.Patch(ctx, mesh, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"mesh.example.com/status":"injected"}}}`)), client.FieldOwner("mesh"))).To(Succeed())
		// The autoscaler's minimum goes above the template's count: it scales the Deployment.
		setComponentValues(t, name, "handed", "1.0.0", `{"history": 3, "minReplicas": 3}`)
		g.Eventually(func(g Gomega) {
			g.Expect(ptr.Deref(renderedDeployment(g, name, "api").Spec.Replicas, 1)).To(Equal(int32(3)), "the autoscaler has not sized the Deployment")
		}).WithTimeout(2 * timeout).Should(Succeed())
		rolledOut(t, name, "api")

		expectNoRequestsOnResync(t, name)
		d := renderedDeployment(g, name, "api")
		g.Expect(ptr.Deref(d.Spec.Replicas, 1)).To(Equal(int32(3)))
		g.Expect(d.Annotations).To(HaveKeyWithValue("mesh.example.com/status", "injected"))
		g.Expect(fieldOwners(g, d, "spec", "replicas")).NotTo(ContainElement("landlord"))
		g.Expect(fieldOwners(g, d, "metadata", "annotations", "mesh.example.com/status")).To(ConsistOf("mesh"))
		g.Expect(driftRepairs(g, "Deployment")).To(Equal(repairs))
		g.Expect(tenantEvents(g, name, writes.ReasonDriftRepaired)).To(BeEmpty())
	})

	t.Run("a field the template does not declare is still repaired, and the handed-over ones are left", func(t *testing.T) {
		g := NewWithT(t)
		repairs := driftRepairs(g, "Deployment")
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, key, d)).To(Succeed())
		g.Expect(k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"revisionHistoryLimit":1}}`)), client.FieldOwner("someone"))).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(ptr.Deref(renderedDeployment(g, name, "api").Spec.RevisionHistoryLimit, 0)).To(Equal(int32(3)))
		}).WithTimeout(timeout).Should(Succeed())
		g.Eventually(func() float64 { return driftRepairs(g, "Deployment") }).WithTimeout(timeout).Should(Equal(repairs + 1))
		g.Eventually(func(g Gomega) []string { return tenantEvents(g, name, writes.ReasonDriftRepaired) }).
			WithTimeout(timeout).Should(ConsistOf(ContainSubstring("Deployment/" + key.Namespace + "/api")))
		d = renderedDeployment(g, name, "api")
		g.Expect(ptr.Deref(d.Spec.Replicas, 1)).To(Equal(int32(3)))
		g.Expect(d.Annotations).To(HaveKeyWithValue("mesh.example.com/status", "injected"))
		g.Expect(fieldOwners(g, d, "spec", "replicas")).NotTo(ContainElement("landlord"))
	})

	t.Run("an object the operator's cache lost sight of is not taken for a new one: the autoscaler's count stays", func(t *testing.T) {
		g := NewWithT(t)
		// Without Landlord's label the Deployment leaves the operator's cache, as a tenant's
		// objects are out of a shard's cache when it takes the tenant over: the apply that puts
		// the label back must find the object on the API server, not send the template's count
		// as to a new one. Only Landlord's own identity may take its label off. Every count the
		// API server stores meanwhile is watched: the autoscaler would size the Deployment back
		// soon after, so only the watch sees a count sent over its own.
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, key, d)).To(Succeed())
		w, err := env.Clientset.AppsV1().Deployments(key.Namespace).Watch(ctx, metav1.ListOptions{
			FieldSelector: "metadata.name=" + key.Name, ResourceVersion: d.ResourceVersion,
		})
		g.Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, tenancyv1alpha1.ManagedByLabel)
		g.Expect(impersonate(t, testenv.OperatorUser).Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		var counts []int32
		relabelled := false
		for ev := range w.ResultChan() {
			seen, ok := ev.Object.(*appsv1.Deployment)
			g.Expect(ok).To(BeTrue(), "the watch said %s: %v", ev.Type, ev.Object)
			counts = append(counts, ptr.Deref(seen.Spec.Replicas, 1))
			if seen.Labels[tenancyv1alpha1.ManagedByLabel] == "landlord" {
				relabelled = true
				break
			}
		}
		g.Expect(relabelled).To(BeTrue(), "Landlord never put its label back")
		g.Expect(counts).To(HaveEach(Equal(int32(3))), "the counts stored from the label's removal to its return")
		d = renderedDeployment(g, name, "api")
		g.Expect(d.Annotations).To(HaveKeyWithValue("mesh.example.com/status", "injected"))
		g.Expect(fieldOwners(g, d, "spec", "replicas")).NotTo(ContainElement("landlord"))
	})

	t.Run("a frozen tenant still scales to zero, and thaws to the template's count for the autoscaler to take over", func(t *testing.T) {
		g := NewWithT(t)
		setState(t, name, tenancyv1alpha1.StateFrozen)
		g.Eventually(func(g Gomega) {
			g.Expect(ptr.Deref(renderedDeployment(g, name, "api").Spec.Replicas, 1)).To(BeZero())
		}).WithTimeout(timeout).Should(Succeed())
		setState(t, name, tenancyv1alpha1.StateActive)
		g.Eventually(func(g Gomega) {
			g.Expect(ptr.Deref(renderedDeployment(g, name, "api").Spec.Replicas, 1)).To(Equal(int32(3)), "the autoscaler has not taken the thawed Deployment over")
		}).WithTimeout(2 * timeout).Should(Succeed())
		rolledOut(t, name, "api")
	})
}

// setComponentValues sets the values of a tenant's one component.
func setComponentValues(t *testing.T, tenant, component, version, values string) {
	t.Helper()
	patch := []byte(`{"spec":{"components":[{"name":"` + component + `","version":"` + version + `","values":` + values + `}]}}`)
	NewWithT(t).Expect(k8s.Patch(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tenant}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// A template declaring that others own a field Landlord must own, or something that is not a
// field of an object, is refused when it is published, and the refusal names the entry and the
// pointer. The operator reads declarations by the same rules: none it would refuse is admitted.
func TestAFieldOwnedByOthersThatLandlordMustOwnIsRefusedAtAdmission(t *testing.T) {
	cases := []struct {
		name  string
		field tenancyv1alpha1.FieldOwnedByOthers
		// says is what the refusal says besides the entry's path.
		says string
	}{
		{"the object's name", tenancyv1alpha1.FieldOwnedByOthers{Kind: "Deployment", JSONPointer: "/metadata/name"},
			"jsonPointer /metadata/name is metadata Landlord must own"},
		{"the object's namespace", tenancyv1alpha1.FieldOwnedByOthers{Kind: "Deployment", JSONPointer: "/metadata/namespace"},
			"jsonPointer /metadata/namespace is metadata Landlord must own"},
		{"every label at once", tenancyv1alpha1.FieldOwnedByOthers{Kind: "Deployment", JSONPointer: "/metadata/labels"},
			"jsonPointer /metadata/labels is metadata Landlord must own"},
		{"Landlord's tenant label", tenancyv1alpha1.FieldOwnedByOthers{Kind: "Deployment", JSONPointer: "/metadata/labels/tenancy.landlord.dev~1tenant"},
			"jsonPointer /metadata/labels/tenancy.landlord.dev~1tenant is a label or annotation of Landlord"},
		{"the managed-by label", tenancyv1alpha1.FieldOwnedByOthers{Kind: "Deployment", JSONPointer: "/metadata/labels/app.kubernetes.io~1managed-by"},
			"jsonPointer /metadata/labels/app.kubernetes.io~1managed-by is a label or annotation of Landlord"},
		{"Landlord's applied-hash annotation", tenancyv1alpha1.FieldOwnedByOthers{Kind: "Deployment", JSONPointer: "/metadata/annotations/tenancy.landlord.dev~1applied-hash"},
			"jsonPointer /metadata/annotations/tenancy.landlord.dev~1applied-hash is a label or annotation of Landlord"},
		{"status", tenancyv1alpha1.FieldOwnedByOthers{Kind: "Deployment", JSONPointer: "/status/replicas"},
			"jsonPointer /status/replicas is never owned by others"},
		{"an element of a list", tenancyv1alpha1.FieldOwnedByOthers{Kind: "Deployment", JSONPointer: "/spec/template/spec/containers/0/resources"},
			"jsonPointer /spec/template/spec/containers/0/resources names an element of a list"},
		{"a path that is not a JSON pointer", tenancyv1alpha1.FieldOwnedByOthers{Kind: "Deployment", JSONPointer: "spec.replicas"},
			"jsonPointer spec.replicas is not a JSON pointer to a field"},
	}
	for _, tc := range cases {
		t.Run("a declaration of "+tc.name+" is refused naming it", func(t *testing.T) {
			g := NewWithT(t)
			fields := []tenancyv1alpha1.FieldOwnedByOthers{{Group: "apps", Kind: "Deployment", JSONPointer: "/spec/replicas"}, tc.field}
			ct := &tenancyv1alpha1.ComponentTemplate{
				ObjectMeta: metav1.ObjectMeta{Name: "refused-1.0.0"},
				Spec: tenancyv1alpha1.ComponentTemplateSpec{
					Component: "refused", Version: "1.0.0", Manifests: autoscaledManifests, FieldsOwnedByOthers: fields,
				},
			}
			err := k8s.Create(context.Background(), ct, client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(And(ContainSubstring("spec.fieldsOwnedByOthers[1].jsonPointer"), ContainSubstring(tc.says)))

			_, err = component.FieldsOwnedByOthers(fields)
			g.Expect(err).To(MatchError(And(ContainSubstring("spec.fieldsOwnedByOthers[1].jsonPointer"), ContainSubstring(tc.says))))
		})
	}
	t.Run("a declaration of a kind that is not a kind is refused naming it", func(t *testing.T) {
		g := NewWithT(t)
		ct := &tenancyv1alpha1.ComponentTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "refused-1.0.0"},
			Spec: tenancyv1alpha1.ComponentTemplateSpec{
				Component: "refused", Version: "1.0.0", Manifests: autoscaledManifests,
				FieldsOwnedByOthers: []tenancyv1alpha1.FieldOwnedByOthers{{Kind: "apps/Deployment", JSONPointer: "/spec/replicas"}},
			},
		}
		err := k8s.Create(context.Background(), ct, client.DryRunAll)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(And(ContainSubstring("spec.fieldsOwnedByOthers[0].kind"), ContainSubstring("must be a kind, such as Deployment")))
	})
}
