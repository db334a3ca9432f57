package controller_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// gadgetCRD is a kind the operator's role does not grant: nothing in config/rbac names it.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.kinds.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kinds.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

const gadgetManifests = `apiVersion: kinds.example.com/v1
kind: Gadget
metadata:
  name: gadget
spec:
  size: 1
`

const settingsManifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  organization: {{ .Tenant.Organization | quote }}
`

// Finding 3: a component rendering a kind the operator may not list used to start an informer
// that never synced, while holding the lock every other tenant's components wait on. It stalls
// that one tenant, naming the kind, and every other tenant goes on.
func TestAKindTheOperatorMayNotWatchStallsOnlyItsTenant(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	crd, crds := gadgetCRD(), crdClient(t)
	g.Expect(crds.Create(ctx, crd)).To(Succeed())
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crd) })
	g.Eventually(func(g Gomega) {
		g.Expect(crds.Get(ctx, client.ObjectKeyFromObject(crd), crd)).To(Succeed())
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		}
		g.Expect(established).To(BeTrue())
	}).WithTimeout(timeout).Should(Succeed())
	publish(t, "gadget", "1.0.0", gadgetManifests, "")
	publish(t, "settings", "1.0.0", settingsManifests, "")

	blocked := newTenant("kinds-gadget", pin("gadget", "1.0.0", ""))
	g.Expect(k8s.Create(ctx, blocked)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, blocked.Name) })

	t.Run("the tenant rendering the kind stalls with a message naming it", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			got := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: blocked.Name}, got)).To(Succeed())
			c := condition(got, tenancyv1alpha1.StalledCondition)
			g.Expect(c).NotTo(BeNil(), "conditions: %+v", got.Status.Conditions)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(And(ContainSubstring("gadgets.kinds.example.com"), ContainSubstring("may not")))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("another tenant's component rolls out meanwhile", func(t *testing.T) {
		createTenant(t, newTenant("kinds-settings", pin("settings", "1.0.0", "")))
	})
}
