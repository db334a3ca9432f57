package controller_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// waitStalled waits until the tenant is Stalled for reason, and returns the Stalled message.
func waitStalled(t *testing.T, name, reason string) string {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{}
	var message string
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
		c := condition(tenant, tenancyv1alpha1.StalledCondition)
		g.Expect(c).NotTo(BeNil(), "conditions: %+v", tenant.Status.Conditions)
		g.Expect(c.Reason).To(Equal(reason))
		message = c.Message
	}).WithTimeout(timeout).Should(Succeed())
	return message
}

// Finding 8: two tenants could list the same domain, and so both publish Ingresses for it; and a
// wildcard over a public suffix took every company's names under it. A domain (or a wildcard
// over it, or a name under a wildcard) is one tenant's: the later tenant stalls naming the
// holder, its namespace never admits the domain, and it takes the domain once the holder
// gives it up. Everything else of the stalled tenant's namespace is kept as it should be.
func TestADomainBelongsToOneTenant(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("dom-holder", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"shop.dom.example.org", "*.apps.dom.example.org"}
	}))

	cases := []struct {
		name, tenant string
		domains      []tenancyv1alpha1.Domain
		want         []string
	}{
		{"the same domain", "dom-same", []tenancyv1alpha1.Domain{"shop.dom.example.org"}, []string{"shop.dom.example.org is held by tenant dom-holder"}},
		{"a name under the holder's wildcard", "dom-under", []tenancyv1alpha1.Domain{"api.apps.dom.example.org"}, []string{"api.apps.dom.example.org is held by tenant dom-holder"}},
		{"a wildcard over the holder's name", "dom-over", []tenancyv1alpha1.Domain{"*.dom.example.org"}, []string{"*.dom.example.org is held by tenant dom-holder"}},
		{"a wildcard over a public suffix", "dom-suffix", []tenancyv1alpha1.Domain{"*.co.uk"}, []string{"*.co.uk is a wildcard over the public suffix co.uk"}},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused to a later tenant, naming why", func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(k8s.Create(ctx, newTenant(tc.tenant, func(t *tenancyv1alpha1.Tenant) { t.Spec.Domains = tc.domains }))).To(Succeed())
			t.Cleanup(func() { deleteTenant(t, tc.tenant) })
			message := waitStalled(t, tc.tenant, tenancyv1alpha1.ReasonDomainConflict)
			for _, w := range tc.want {
				g.Expect(message).To(ContainSubstring(w))
			}
			// The rest of the namespace is kept as it should be; the domain never reaches it.
			ns := namespace(t, tc.tenant)
			for _, d := range tc.domains {
				g.Expect(strings.Split(ns.Annotations[tenancyv1alpha1.DomainsAnnotation], ",")).NotTo(ContainElement(string(d)))
			}
		})
	}

	t.Run("a tenant takes the domain once the holder gives it up, and keeps it", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Create(ctx, newTenant("dom-next", func(t *tenancyv1alpha1.Tenant) {
			t.Spec.Domains = []tenancyv1alpha1.Domain{"shop.dom.example.org"}
		}))).To(Succeed())
		t.Cleanup(func() { deleteTenant(t, "dom-next") })
		g.Expect(waitStalled(t, "dom-next", tenancyv1alpha1.ReasonDomainConflict)).To(ContainSubstring("dom-holder"))
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "dom-holder"}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"domains":["*.apps.dom.example.org"]}}`)))).To(Succeed())
		waitReady(t, "dom-next")
		g.Expect(namespace(t, "dom-next").Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, "shop.dom.example.org"))

		// The older tenant listing it again does not take it from the tenant now serving it.
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "dom-holder"}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"domains":["*.apps.dom.example.org","shop.dom.example.org"]}}`)))).To(Succeed())
		g.Expect(waitStalled(t, "dom-holder", tenancyv1alpha1.ReasonDomainConflict)).To(ContainSubstring("shop.dom.example.org is held by tenant dom-next"))
		g.Expect(namespace(t, "dom-holder").Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, "*.apps.dom.example.org"))
		g.Expect(namespace(t, "dom-next").Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, "shop.dom.example.org"))
	})
}
