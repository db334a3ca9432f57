package admissionpolicy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/policy"
)

// The policy audit judges objects already in tenant namespaces by the rules the admission
// policies apply to requests (internal/policy/services.go, hosts.go, ingress.go, nodepool.go). The policies
// are CEL run by the API server; these are the same rules in Go, for objects the API server
// never judged because they were created while the policies were absent. A test holds the two to the same
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
	w := indexes.CoveringWildcard(h)
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

// annotationList splits a namespace's list annotation as the policies do: by commas, without
// empty items.
func annotationList(value string) []string {
	var items []string
	for _, item := range strings.Split(value, ",") {
		if item != "" {
			items = append(items, item)
		}
	}
	return items
}

// judgeIngress applies the policies on Ingresses for the namespace ns: hosts, classes and
// annotations, each its own finding.
func judgeIngress(ing *networkingv1.Ingress, ns tenantNamespace) []auditFinding {
	var findings []auditFinding
	for _, f := range []*auditFinding{judgeIngressHosts(ing, ns.domains), judgeIngressClass(ing, ns.classes), judgeIngressAnnotations(ing, ns.name)} {
		if f != nil {
			findings = append(findings, *f)
		}
	}
	return findings
}

// judgeIngressHosts applies the Ingress hosts policy (policy.IngressHostsPolicy) for a namespace
// allowed the domains. Every rule it breaks takes traffic for a host that is not the tenant's.
func judgeIngressHosts(ing *networkingv1.Ingress, domains []string) *auditFinding {
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
	return &auditFinding{Policy: policy.IngressHosts, Rules: rules, Crosses: true}
}

// judgeIngressClass applies the Ingress classes policy (policy.IngressClassesPolicy) for a
// namespace allowed the classes: while it lists any, the class in spec.ingressClassName and in
// the legacy annotation must be among them, and one must be named. Either way the Ingress is
// served by a controller the tenant may not use, one the platform keeps for itself or for other
// tenants, which crosses tenants.
func judgeIngressClass(ing *networkingv1.Ingress, classes []string) *auditFinding {
	if len(classes) == 0 {
		return nil
	}
	var named []string
	if c := ptr.Deref(ing.Spec.IngressClassName, ""); c != "" {
		named = append(named, c)
	}
	if c := ing.Annotations[policy.LegacyIngressClassAnnotation]; c != "" {
		named = append(named, c)
	}
	var refused []string
	for _, c := range named {
		if !slices.Contains(classes, c) && !slices.Contains(refused, c) {
			refused = append(refused, c)
		}
	}
	var rules []string
	if len(refused) > 0 {
		rules = append(rules, fmt.Sprintf("Ingress class %s is not among the tenant's classes (%s)", strings.Join(refused, ", "), strings.Join(classes, ", ")))
	}
	if len(named) == 0 {
		rules = append(rules, fmt.Sprintf("Ingresses in the namespace must name one of the tenant's classes (%s): one naming none may be served by any controller", strings.Join(classes, ", ")))
	}
	if len(rules) == 0 {
		return nil
	}
	return &auditFinding{Policy: policy.IngressClasses, Rules: rules, Crosses: true}
}

// injectingAnnotation reports whether the annotation key injects configuration into the
// ingress controller, as the policy's condition on the key does
// (policy.InjectingIngressAnnotations): by its whole key's suffix or prefix, or by its name
// after the last slash, whatever the prefix.
func injectingAnnotation(key string) bool {
	name := key[strings.LastIndex(key, "/")+1:]
	s := policy.InjectingIngressAnnotations
	return slices.ContainsFunc(s.Suffixes, func(suffix string) bool { return strings.HasSuffix(key, suffix) }) ||
		slices.Contains(s.Names, name) ||
		slices.ContainsFunc(s.Substrings, func(sub string) bool { return strings.Contains(name, sub) }) ||
		slices.ContainsFunc(s.Prefixes, func(prefix string) bool { return strings.HasPrefix(key, prefix) })
}

// judgeIngressAnnotations applies the Ingress annotations policy (policy.IngressAnnotationsPolicy)
// to an Ingress in the namespace: no annotation injecting configuration into the ingress
// controller, and no reference to another namespace's Secret or ConfigMap. Both cross tenants:
// an injected snippet runs in the controller every tenant shares, and a reference lends the
// Ingress another tenant's CA, users or headers.
func judgeIngressAnnotations(ing *networkingv1.Ingress, namespace string) *auditFinding {
	var injecting, foreign []string
	// In key order, so a note names them the same way at every audit.
	for _, k := range slices.Sorted(maps.Keys(ing.Annotations)) {
		v := ing.Annotations[k]
		if injectingAnnotation(k) {
			injecting = append(injecting, k)
		}
		if slices.Contains(policy.ReferringIngressAnnotations, k[strings.LastIndex(k, "/")+1:]) &&
			strings.Contains(v, "/") && !strings.HasPrefix(v, namespace+"/") {
			foreign = append(foreign, k+"="+v)
		}
	}
	var rules []string
	if len(injecting) > 0 {
		rules = append(rules, fmt.Sprintf("Ingress annotations %s inject configuration into the ingress controller every tenant shares", strings.Join(injecting, ", ")))
	}
	if len(foreign) > 0 {
		rules = append(rules, fmt.Sprintf("Ingress annotations %s refer to another namespace's Secret or ConfigMap", strings.Join(foreign, ", ")))
	}
	if len(rules) == 0 {
		return nil
	}
	return &auditFinding{Policy: policy.IngressAnnotations, Rules: rules, Crosses: true}
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

// judgePod applies the node pool policy (policy.NodePoolPolicy) to a pod in a namespace on the
// node pool pool ("" for none): it must name its tenant's pool in its nodeSelector, may
// tolerate no pool's taint but its own, nor every taint, and may not run on another pool's node
// (nodePools maps nodes to their pools). A pod that names or tolerates another
// pool runs, or may run, on nodes dedicated to another tenant, which crosses tenants; one that
// names no pool in a namespace that has one runs on the shared nodes, and is only reported. A
// pod that has ended holds no node and is left alone, with its logs.
func judgePod(pod *corev1.Pod, pool string, nodePools map[string]string) []auditFinding {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	var rules []string
	crosses := false
	switch requested := pod.Spec.NodeSelector[tenancyv1alpha1.NodePoolLabel]; {
	case requested == pool:
	case requested == "":
		rules = append(rules, fmt.Sprintf("the pod names no node pool: its tenant's is %s", pool))
	case pool == "":
		rules = append(rules, fmt.Sprintf("the pod names node pool %s: its tenant has none", requested))
		crosses = true
	default:
		rules = append(rules, fmt.Sprintf("the pod names node pool %s: its tenant's is %s", requested, pool))
		crosses = true
	}
	var refused []string
	for _, t := range pod.Spec.Tolerations {
		switch {
		case t.Key == "":
			refused = append(refused, "every taint")
		case t.Key == tenancyv1alpha1.NodePoolLabel && (pool == "" || t.Operator == corev1.TolerationOpExists || t.Value != pool):
			refused = append(refused, fmt.Sprintf("%s=%s", t.Key, t.Value))
		}
	}
	if len(refused) > 0 {
		rules = append(rules, fmt.Sprintf("the pod tolerates %s: pods in tenant namespaces may tolerate only their own node pool's taint", strings.Join(refused, ", ")))
		crosses = true
	}
	// Bound to a node of another pool, whatever its spec says: a pod created with spec.nodeName
	// skips the scheduler and the taint that keeps other tenants off a pool.
	if node, ok := nodePools[pod.Spec.NodeName]; ok && node != "" && node != pool {
		rules = append(rules, fmt.Sprintf("the pod runs on node %s of node pool %s", pod.Spec.NodeName, node))
		crosses = true
	}
	if len(rules) == 0 {
		return nil
	}
	return []auditFinding{{Policy: policy.NodePool, Rules: rules, Crosses: crosses}}
}

// Verdict is the policy audit's verdict on obj in the namespace ns, read as the audit reads it:
// the policies it breaks, and whether it reaches across tenants. The suite holds it against the
// policies' own verdict on the API server, so the two cannot drift apart. bounds are what
// tenants' own NetworkPolicies may name, as the operator's configuration sets them.
func Verdict(obj client.Object, ns *corev1.Namespace, bounds policy.NetworkBounds) (policies []string, crosses bool) {
	findings := judgeObject(tenantNamespaceOf(ns), obj, nil, bounds)
	for _, f := range findings {
		policies = append(policies, f.Policy)
	}
	return policies, crossesTenants(findings)
}
