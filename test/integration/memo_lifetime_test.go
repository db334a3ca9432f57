package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// mainManifests always render one ConfigMap, and a second one while the tenant asks for it:
// an object a component stops rendering while the component stays.
const mainManifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: main
data:
  tenant: {{ .Tenant.Name | quote }}
{{- if .Values.extra }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: main-extra
data:
  k: v
{{- end }}
`

// remembered is what the tenant reconciler keeps between reconciles.
type remembered struct{ objects, renderings int }

func rememberedNow() remembered {
	return remembered{objects: op.Tenants.Applied.Len(), renderings: op.Tenants.Renderings()}
}

// waitRemembered waits until the reconciler remembers exactly want: it remembers an object
// only once a reconcile finds it in place, so the count settles after the writes.
func waitRemembered(t *testing.T, want remembered) {
	t.Helper()
	NewWithT(t).Eventually(rememberedNow).WithTimeout(timeout).Should(Equal(want))
}

// The reconciler's memory follows what exists: tenants that come and go, components added and
// removed, objects a component stops rendering and shared secrets that stop being shared leave
// nothing remembered behind, however many times it happens.
func TestWhatIsRememberedGoesWithWhatItIsAbout(t *testing.T) {
	ctx := context.Background()
	publish(t, "memo-main", "1.0.0", mainManifests, `{"extra": false}`)
	publish(t, "memo-side", "1.0.0", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: side\n", "")
	storeShared(t, "memo-key", "v1", func(s *corev1.Secret) {
		s.Annotations = map[string]string{tenancyv1alpha1.TenantSelectorAnnotation: "memo=shared"}
	})
	t.Cleanup(func() { unstoreShared(t, "memo-key") })
	waitIdle(t)
	base := rememberedNow()

	// What the tenant has on top of its plain state, and what that adds to what is remembered:
	// the side component's rendering and ConfigMap, the extra ConfigMap, the shared copy.
	grow := func(t *tenancyv1alpha1.Tenant) {
		t.Labels = map[string]string{"memo": "shared"}
		t.Spec.Components = []tenancyv1alpha1.Component{
			{Name: "memo-main", Version: "1.0.0", Values: jsonValues(`{"extra": true}`)},
			{Name: "memo-side", Version: "1.0.0"},
		}
	}
	const grownObjects, grownRenderings = 3, 1

	for round := range 3 {
		name := fmt.Sprintf("memo-%d", round)
		ns := opConfig.NamespaceName(name)
		var plain remembered
		// The tenant outlives the subtest that creates it; a failed round still removes it.
		t.Cleanup(func() { deleteTenant(t, name) })

		t.Run(fmt.Sprintf("round %d: a new tenant adds what it is made of", round), func(t *testing.T) {
			NewWithT(t).Expect(k8s.Create(ctx, newTenant(name, pin("memo-main", "1.0.0", "")))).To(Succeed())
			waitReady(t, name)
			// A reconcile of the tenant at rest finds every object in place and remembers it.
			resync(t, name)
			plain = rememberedNow()
			g := NewWithT(t)
			g.Expect(plain.renderings).To(Equal(base.renderings + 1))
			g.Expect(plain.objects).To(BeNumerically(">", base.objects))
		})

		t.Run(fmt.Sprintf("round %d: a component, an object and a shared copy added are remembered", round), func(t *testing.T) {
			g := NewWithT(t)
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
			grow(tenant)
			g.Expect(k8s.Update(ctx, tenant)).To(Succeed())
			g.Eventually(func(g Gomega) {
				for _, cm := range []string{"main-extra", "side"} {
					g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cm}, &corev1.ConfigMap{})).To(Succeed())
				}
				g.Expect(secretValue(g, name, "memo-key")).To(Equal("v1"))
			}).WithTimeout(timeout).Should(Succeed())
			waitReady(t, name)
			waitRemembered(t, remembered{objects: plain.objects + grownObjects, renderings: plain.renderings + grownRenderings})
		})

		t.Run(fmt.Sprintf("round %d: removing them again forgets them", round), func(t *testing.T) {
			g := NewWithT(t)
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
			tenant.Labels = nil
			tenant.Spec.Components = []tenancyv1alpha1.Component{{Name: "memo-main", Version: "1.0.0"}}
			g.Expect(k8s.Update(ctx, tenant)).To(Succeed())
			g.Eventually(func(g Gomega) {
				for _, cm := range []string{"main-extra", "side"} {
					err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cm}, &corev1.ConfigMap{})
					g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap %s: %v", cm, err)
				}
				g.Expect(secretValue(g, name, "memo-key")).To(BeEmpty())
			}).WithTimeout(timeout).Should(Succeed())
			waitReady(t, name)
			waitRemembered(t, plain)
		})

		t.Run(fmt.Sprintf("round %d: a deleted tenant leaves nothing remembered", round), func(t *testing.T) {
			deleteTenant(t, name)
			waitRemembered(t, base)
		})
	}
}
