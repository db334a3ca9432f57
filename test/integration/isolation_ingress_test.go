package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// A tenant must not reach other tenants through the shared ingress controller. An
// ExternalName Service pointing at svc.tenant-b.svc.cluster.local, used as an Ingress backend,
// makes the controller proxy into tenant B (the CVE-2021-25740 pattern); an Ingress naming
// another controller's class, or carrying annotations that inject controller configuration
// (snippets, auth URLs, server aliases, mirrors), reaches past the tenant's own routes. All of
// them are refused, as the tenant admin, with a message saying what to do instead.
func TestIngressesReachOnlyTheTenantsOwnServices(t *testing.T) {
	createTenant(t, newTenant("iso-ingress", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"shop.example.com"}
		t.Spec.IngressClasses = []tenancyv1alpha1.IngressClassName{"public", "internal"}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "ingress-admin"}}
	}))
	createTenant(t, newTenant("iso-ingress-any", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"any.example.com"}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "ingress-admin"}}
	}))
	const ns, anyNS = "tenant-iso-ingress", "tenant-iso-ingress-any"
	ctx := context.Background()
	admin := impersonate(t, "ingress-admin")
	waitForRefusal(t, admin, policy.ServiceExposure, externalName(ns, "probe", "probe.invalid"))
	waitForRefusal(t, admin, policy.IngressClasses, classIngress(ns, "probe", "shop.example.com", "probe"))
	waitForRefusal(t, admin, policy.IngressAnnotations, annotatedIngress(ns, "probe", "public", "nginx.ingress.kubernetes.io/server-snippet", "return 200;"))

	refused := []struct {
		name    string
		obj     client.Object
		message string
	}{
		{"an ExternalName Service pointing into another tenant", externalName(ns, "neighbour", "web.tenant-iso-ingress-any.svc.cluster.local"),
			"Services of type ExternalName are not allowed in tenant-iso-ingress: "},
		{"an ExternalName Service pointing outside the cluster", externalName(ns, "outside", "db.example.net"),
			"Services of type ExternalName are not allowed in tenant-iso-ingress: "},
		{"an ExternalName Service in a tenant without an Ingress class list", externalName(anyNS, "neighbour", "web.tenant-iso-ingress.svc.cluster.local"),
			"Services of type ExternalName are not allowed in tenant-iso-ingress-any: "},
		{"an Ingress naming a class the tenant may not use", classIngress(ns, "other-class", "shop.example.com", "platform-admin"),
			"Ingress class platform-admin is not allowed in tenant-iso-ingress: set spec.ingressClassName to one of public, internal"},
		{"an Ingress naming a class it may not use in the legacy annotation", annotatedIngress(ns, "legacy-class", "", "kubernetes.io/ingress.class", "platform-admin"),
			"Ingress class platform-admin is not allowed in tenant-iso-ingress: set spec.ingressClassName to one of public, internal"},
		{"an Ingress naming no class while the tenant has a list", classIngress(ns, "no-class", "shop.example.com", ""),
			"Ingresses in tenant-iso-ingress must name their class: set spec.ingressClassName to one of public, internal"},
	}
	// Annotations that inject configuration into the shared controller, as the controllers
	// document them; the list the policy refuses is policy.InjectingIngressAnnotations.
	for _, key := range []string{
		"nginx.ingress.kubernetes.io/configuration-snippet",
		"nginx.ingress.kubernetes.io/server-snippet",
		"nginx.ingress.kubernetes.io/auth-snippet",
		"nginx.ingress.kubernetes.io/stream-snippet",
		"nginx.org/server-snippets",
		"nginx.org/location-snippets",
		"example.com/anything-snippet",
		"nginx.ingress.kubernetes.io/auth-url",
		"nginx.ingress.kubernetes.io/auth-signin",
		"nginx.ingress.kubernetes.io/server-alias",
		"nginx.ingress.kubernetes.io/mirror-target",
		"nginx.ingress.kubernetes.io/mirror-uri",
		"nginx.ingress.kubernetes.io/mirror-host",
		"nginx.ingress.kubernetes.io/auth-tls-match-cn",
		"nginx.ingress.kubernetes.io/auth-proxy-set-headers",
		"ingress.example.com/auth-url", // ingress-nginx under another --annotations-prefix
		"haproxy.org/backend-config-snippet",
		"haproxy.org/frontend-config-snippet",
		"haproxy-ingress.github.io/config-backend",
		"ingress.kubernetes.io/config-backend",
	} {
		refused = append(refused, struct {
			name    string
			obj     client.Object
			message string
		}{"an Ingress annotated " + key, annotatedIngress(ns, "annotated", "public", key, "x"),
			"the Ingress annotation " + key + " is not allowed in tenant-iso-ingress: "})
	}
	for _, key := range []string{"auth-secret", "auth-tls-secret", "proxy-ssl-secret", "custom-headers"} {
		refused = append(refused, struct {
			name    string
			obj     client.Object
			message string
		}{"an Ingress whose " + key + " annotation names another tenant's object", annotatedIngress(ns, "foreign-ref", "public", "nginx.ingress.kubernetes.io/"+key, anyNS+"/ca"),
			"the Ingress annotations nginx.ingress.kubernetes.io/" + key + "=" + anyNS + "/ca refer to another namespace than tenant-iso-ingress: "})
	}
	for _, tc := range refused {
		t.Run(tc.name+" is refused, saying what to do", func(t *testing.T) {
			err := admin.Create(ctx, tc.obj, client.DryRunAll)
			NewWithT(t).Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			NewWithT(t).Expect(err.Error()).To(ContainSubstring(tc.message))
		})
	}

	admitted := []struct {
		name string
		obj  client.Object
	}{
		{"an Ingress naming an allowed class", classIngress(ns, "public", "shop.example.com", "public")},
		{"an Ingress naming an allowed class in the legacy annotation", annotatedIngress(ns, "legacy", "", "kubernetes.io/ingress.class", "internal")},
		{"an Ingress with annotations that only tune its own routes", func() client.Object {
			i := classIngress(ns, "tuned", "shop.example.com", "public")
			i.Annotations = map[string]string{
				"nginx.ingress.kubernetes.io/proxy-body-size":  "8m",
				"nginx.ingress.kubernetes.io/ssl-redirect":     "true",
				"nginx.ingress.kubernetes.io/rewrite-target":   "/",
				"cert-manager.io/cluster-issuer":               "letsencrypt",
				"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS",
			}
			return i
		}()},
		{"an Ingress whose auth-tls-secret annotation names its own namespace's Secret", annotatedIngress(ns, "own-ca", "public", "nginx.ingress.kubernetes.io/auth-tls-secret", ns+"/ca")},
		{"an Ingress whose auth-secret annotation names a Secret without a namespace", annotatedIngress(ns, "own-users", "public", "nginx.ingress.kubernetes.io/auth-secret", "users")},
		{"an Ingress naming no class in a tenant without a class list", classIngress(anyNS, "no-class", "any.example.com", "")},
		{"an Ingress naming any class in a tenant without a class list", classIngress(anyNS, "any-class", "any.example.com", "whatever")},
		{"a ClusterIP Service", service(ns, "web", corev1.ServiceTypeClusterIP)},
	}
	for _, tc := range admitted {
		t.Run(tc.name+" is admitted", func(t *testing.T) {
			NewWithT(t).Expect(admin.Create(ctx, tc.obj)).To(Succeed())
		})
	}

	t.Run("adding a configuration-injecting annotation to an admitted Ingress is refused", func(t *testing.T) {
		g := NewWithT(t)
		ing := &networkingv1.Ingress{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "public"}, ing)).To(Succeed())
		ing.Annotations = map[string]string{"nginx.ingress.kubernetes.io/configuration-snippet": "proxy_pass http://web.tenant-iso-ingress-any.svc;"}
		err := admin.Update(ctx, ing)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
		ing.Annotations = map[string]string{"team": "web"}
		ing.Labels = map[string]string{"team": "web"}
		g.Expect(admin.Update(ctx, ing)).To(Succeed(), "other annotations and labels stay editable")
	})

	t.Run("a Service changed to ExternalName is refused", func(t *testing.T) {
		g := NewWithT(t)
		svc := &corev1.Service{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, svc)).To(Succeed())
		svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "web.tenant-iso-ingress-any.svc.cluster.local"}
		err := admin.Update(ctx, svc)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
	})
}

// waitForRefusal waits until the named policy refuses the probe, tried as a dry run: the API
// server takes a moment to act on a policy after it is written.
func waitForRefusal(t *testing.T, c client.Client, name string, probe client.Object) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		return c.Create(context.Background(), probe.DeepCopyObject().(client.Object), client.DryRunAll)
	}).WithTimeout(timeout).Should(MatchError(ContainSubstring("ValidatingAdmissionPolicy '"+name+"'")), "%s is not in force yet", name)
}

func externalName(namespace, name, target string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target},
	}
}

// classIngress is an Ingress for host naming class in spec.ingressClassName, or no class.
func classIngress(namespace, name, host, class string) *networkingv1.Ingress {
	i := ingress(namespace, name, host)
	if class != "" {
		i.Spec.IngressClassName = ptr.To(class)
	}
	return i
}

// annotatedIngress is an Ingress for the tenant's host carrying one annotation.
func annotatedIngress(namespace, name, class, key, value string) *networkingv1.Ingress {
	i := classIngress(namespace, name, "shop.example.com", class)
	i.Annotations = map[string]string{key: value}
	return i
}

// A Tenant's Ingress classes are IngressClass names, at most 16, each once; the
// CRD refuses anything else before the operator sees it.
func TestATenantsIngressClassesAreValidatedByTheCRD(t *testing.T) {
	ctx := context.Background()
	invalid := map[string][]tenancyv1alpha1.IngressClassName{
		"a class with capitals":        {"Nginx"},
		"a class with a comma":         {"public,internal"},
		"a class listed twice":         {"public", "public"},
		"more than sixteen classes":    {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"},
		"a class ending with a hyphen": {"public-"},
	}
	for name, classes := range invalid {
		t.Run("a Tenant listing "+name+" is rejected", func(t *testing.T) {
			err := k8s.Create(ctx, newTenant("ingress-classes-invalid", func(t *tenancyv1alpha1.Tenant) { t.Spec.IngressClasses = classes }), client.DryRunAll)
			NewWithT(t).Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
			NewWithT(t).Expect(err.Error()).To(ContainSubstring("spec.ingressClasses"))
		})
	}
	t.Run("a Tenant listing IngressClass names is accepted", func(t *testing.T) {
		NewWithT(t).Expect(k8s.Create(ctx, newTenant("ingress-classes-valid", func(t *tenancyv1alpha1.Tenant) {
			t.Spec.IngressClasses = []tenancyv1alpha1.IngressClassName{"public", "internal.example.com"}
		}), client.DryRunAll)).To(Succeed())
	})
}
