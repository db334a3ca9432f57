package integration

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/admissionpolicy"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/test/testenv"
)

// The audit judges objects the API server never judged by the rules the policies apply to
// requests. Each case is put to both, the policy as the tenant admin's dry run on the real API
// server: they must agree, and agree with the verdict written here, so that a case neither
// judges cannot pass.
func TestThePolicyAuditJudgesAsThePoliciesDo(t *testing.T) {
	createTenant(t, newTenant("audit-judge", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"shop.example.com", "*.apps.example.com"}
		t.Spec.IngressClasses = []tenancyv1alpha1.IngressClassName{"public", "internal"}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "audit-judge-admin"}}
	}))
	// A tenant whose namespace lists no Ingress classes, as in a fleet that configures none: the
	// class is its own to choose, and the audit must not take any for a breach.
	createTenant(t, newTenant("audit-judge-any", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"judge-any.example.com"}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "audit-judge-admin"}}
	}))
	// A tenant on a node pool of its own, whose pods the node pool policy holds there.
	createTenant(t, newTenant("audit-judge-pool", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"judge-pool.example.com"}
		t.Spec.NodePool = "pool-a"
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "audit-judge-admin"}}
	}))
	const ns, anyNS, poolNS = "tenant-audit-judge", "tenant-audit-judge-any", "tenant-audit-judge-pool"
	ctx := context.Background()
	admin := impersonate(t, "audit-judge-admin")
	waitForAuditedPolicies(t, admin, ns)
	waitForAuditedPolicies(t, admin, anyNS)
	waitForAuditedPolicies(t, admin, poolNS)
	namespaces := map[string]*corev1.Namespace{ns: getNamespace(NewWithT(t), ns), anyNS: getNamespace(NewWithT(t), anyNS), poolNS: getNamespace(NewWithT(t), poolNS)}
	onPool := func(namespace, name, selector string, tolerations ...corev1.Toleration) *corev1.Pod {
		return restrictedPod(namespace, name, func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{tenancyv1alpha1.NodePoolLabel: selector}
			p.Spec.Tolerations = tolerations
		})
	}
	NewWithT(t).Expect(namespaces[ns].Annotations).To(And(
		HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, "shop.example.com,*.apps.example.com"),
		HaveKeyWithValue(tenancyv1alpha1.IngressClassesAnnotation, "public,internal")))
	NewWithT(t).Expect(namespaces[anyNS].Annotations).NotTo(HaveKey(tenancyv1alpha1.IngressClassesAnnotation))

	// own is an Ingress of the tenant's class: only the rule a case is about is broken.
	own := func(name, host string) *networkingv1.Ingress { return classIngress(ns, name, host, "public") }
	annotated := func(name string, annotations map[string]string) *networkingv1.Ingress {
		i := own(name, "shop.example.com")
		i.Annotations = annotations
		return i
	}
	withIPs := service(ns, "external-ips", corev1.ServiceTypeClusterIP)
	withIPs.Spec.ExternalIPs = []string{"203.0.113.7"}
	tls := own("foreign-tls", "shop.example.com")
	tls.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"bank.example.com"}}}
	defaultBackend := own("default-backend", "shop.example.com")
	defaultBackend.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
	legacyClass := func(name, spec, legacy string) *networkingv1.Ingress {
		i := classIngress(ns, name, "shop.example.com", spec)
		i.Annotations = map[string]string{policy.LegacyIngressClassAnnotation: legacy}
		return i
	}

	cases := []struct {
		name string
		obj  client.Object
		// breaks is the policy the object breaks, or "" for none; crosses is whether it reaches
		// across tenants, which the audit deletes.
		breaks  string
		crosses bool
	}{
		{"a ClusterIP Service", service(ns, "cluster-ip", corev1.ServiceTypeClusterIP), "", false},
		{"a NodePort Service", service(ns, "node-port", corev1.ServiceTypeNodePort), policy.ServiceExposure, false},
		{"a LoadBalancer Service", service(ns, "load-balancer", corev1.ServiceTypeLoadBalancer), policy.ServiceExposure, false},
		{"an ExternalName Service", externalName(ns, "external-name", "web.tenant-other.svc.cluster.local"), policy.ServiceExposure, true},
		{"a Service with externalIPs", withIPs, policy.ServiceExposure, true},
		{"an Ingress for the tenant's domain", own("own", "shop.example.com"), "", false},
		{"an Ingress for a name its wildcard covers", own("covered", "a.apps.example.com"), "", false},
		{"an Ingress for its wildcard itself", own("wildcard", "*.apps.example.com"), "", false},
		{"an Ingress two labels under its wildcard", own("too-deep", "a.b.apps.example.com"), policy.IngressHosts, true},
		{"an Ingress for a wider wildcard", own("wider", "*.example.com"), policy.IngressHosts, true},
		{"an Ingress for a narrower wildcard", own("narrower", "*.a.apps.example.com"), policy.IngressHosts, true},
		{"an Ingress for the wildcard's parent", own("parent", "apps.example.com"), policy.IngressHosts, true},
		{"an Ingress for another tenant's host", own("other", "bank.example.com"), policy.IngressHosts, true},
		{"an Ingress whose TLS names another host", tls, policy.IngressHosts, true},
		{"an Ingress with a rule for any host", own("hostless", ""), policy.IngressHosts, true},
		{"an Ingress with a default backend", defaultBackend, policy.IngressHosts, true},

		{"an Ingress naming the tenant's other class", classIngress(ns, "internal", "shop.example.com", "internal"), "", false},
		{"an Ingress naming the tenant's class in the legacy annotation only", legacyClass("legacy-own", "", "internal"), "", false},
		{"an Ingress naming the tenant's class both ways", legacyClass("legacy-both", "public", "public"), "", false},
		{"an Ingress naming a class the tenant may not use", classIngress(ns, "other-class", "shop.example.com", "platform-admin"), policy.IngressClasses, true},
		{"an Ingress naming a class the tenant may not use in the legacy annotation", legacyClass("legacy-other", "", "platform-admin"), policy.IngressClasses, true},
		{"an Ingress naming no class in a namespace listing classes", classIngress(ns, "no-class", "shop.example.com", ""), policy.IngressClasses, true},
		{"an Ingress naming no class in a namespace listing none", classIngress(anyNS, "no-class", "judge-any.example.com", ""), "", false},
		{"an Ingress naming any class in a namespace listing none", classIngress(anyNS, "any-class", "judge-any.example.com", "platform-admin"), "", false},

		{"an Ingress with annotations that tune its own routes", annotated("tuned", map[string]string{
			"nginx.ingress.kubernetes.io/proxy-body-size": "8m", "nginx.ingress.kubernetes.io/rewrite-target": "/",
			"cert-manager.io/cluster-issuer": "letsencrypt", "example.com/snippet-count": "2",
		}), "", false},
		{"an Ingress with a server-snippet", annotated("server-snippet", map[string]string{"nginx.ingress.kubernetes.io/server-snippet": "return 200;"}), policy.IngressAnnotations, true},
		{"an Ingress with a configuration-snippet", annotated("configuration-snippet", map[string]string{"nginx.ingress.kubernetes.io/configuration-snippet": "proxy_pass http://x;"}), policy.IngressAnnotations, true},
		{"an Ingress with NGINX Inc.'s location snippets", annotated("location-snippets", map[string]string{"nginx.org/location-snippets": "x"}), policy.IngressAnnotations, true},
		{"an Ingress with any controller's snippet", annotated("any-snippet", map[string]string{"example.com/anything-snippet": "x"}), policy.IngressAnnotations, true},
		{"an Ingress with a snippet under no prefix", annotated("bare-snippet", map[string]string{"server-snippet": "x"}), policy.IngressAnnotations, true},
		{"an Ingress with an auth-url under another prefix", annotated("auth-url", map[string]string{"ingress.example.com/auth-url": "http://web.tenant-other.svc"}), policy.IngressAnnotations, true},
		{"an Ingress with a server alias", annotated("server-alias", map[string]string{"nginx.ingress.kubernetes.io/server-alias": "bank.example.com"}), policy.IngressAnnotations, true},
		{"an Ingress with a mirror target", annotated("mirror-target", map[string]string{"nginx.ingress.kubernetes.io/mirror-target": "http://x"}), policy.IngressAnnotations, true},
		{"an Ingress with an annotation naming proxy-pass", annotated("proxy-pass", map[string]string{"example.com/custom-proxy-pass-to": "x"}), policy.IngressAnnotations, true},
		{"an Ingress with haproxy-ingress configuration", annotated("haproxy-config", map[string]string{"haproxy-ingress.github.io/config-backend": "x"}), policy.IngressAnnotations, true},
		{"an Ingress whose auth-tls-secret names its own namespace's Secret", annotated("own-ca", map[string]string{"nginx.ingress.kubernetes.io/auth-tls-secret": ns + "/ca"}), "", false},
		{"an Ingress whose auth-secret names a Secret without a namespace", annotated("own-users", map[string]string{"nginx.ingress.kubernetes.io/auth-secret": "users"}), "", false},
		{"an Ingress whose auth-tls-secret names another tenant's Secret", annotated("foreign-ca", map[string]string{"nginx.ingress.kubernetes.io/auth-tls-secret": anyNS + "/ca"}), policy.IngressAnnotations, true},
		{"an Ingress whose custom-headers name a namespace that begins with its own namespace's name", annotated("foreign-prefix", map[string]string{"nginx.ingress.kubernetes.io/custom-headers": ns + "-other/headers"}), policy.IngressAnnotations, true},

		{"a pod on its tenant's pool", onPool(poolNS, "own-pool", "pool-a", poolToleration("pool-a")), "", false},
		{"a pod naming another pool", onPool(poolNS, "other-pool", "pool-b", poolToleration("pool-a")), policy.NodePool, true},
		{"a pod tolerating another pool's taint", onPool(poolNS, "other-taint", "pool-a", poolToleration("pool-a"), poolToleration("pool-b")), policy.NodePool, true},
		{"a pod naming a pool in a namespace without one", onPool(ns, "pool-less", "pool-a", poolToleration("pool-a")), policy.NodePool, true},
		{"a pod on no pool in a namespace without one", restrictedPod(ns, "shared-nodes"), "", false},

		{"a NetworkPolicy opening the tenant's pods to each other", netpol(ns, "own-pods", ingressFrom(ownPods)), "", false},
		{"a NetworkPolicy opening them to a platform namespace by name", netpol(ns, "from-monitoring", ingressFrom(namespaceNamed("monitoring"))), "", false},
		{"a NetworkPolicy opening egress to the tenant's own namespace by expression", netpol(ns, "own-expression", egressTo(namespaceNamed(ns, ns))), "", false},
		{"a NetworkPolicy opening DNS at the node-local cache", netpol(ns, "node-dns", withPorts(egressTo(ipBlock(nodeLocalDNS)),
			networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))}, networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(53))})), "", false},
		{"a NetworkPolicy opening a public address", netpol(ns, "public", egressTo(ipBlock("203.0.113.0/24"))), "", false},
		{"a NetworkPolicy opening ingress from everyone", netpol(ns, "from-everyone", func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		}), policy.NetworkPolicyPeers, true},
		{"a NetworkPolicy opening egress to another tenant's namespace", netpol(ns, "to-neighbour", egressTo(namespaceNamed(anyNS))), policy.NetworkPolicyPeers, true},
		{"a NetworkPolicy opening egress to a platform namespace", netpol(ns, "to-monitoring", egressTo(namespaceNamed("monitoring"))), policy.NetworkPolicyPeers, true},
		{"a NetworkPolicy selecting namespaces by another label", netpol(ns, "by-team", ingressFrom(networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}})), policy.NetworkPolicyPeers, true},
		{"a NetworkPolicy opening a private range", netpol(ns, "private-range", egressTo(ipBlock("10.0.0.0/8"))), policy.NetworkPolicyPeers, true},
		{"a NetworkPolicy opening a public block around a private one without its exception", netpol(ns, "around-private", egressTo(ipBlock("0.0.0.0/0", "10.0.0.0/8"))), policy.NetworkPolicyPeers, true},
		{"a NetworkPolicy opening the node-local cache beyond DNS", netpol(ns, "node-https", withPorts(egressTo(ipBlock(nodeLocalDNS)),
			networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(443))})), policy.NetworkPolicyPeers, true},
	}
	for _, tc := range cases {
		verdict := " is admitted and passes the audit"
		if tc.breaks != "" {
			verdict = " is refused by " + tc.breaks + " and found by the audit"
		}
		t.Run(tc.name+verdict, func(t *testing.T) {
			g := NewWithT(t)
			policies, crosses := admissionpolicy.Verdict(tc.obj, namespaces[tc.obj.GetNamespace()], policy.NetworkBoundsOf(opConfig.Network))
			err := admin.Create(ctx, tc.obj.DeepCopyObject().(client.Object), client.DryRunAll)
			if tc.breaks == "" {
				g.Expect(policies).To(BeEmpty(), "the audit finds what the policies admit")
				g.Expect(err).NotTo(HaveOccurred(), "the policies refuse what the audit passes")
				return
			}
			g.Expect(policies).To(Equal([]string{tc.breaks}))
			g.Expect(crosses).To(Equal(tc.crosses))
			g.Expect(err).To(MatchError(ContainSubstring("ValidatingAdmissionPolicy '"+tc.breaks+"'")), "the policy admits what the audit finds")
		})
	}

	// The test cluster has no Gateway API, so routes are held to the policy's rule as written.
	route := func(hostnames ...string) *unstructured.Unstructured {
		r := &unstructured.Unstructured{}
		r.SetAPIVersion("gateway.networking.k8s.io/v1")
		r.SetKind("HTTPRoute")
		if hostnames != nil {
			_ = unstructured.SetNestedStringSlice(r.Object, hostnames, "spec", "hostnames")
		}
		return r
	}
	routes := []struct {
		name   string
		route  *unstructured.Unstructured
		breaks bool
	}{
		{"a route for the tenant's domain and a name its wildcard covers", route("shop.example.com", "a.apps.example.com"), false},
		{"a route for another tenant's host", route("shop.example.com", "bank.example.com"), true},
		{"a route without hostnames", route(), true},
	}
	for _, tc := range routes {
		t.Run(tc.name+map[bool]string{true: " is found by the audit", false: " passes the audit"}[tc.breaks], func(t *testing.T) {
			policies, crosses := admissionpolicy.Verdict(tc.route, namespaces[ns], policy.NetworkBoundsOf(opConfig.Network))
			if tc.breaks {
				NewWithT(t).Expect(policies).To(Equal([]string{policy.RouteHostnames}))
				NewWithT(t).Expect(crosses).To(BeTrue())
			} else {
				NewWithT(t).Expect(policies).To(BeEmpty())
			}
		})
	}
}

// The policies judge requests only, so what a tenant created while they were absent (deleted by
// hand, `kubectl delete -k`, a fresh install over existing tenant namespaces) would outlive
// their return. The operator audits tenant namespaces when it puts a missing policy back: an
// ExternalName Service and an Ingress for another tenant's host are deleted, each named in an
// event on the tenant and counted; the tenant's legitimate Service and Ingress stay.
func TestWhatGotInWhileThePoliciesWereAbsentIsDeletedWhenTheyAreBack(t *testing.T) {
	createTenant(t, newTenant("audit-a", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"shop-a.example.com"}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "audit-a-admin"}}
	}))
	createTenant(t, newTenant("audit-b", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"shop-b.example.com"}
	}))
	const ns = "tenant-audit-a"
	ctx := context.Background()
	admin := impersonate(t, "audit-a-admin")
	waitForAuditedPolicies(t, admin, ns)
	findings := func(g Gomega, name string) float64 { return auditFindings(g, name, config.AuditDelete) }
	g := NewWithT(t)
	servicesBefore, ingressesBefore, netpolsBefore := findings(g, policy.ServiceExposure), findings(g, policy.IngressHosts), findings(g, policy.NetworkPolicyPeers)
	audits := policyAuditsRun
	// The operator created its policies in this cluster as it started, so it audited twice then,
	// the second time seconds later: those are done before the audits of this gap are counted.
	g.Eventually(audits).WithTimeout(timeout).Should(BeNumerically(">=", 2))
	auditsBefore := audits(g)

	// The gap: as an uninstall would, the cluster administrator deletes the bindings, and the
	// operator is not there to put them back.
	restore := withholdPolicyCreates(t)
	for _, name := range []string{policy.ServiceExposure, policy.IngressHosts, policy.NetworkPolicyPeers} {
		g.Expect(k8s.Delete(ctx, named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", name))).To(Succeed())
	}
	crossing := []client.Object{
		externalName(ns, "neighbour", "web.tenant-audit-b.svc.cluster.local"),
		ingress(ns, "steal", "shop-b.example.com"),
		netpol(ns, "from-neighbour", ingressFrom(namespaceNamed("tenant-audit-b"))),
	}
	legitimate := []client.Object{
		service(ns, "web", corev1.ServiceTypeClusterIP),
		ingress(ns, "shop", "shop-a.example.com"),
		netpol(ns, "own-pods", ingressFrom(ownPods)),
	}
	for _, obj := range append(slices.Clone(crossing), legitimate...) {
		// Admitted once the API server has let go of the deleted binding.
		g.Eventually(func() error {
			return admin.Create(ctx, obj.DeepCopyObject().(client.Object))
		}).WithTimeout(timeout).Should(Succeed(), "%T %s was never admitted in the gap", obj, obj.GetName())
	}
	kept := map[string]client.Object{}
	for _, obj := range legitimate {
		live := obj.DeepCopyObject().(client.Object)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
		kept[live.GetName()] = live
	}

	restore()
	t.Run("every object reaching across tenants is deleted, with an event naming it", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			for _, obj := range crossing {
				err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s is still there: %v", obj, obj.GetName(), err)
			}
		}).WithTimeout(2 * timeout).Should(Succeed())
		g.Eventually(func(g Gomega) {
			notes := tenantEvents(g, "audit-a", admissionpolicy.ReasonPolicyViolation)
			g.Expect(notes).To(ContainElement(And(ContainSubstring("deleted Service "+ns+"/neighbour"), ContainSubstring(policy.ServiceExposure), ContainSubstring("ExternalName"))))
			g.Expect(notes).To(ContainElement(And(ContainSubstring("deleted Ingress "+ns+"/steal"), ContainSubstring(policy.IngressHosts), ContainSubstring("shop-b.example.com"))))
			g.Expect(notes).To(ContainElement(And(ContainSubstring("deleted NetworkPolicy "+ns+"/from-neighbour"), ContainSubstring(policy.NetworkPolicyPeers), ContainSubstring("spec.ingress[0].from[0].namespaceSelector"))))
		}).WithTimeout(timeout).Should(Succeed())
	})
	t.Run("each is counted once, by policy and action", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(findings(g, policy.ServiceExposure)).To(Equal(servicesBefore + 1))
			g.Expect(findings(g, policy.IngressHosts)).To(Equal(ingressesBefore + 1))
			g.Expect(findings(g, policy.NetworkPolicyPeers)).To(Equal(netpolsBefore + 1))
		}).WithTimeout(timeout).Should(Succeed())
	})
	t.Run("the tenant's own Service and Ingress are untouched by both audits after the gap", func(t *testing.T) {
		g := NewWithT(t)
		// One audit as the policies are back, one seconds later, once the API server enforces
		// them: what the tenant created in between is judged too.
		g.Eventually(audits).WithTimeout(2 * timeout).Should(Equal(auditsBefore + 2))
		for name, before := range kept {
			live := before.DeepCopyObject().(client.Object)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(before), live)).To(Succeed())
			g.Expect(live.GetUID()).To(Equal(before.GetUID()), "%s was replaced", name)
			g.Expect(live.GetResourceVersion()).To(Equal(before.GetResourceVersion()), "%s was changed", name)
		}
		g.Expect(tenantEvents(g, "audit-a", admissionpolicy.ReasonPolicyViolation)).NotTo(ContainElement(Or(
			ContainSubstring("Service "+ns+"/web"), ContainSubstring("Ingress "+ns+"/shop"))))
		g.Expect(tenantEvents(g, "audit-b", admissionpolicy.ReasonPolicyViolation)).To(BeEmpty())
	})
	waitForAuditedPolicies(t, admin, ns)
}

// An Ingress naming a class its tenant may not use is served by a controller the platform keeps
// for itself or for other tenants, and a snippet runs in the controller every tenant shares:
// what a tenant created while landlord-ingress-classes and landlord-ingress-annotations were
// absent is deleted when the operator puts them back, though every other policy stayed, each
// named in an event on the tenant and counted; the tenant's own Ingress stays as it was.
func TestIngressesThatGotPastTheClassAndAnnotationPoliciesAreDeletedWhenTheyAreBack(t *testing.T) {
	createTenant(t, newTenant("audit-c", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"shop-c.example.com"}
		t.Spec.IngressClasses = []tenancyv1alpha1.IngressClassName{"public"}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "audit-c-admin"}}
	}))
	const ns = "tenant-audit-c"
	ctx := context.Background()
	admin := impersonate(t, "audit-c-admin")
	waitForAuditedPolicies(t, admin, ns)
	g := NewWithT(t)
	classesBefore, annotationsBefore := auditFindings(g, policy.IngressClasses, config.AuditDelete), auditFindings(g, policy.IngressAnnotations, config.AuditDelete)
	// The audits of the operator's start, seconds apart, are done before this gap's are counted.
	g.Eventually(policyAuditsRun).WithTimeout(timeout).Should(BeNumerically(">=", 2))
	auditsBefore := policyAuditsRun(g)

	// The gap: only these two bindings are deleted, so only their return can start the audit.
	restore := withholdPolicyCreates(t)
	for _, name := range []string{policy.IngressClasses, policy.IngressAnnotations} {
		g.Expect(k8s.Delete(ctx, named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", name))).To(Succeed())
	}
	crossing := []client.Object{
		annotatedIngressFor(ns, "snippet", "shop-c.example.com", "public", "nginx.ingress.kubernetes.io/server-snippet", "location /admin { proxy_pass http://web.tenant-audit-a.svc; }"),
		classIngress(ns, "other-class", "shop-c.example.com", "platform-admin"),
	}
	legitimate := annotatedIngressFor(ns, "shop", "shop-c.example.com", "public", "nginx.ingress.kubernetes.io/proxy-body-size", "8m")
	for _, obj := range append(slices.Clone(crossing), legitimate) {
		// Admitted once the API server has let go of the deleted bindings.
		g.Eventually(func() error {
			return admin.Create(ctx, obj.DeepCopyObject().(client.Object))
		}).WithTimeout(timeout).Should(Succeed(), "Ingress %s was never admitted in the gap", obj.GetName())
	}
	kept := &networkingv1.Ingress{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(legitimate), kept)).To(Succeed())

	restore()
	t.Run("the Ingress with a server-snippet and the one of another class are deleted, with events naming them", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			for _, obj := range crossing {
				err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), &networkingv1.Ingress{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Ingress %s is still there: %v", obj.GetName(), err)
			}
		}).WithTimeout(2 * timeout).Should(Succeed())
		g.Eventually(func(g Gomega) {
			notes := tenantEvents(g, "audit-c", admissionpolicy.ReasonPolicyViolation)
			g.Expect(notes).To(ContainElement(And(ContainSubstring("deleted Ingress "+ns+"/snippet"), ContainSubstring(policy.IngressAnnotations),
				ContainSubstring("nginx.ingress.kubernetes.io/server-snippet"))))
			g.Expect(notes).To(ContainElement(And(ContainSubstring("deleted Ingress "+ns+"/other-class"), ContainSubstring(policy.IngressClasses),
				ContainSubstring("platform-admin"))))
		}).WithTimeout(timeout).Should(Succeed())
	})
	t.Run("each is counted once, by policy and action", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(auditFindings(g, policy.IngressAnnotations, config.AuditDelete)).To(Equal(annotationsBefore + 1))
			g.Expect(auditFindings(g, policy.IngressClasses, config.AuditDelete)).To(Equal(classesBefore + 1))
		}).WithTimeout(timeout).Should(Succeed())
	})
	t.Run("the tenant's own Ingress is untouched by both audits after the gap", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(policyAuditsRun).WithTimeout(2 * timeout).Should(Equal(auditsBefore + 2))
		live := &networkingv1.Ingress{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(kept), live)).To(Succeed())
		g.Expect(live.UID).To(Equal(kept.UID), "the Ingress was replaced")
		g.Expect(live.ResourceVersion).To(Equal(kept.ResourceVersion), "the Ingress was changed")
		g.Expect(tenantEvents(g, "audit-c", admissionpolicy.ReasonPolicyViolation)).NotTo(ContainElement(ContainSubstring("Ingress " + ns + "/shop")))
	})
	waitForAuditedPolicies(t, admin, ns)
}

// A pod is held on its tenant's node pool when admitted, and never judged again: one created
// while landlord-node-pool was absent, naming another tenant's dedicated pool and tolerating its
// taint, would run there for good. The operator's audit deletes it when the policy is back, with
// an event naming it; the tenant's pod on the shared nodes stays.
func TestPodsPlacedOnAnotherPoolWhileThePolicyWasAbsentAreDeletedWhenItIsBack(t *testing.T) {
	createTenant(t, newTenant("audit-pods", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "audit-pods-admin"}}
	}))
	const ns = "tenant-audit-pods"
	ctx := context.Background()
	admin := impersonate(t, "audit-pods-admin")
	stray := restrictedPod(ns, "stray", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-a"}
		p.Spec.Tolerations = []corev1.Toleration{poolToleration("pool-a")}
	})
	waitForRefusal(t, admin, policy.NodePool, stray)
	g := NewWithT(t)
	before := auditFindings(g, policy.NodePool, config.AuditDelete)
	g.Eventually(policyAuditsRun).WithTimeout(timeout).Should(BeNumerically(">=", 2))
	auditsBefore := policyAuditsRun(g)

	restore := withholdPolicyCreates(t)
	g.Expect(k8s.Delete(ctx, named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", policy.NodePool))).To(Succeed())
	g.Eventually(func() error {
		return admin.Create(ctx, stray.DeepCopy())
	}).WithTimeout(timeout).Should(Succeed(), "the pod on another tenant's pool was never admitted in the gap")
	// Bound by name to a node of the pool, past the scheduler and the pool's taint, with a spec
	// that names no pool at all.
	bound := restrictedPod(ns, "bound", func(p *corev1.Pod) { p.Spec.NodeName = "pool-a-0" })
	g.Expect(admin.Create(ctx, bound)).To(Succeed())
	shared := restrictedPod(ns, "shared")
	g.Expect(admin.Create(ctx, shared)).To(Succeed())

	restore()
	t.Run("the pods on another tenant's pool are deleted, with events naming them and the pool", func(t *testing.T) {
		g := NewWithT(t)
		for _, pod := range []*corev1.Pod{stray, bound} {
			g.Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
			}).WithTimeout(2*timeout).Should(BeTrue(), "pod %s", pod.Name)
		}
		g.Eventually(func(g Gomega) {
			notes := tenantEvents(g, "audit-pods", admissionpolicy.ReasonPolicyViolation)
			g.Expect(notes).To(ContainElement(And(ContainSubstring("deleted Pod "+ns+"/stray"), ContainSubstring(policy.NodePool), ContainSubstring("pool-a"))))
			g.Expect(notes).To(ContainElement(And(ContainSubstring("deleted Pod "+ns+"/bound"), ContainSubstring("node pool-a-0 of node pool pool-a"))))
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(auditFindings(g, policy.NodePool, config.AuditDelete)).To(Equal(before + 2))
	})
	t.Run("the tenant's pod on the shared nodes is untouched by both audits after the gap", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(policyAuditsRun).WithTimeout(2 * timeout).Should(Equal(auditsBefore + 2))
		live := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shared), live)).To(Succeed())
		g.Expect(live.UID).To(Equal(shared.UID), "the pod was replaced")
		g.Expect(tenantEvents(g, "audit-pods", admissionpolicy.ReasonPolicyViolation)).NotTo(ContainElement(ContainSubstring("Pod " + ns + "/shared")))
	})
	waitForRefusal(t, admin, policy.NodePool, stray)
}

// auditFindings reads the operator's count of objects the audit found breaking the policy and
// acted on so.
func auditFindings(g Gomega, name string, action config.AuditAction) float64 {
	v, err := testenv.OperatorMetric("landlord_policy_audit_findings_total", map[string]string{"policy": name, "action": string(action)})
	g.Expect(err).NotTo(HaveOccurred())
	return v
}

// policyAuditsRun reads the operator's count of audits that ran to the end.
func policyAuditsRun(g Gomega) float64 {
	v, err := testenv.OperatorMetric("landlord_policy_audits_total", nil)
	g.Expect(err).NotTo(HaveOccurred())
	return v
}

// With isolation.audit Report, what breaks a policy stays and is reported.
// Here the object is an Ingress admitted before its tenant gave the domain up, which the policy
// no longer admits; the audit is run as the operator would run it, with the Report action.
func TestTheReportAuditLeavesWhatItFindsInPlace(t *testing.T) {
	createTenant(t, newTenant("audit-report", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"old.example.com", "new.example.com"}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "audit-report-admin"}}
	}))
	const ns = "tenant-audit-report"
	ctx := context.Background()
	g := NewWithT(t)
	admin := impersonate(t, "audit-report-admin")
	waitForAuditedPolicies(t, admin, ns)
	stale := ingress(ns, "stale", "old.example.com")
	g.Expect(admin.Create(ctx, stale)).To(Succeed())
	g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "audit-report"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"domains":["new.example.com"]}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getNamespace(g, ns).Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, "new.example.com"))
	}).WithTimeout(timeout).Should(Succeed())
	reported := func(g Gomega) float64 { return auditFindings(g, policy.IngressHosts, config.AuditReport) }
	before := reported(g)

	auditor := &admissionpolicy.Auditor{Client: op.GetClient(), APIReader: op.GetAPIReader(), Recorder: op.GetEventRecorder("landlord"), Action: config.AuditReport}
	g.Expect(auditor.Audit(ctx)).To(Succeed())

	t.Run("the Ingress stays", func(t *testing.T) {
		live := &networkingv1.Ingress{}
		NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKeyFromObject(stale), live)).To(Succeed())
		NewWithT(t).Expect(live.UID).To(Equal(stale.UID))
	})
	t.Run("it is reported in an event naming it and counted", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(reported(g)).To(Equal(before + 1))
		g.Eventually(func(g Gomega) {
			g.Expect(tenantEvents(g, "audit-report", admissionpolicy.ReasonPolicyViolation)).To(ContainElement(And(
				ContainSubstring("found Ingress "+ns+"/stale"), ContainSubstring(policy.IngressHosts), ContainSubstring("old.example.com"))))
		}).WithTimeout(timeout).Should(Succeed())
	})
}

// withholdPolicyCreates takes from the operator the right to create admission policies and
// bindings, as if it were not running, and returns what gives it back (also done at cleanup).
func withholdPolicyCreates(t *testing.T) func() {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	role := &rbacv1.ClusterRole{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "landlord-manager"}, role)).To(Succeed())
	original := role.DeepCopy().Rules
	withheld := 0
	for i, rule := range role.Rules {
		if slices.Contains(rule.APIGroups, admissionregistrationv1.GroupName) && slices.Contains(rule.Resources, "validatingadmissionpolicybindings") && slices.Contains(rule.Verbs, "create") {
			role.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "create" })
			withheld++
		}
	}
	g.Expect(withheld).To(Equal(1), "the operator's role grants creating admission policies in one rule")
	g.Expect(k8s.Update(ctx, role)).To(Succeed())
	var once sync.Once
	restore := func() {
		once.Do(func() {
			NewWithT(t).Eventually(func() error {
				live := &rbacv1.ClusterRole{}
				if err := k8s.Get(ctx, client.ObjectKey{Name: "landlord-manager"}, live); err != nil {
					return err
				}
				live.Rules = original
				return k8s.Update(ctx, live)
			}).WithTimeout(timeout).Should(Succeed())
		})
	}
	t.Cleanup(restore)
	return restore
}

// waitForAuditedPolicies waits until the policies the audit applies are in force in the
// namespace. Each probe breaks one policy only, since the API server names one refusal: the
// Ingresses name the namespace's first class and host where they are not the probe.
func waitForAuditedPolicies(t *testing.T, c client.Client, ns string) {
	t.Helper()
	annotations := getNamespace(NewWithT(t), ns).Annotations
	classes := strings.Split(annotations[tenancyv1alpha1.IngressClassesAnnotation], ",")
	domains := strings.Split(annotations[tenancyv1alpha1.DomainsAnnotation], ",")
	NewWithT(t).Expect(domains[0]).NotTo(BeEmpty(), "%s admits no host to probe with", ns)
	waitForRefusal(t, c, policy.ServiceExposure, externalName(ns, "probe", "probe.invalid"))
	waitForRefusal(t, c, policy.IngressHosts, classIngress(ns, "probe", "probe.invalid", classes[0]))
	waitForRefusal(t, c, policy.IngressAnnotations, annotatedIngressFor(ns, "probe", domains[0], classes[0], "nginx.ingress.kubernetes.io/server-snippet", "return 200;"))
	// A namespace listing no classes leaves the class to the tenant: nothing to refuse there.
	if classes[0] != "" {
		waitForRefusal(t, c, policy.IngressClasses, classIngress(ns, "probe", domains[0], "probe-class"))
	}
}

// annotatedIngressFor is an Ingress for host naming class, or none, carrying one annotation.
func annotatedIngressFor(namespace, name, host, class, key, value string) *networkingv1.Ingress {
	i := classIngress(namespace, name, host, class)
	i.Annotations = map[string]string{key: value}
	return i
}

// withPorts narrows a NetworkPolicy's egress rules to ports.
func withPorts(spec func(*networkingv1.NetworkPolicySpec), ports ...networkingv1.NetworkPolicyPort) func(*networkingv1.NetworkPolicySpec) {
	return func(s *networkingv1.NetworkPolicySpec) {
		spec(s)
		for i := range s.Egress {
			s.Egress[i].Ports = ports
		}
	}
}
