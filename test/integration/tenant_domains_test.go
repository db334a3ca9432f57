package integration

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
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

// Two tenants listing the same domain would both publish Ingresses for it, and a wildcard over
// a public suffix would take every company's names under it. A domain (or a wildcard
// over it, or a name under a wildcard) is one tenant's: the later tenant stalls naming the
// holder, its namespace never admits the domain, and it takes the domain once the holder
// gives it up. Everything else of the stalled tenant's namespace is kept as it should be.
func TestADomainBelongsToOneTenant(t *testing.T) {
	t.Parallel()
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

// A domain handed from one tenant to another must not leave the old holder's Ingresses naming
// it in place: both would serve the host (ingress-nginx keeps the oldest rule) and the old
// holder could still edit their annotations. The domain passes only once nothing of the old
// holder names it: the operator deletes the old holder's Ingresses for it, with an event naming
// each, and the new holder waits, saying for what, while a finalizer holds one.
func TestADomainHandedOverTakesTheOldHoldersIngressesWithIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const shop, keep = "shop.handover.example.org", "keep.handover.example.org"
	const oldNS, newNS = "tenant-ho-old", "tenant-ho-new"
	createTenant(t, newTenant("ho-old", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{shop, keep}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "ho-old-admin"}}
	}))
	oldAdmin := impersonate(t, "ho-old-admin")
	waitForRefusal(t, oldAdmin, policy.IngressHosts, ingress(oldNS, "probe", "probe.invalid"))
	for _, ing := range []*networkingv1.Ingress{ingress(oldNS, "shop", shop), ingress(oldNS, "held", shop), ingress(oldNS, "keep", keep)} {
		NewWithT(t).Expect(oldAdmin.Create(ctx, ing)).To(Succeed())
	}
	// A controller cleaning up after the Ingress (a cloud load balancer's) holds it with a
	// finalizer of its own; a tenant user may not (TestATenantsFinalizerHoldsNoHandover).
	NewWithT(t).Expect(k8s.Patch(ctx, named(&networkingv1.Ingress{}, oldNS, "held"),
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)))).To(Succeed())
	t.Cleanup(func() {
		// Whatever the outcome, the finalizer must not keep the namespace from going.
		_ = k8s.Patch(ctx, named(&networkingv1.Ingress{}, oldNS, "held"), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	createTenant(t, newTenant("ho-new", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "ho-new-admin"}}
	}))
	newAdmin := impersonate(t, "ho-new-admin")

	// The handover: the old holder's spec drops the domain, the new holder's lists it.
	g := NewWithT(t)
	g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "ho-old"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"domains":["`+keep+`"]}}`)))).To(Succeed())
	g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "ho-new"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"domains":["`+shop+`"]}}`)))).To(Succeed())

	t.Run("the old holder's Ingresses for the domain are deleted, each named in an event", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: oldNS, Name: "shop"}, &networkingv1.Ingress{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "expected NotFound, got %v", err)
			live := &networkingv1.Ingress{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: oldNS, Name: "held"}, live)).To(Succeed())
			g.Expect(live.DeletionTimestamp).NotTo(BeNil())
			g.Expect(tenantEvents(g, "ho-new", tenancyv1alpha1.ReasonDomainHandover)).To(ContainElements(
				ContainSubstring("deleted Ingress "+oldNS+"/shop of tenant ho-old"),
				ContainSubstring("deleted Ingress "+oldNS+"/held of tenant ho-old")))
			g.Expect(tenantEvents(g, "ho-old", tenancyv1alpha1.ReasonDomainHandover)).To(ContainElement(
				ContainSubstring("deleted Ingress " + oldNS + "/shop of tenant ho-old: it names " + shop + ", which tenant ho-new takes over")))
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: oldNS, Name: "keep"}, &networkingv1.Ingress{})).To(Succeed(),
			"an Ingress for a domain the old holder keeps stays")
	})

	t.Run("the new holder waits while a finalizer holds one, naming it, and does not serve the domain yet", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "ho-new"}, tenant)).To(Succeed())
			c := condition(tenant, tenancyv1alpha1.DomainsReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(tenancyv1alpha1.ReasonDomainHandover))
			g.Expect(c.Message).To(ContainSubstring(shop))
			g.Expect(c.Message).To(ContainSubstring("Ingress " + oldNS + "/held, deleted and held by finalizers example.com/hold"))
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(namespace(t, "ho-new").Annotations).NotTo(HaveKey(tenancyv1alpha1.DomainsAnnotation))
		err := newAdmin.Create(ctx, ingress(newNS, "shop", shop), client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
	})

	t.Run("the old holder's remaining Ingress for the domain cannot be annotated or relabeled", func(t *testing.T) {
		for name, change := range map[string]func(*networkingv1.Ingress){
			"a redirect annotation": func(i *networkingv1.Ingress) {
				i.Annotations = map[string]string{"nginx.ingress.kubernetes.io/permanent-redirect": "https://old.example.net"}
			},
			"a label": func(i *networkingv1.Ingress) { i.Labels = map[string]string{"team": "web"} },
		} {
			t.Run("adding "+name+" is refused", func(t *testing.T) {
				g := NewWithT(t)
				g.Eventually(func() error {
					live := &networkingv1.Ingress{}
					if err := oldAdmin.Get(ctx, client.ObjectKey{Namespace: oldNS, Name: "held"}, live); err != nil {
						return err
					}
					change(live)
					return oldAdmin.Update(ctx, live, client.DryRunAll)
				}).WithTimeout(timeout).Should(MatchError(ContainSubstring("Ingress hosts " + shop + " are not among the domains of " + oldNS)))
			})
		}
	})

	t.Run("once the old holder removes its finalizer, the new holder alone serves the domain", func(t *testing.T) {
		g := NewWithT(t)
		live := &networkingv1.Ingress{}
		g.Expect(oldAdmin.Get(ctx, client.ObjectKey{Namespace: oldNS, Name: "held"}, live)).To(Succeed())
		live.Finalizers = nil
		g.Expect(oldAdmin.Update(ctx, live)).To(Succeed(), "removing a finalizer stays allowed")
		waitReady(t, "ho-new")
		g.Expect(namespace(t, "ho-new").Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, shop))
		g.Expect(newAdmin.Create(ctx, ingress(newNS, "shop", shop))).To(Succeed())
		all := &networkingv1.IngressList{}
		g.Expect(k8s.List(ctx, all)).To(Succeed())
		var serving []string
		for _, ing := range all.Items {
			for _, rule := range ing.Spec.Rules {
				if rule.Host == shop {
					serving = append(serving, ing.Namespace+"/"+ing.Name)
				}
			}
		}
		g.Expect(serving).To(Equal([]string{newNS + "/shop"}))
	})
}

// routeCRD is a Gateway API route kind served in version, reduced to what Landlord reads of it
// (spec.hostnames): the test cluster does not install the Gateway API.
func routeCRD(kind, version string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name: plural + ".gateway.networking.k8s.io",
			// The API server serves a *.k8s.io group only as an approved API.
			Annotations: map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/3328"},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "gateway.networking.k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// routeOf is a route of the kind and version naming hostname.
func routeOf(kind, version, namespace, name, hostname string) *unstructured.Unstructured {
	route := &unstructured.Unstructured{}
	route.SetAPIVersion("gateway.networking.k8s.io/" + version)
	route.SetKind(kind)
	route.SetNamespace(namespace)
	route.SetName(name)
	route.Object["spec"] = map[string]any{"hostnames": []any{hostname}}
	return route
}

// For Gateway API routes: an HTTPRoute or a TLSRoute of a tenant that gave its domain up can no
// longer be relabeled, and is deleted, named in an event, when another tenant takes the domain.
// The kinds appear after the operator started, as they do when a platform installs the Gateway
// API later; TLSRoute is served in the experimental channel's v1alpha2, as many clusters have it.
func TestADomainHandedOverTakesTheOldHoldersRoutesWithIt(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	installCRD(t, routeCRD("HTTPRoute", "v1"))
	installCRD(t, routeCRD("TLSRoute", "v1alpha2"))

	const shop, oldNS = "shop.routes.example.org", "tenant-rt-old"
	routes := []*unstructured.Unstructured{
		routeOf("HTTPRoute", "v1", oldNS, "shop", shop),
		routeOf("TLSRoute", "v1alpha2", oldNS, "shop-tls", shop),
	}
	createTenant(t, newTenant("rt-old", func(t *tenancyv1alpha1.Tenant) { t.Spec.Domains = []tenancyv1alpha1.Domain{shop} }))
	for _, route := range routes {
		// The API server takes a moment to serve a new kind to a client that has not seen it.
		g.Eventually(func() error { return k8s.Create(ctx, route.DeepCopy()) }).WithTimeout(timeout).Should(Succeed())
	}
	g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "rt-old"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"domains":null}}`)))).To(Succeed())

	t.Run("a label on a route for a domain its tenant gave up is refused", func(t *testing.T) {
		for _, route := range routes {
			NewWithT(t).Eventually(func() error {
				live := route.DeepCopy()
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
					return err
				}
				live.SetLabels(map[string]string{"team": "web"})
				return k8s.Update(ctx, live, client.DryRunAll)
			}).WithTimeout(timeout).Should(MatchError(ContainSubstring("route hostnames "+shop+" are not among the domains of "+oldNS)), route.GetKind())
		}
	})

	t.Run("a tenant taking the domain has the routes deleted, named in events, and then serves it", func(t *testing.T) {
		g := NewWithT(t)
		createTenant(t, newTenant("rt-new", func(t *tenancyv1alpha1.Tenant) { t.Spec.Domains = []tenancyv1alpha1.Domain{shop} }))
		for _, route := range routes {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(route), route.DeepCopy())
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: expected NotFound, got %v", route.GetKind(), err)
			g.Expect(tenantEvents(g, "rt-new", tenancyv1alpha1.ReasonDomainHandover)).To(ContainElement(
				ContainSubstring("deleted " + route.GetKind() + " " + oldNS + "/" + route.GetName() + " of tenant rt-old: it names " + shop)))
		}
		g.Expect(namespace(t, "rt-new").Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, shop))
	})
}

// A tenant that gave its own Ingress a finalizer while it held a domain used to hold the
// handover of that domain to another tenant until an administrator removed it. Tenant users may
// give Ingresses and routes no finalizer; the controllers that clean up after them, and the
// platform's administrators, still may.
func TestATenantsFinalizerHoldsNoHandover(t *testing.T) {
	ctx := context.Background()
	const domain = "shop.finalizer.example.org"
	createTenant(t, newTenant("fin-holder", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{domain}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "fin-holder-admin"}}
	}))
	ns := opConfig.NamespaceName("fin-holder")
	admin := impersonate(t, "fin-holder-admin")
	waitForRefusal(t, admin, policy.IngressHosts, ingress(ns, "probe", "probe.invalid"))
	NewWithT(t).Expect(admin.Create(ctx, ingress(ns, "shop", domain))).To(Succeed())
	held := ingress(ns, "held", domain)
	held.Finalizers = []string{"example.com/hold"}
	finalize := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`))
	expectAttempts(t, []attempt{
		{"a tenant admin creating an Ingress with a finalizer", false, func() error { return admin.Create(ctx, held, client.DryRunAll) }},
		{"a tenant admin adding a finalizer to its Ingress", false, func() error {
			return admin.Patch(ctx, named(&networkingv1.Ingress{}, ns, "shop"), finalize, client.DryRunAll)
		}},
		{"the platform's administrator adding a finalizer to a tenant's Ingress", true, func() error {
			return k8s.Patch(ctx, named(&networkingv1.Ingress{}, ns, "shop"), finalize, client.DryRunAll)
		}},
	}, policy.ServingFinalizers)
}
