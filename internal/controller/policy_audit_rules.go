package controller

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/landlord-dev/landlord/internal/policy"
)

// The policy audit judges objects already in tenant namespaces by the rules the admission
// policies apply to requests (internal/policy/services.go, hosts.go). The policies are CEL run
// by the API server; these are the same rules in Go, for objects the API server never judged
// because they were created while the policies were absent. A test holds the two to the same
// verdicts, case by case (TestThePolicyAuditJudgesAsThePoliciesDo).

// auditFinding is one policy an object breaks, and how.
type auditFinding struct {
	// Policy is the policy's name.
	Policy string
	// Rules say what the object does that the policy refuses.
	Rules []string
	// Crosses is whether the object reaches across tenants (another tenant's services or
	// traffic), which the audit's Delete action removes; the rest is only reported.
	Crosses bool
}

// hostAllowed reports whether a namespace allowed the domains may serve host h, as the
// policies' hostAllowed condition does: h is an allowed domain, or an allowed wildcard "*.x"
// covers it with exactly one more label. A wildcard host must itself be allowed. The wildcard
// that covers a plain name is the domain handover's (coveringWildcard), so the two agree on
// what a wildcard holds.
func hostAllowed(h string, domains []string) bool {
	if slices.Contains(domains, h) {
		return true
	}
	if strings.HasPrefix(h, "*") || strings.HasPrefix(h, ".") {
		return false
	}
	w := coveringWildcard(h)
	return w != "" && slices.Contains(domains, w)
}

// refusedHosts lists the hosts a namespace allowed the domains may not serve, once each, in
// their order.
func refusedHosts(hosts, domains []string) []string {
	var refused []string
	for _, h := range hosts {
		if !hostAllowed(h, domains) && !slices.Contains(refused, h) {
			refused = append(refused, h)
		}
	}
	return refused
}

// allowedDomains names the allowed domains in a rule, as the policies' messages do.
func allowedDomains(domains []string) string {
	if len(domains) == 0 {
		return "none"
	}
	return strings.Join(domains, ", ")
}

// judgeService applies the service exposure policy (policy.ServiceExposurePolicy).
func judgeService(svc *corev1.Service) []auditFinding {
	var rules []string
	crosses := false
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		rules = append(rules, fmt.Sprintf("Services of type %s are not allowed in tenant namespaces", svc.Spec.Type))
	case corev1.ServiceTypeExternalName:
		// The shared ingress controller, and any client, is sent wherever it names: another
		// tenant's service, past that tenant's NetworkPolicies.
		rules = append(rules, fmt.Sprintf("Services of type ExternalName are not allowed in tenant namespaces (it names %s)", svc.Spec.ExternalName))
		crosses = true
	}
	if len(svc.Spec.ExternalIPs) > 0 {
		// Traffic for addresses the tenant does not own, another tenant's among them.
		rules = append(rules, fmt.Sprintf("Services in tenant namespaces may not set spec.externalIPs (%s)", strings.Join(svc.Spec.ExternalIPs, ", ")))
		crosses = true
	}
	if len(rules) == 0 {
		return nil
	}
	return []auditFinding{{Policy: policy.ServiceExposure, Rules: rules, Crosses: crosses}}
}

// judgeIngress applies the Ingress hosts policy (policy.IngressHostsPolicy) for a namespace
// allowed the domains. Every rule it breaks takes traffic for a host that is not the tenant's.
func judgeIngress(ing *networkingv1.Ingress, domains []string) []auditFinding {
	var hosts []string
	hostless := false
	for _, r := range ing.Spec.Rules {
		if r.Host == "" {
			hostless = true
			continue
		}
		hosts = append(hosts, r.Host)
	}
	for _, tls := range ing.Spec.TLS {
		hosts = append(hosts, tls.Hosts...)
	}
	var rules []string
	if refused := refusedHosts(hosts, domains); len(refused) > 0 {
		rules = append(rules, fmt.Sprintf("Ingress hosts %s are not among the tenant's domains (%s)", strings.Join(refused, ", "), allowedDomains(domains)))
	}
	if hostless {
		rules = append(rules, "every rule of an Ingress in a tenant namespace must name a host")
	}
	if ing.Spec.DefaultBackend != nil {
		rules = append(rules, "Ingresses in tenant namespaces may not set spec.defaultBackend")
	}
	if len(rules) == 0 {
		return nil
	}
	return []auditFinding{{Policy: policy.IngressHosts, Rules: rules, Crosses: true}}
}

// judgeRoute applies the route hostnames policy (policy.RouteHostnamesPolicy) to a Gateway API
// route for a namespace allowed the domains.
func judgeRoute(route *unstructured.Unstructured, domains []string) []auditFinding {
	hosts, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
	var rules []string
	if refused := refusedHosts(hosts, domains); len(refused) > 0 {
		rules = append(rules, fmt.Sprintf("route hostnames %s are not among the tenant's domains (%s)", strings.Join(refused, ", "), allowedDomains(domains)))
	}
	if len(hosts) == 0 {
		rules = append(rules, "routes in tenant namespaces must list spec.hostnames")
	}
	if len(rules) == 0 {
		return nil
	}
	return []auditFinding{{Policy: policy.RouteHostnames, Rules: rules, Crosses: true}}
}
