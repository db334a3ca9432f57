package admissionpolicy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// judgeNetworkPolicy applies the NetworkPolicy peers policy (policy.NetworkPolicyPeersPolicy) to
// a tenant's own NetworkPolicy in namespace: every rule names its peers, a namespaceSelector names
// the tenant's namespace (or, for ingress, the platform's) by kubernetes.io/metadata.name, and an
// ipBlock lies within the blocks the configuration opens. Each breach opens the tenant's pods to
// other tenants, so it crosses tenants. Landlord's own NetworkPolicies are not the tenant's.
func judgeNetworkPolicy(np *networkingv1.NetworkPolicy, namespace string, bounds policy.NetworkBounds) []auditFinding {
	if np.Labels[tenancyv1alpha1.ManagedByLabel] == tenancyv1alpha1.ManagedByValue && np.Labels[tenancyv1alpha1.TenantLabel] != "" {
		return nil
	}
	var rules []string
	ingressNamespaces := append([]string{namespace}, bounds.Namespaces...)
	for i, r := range np.Spec.Ingress {
		field := fmt.Sprintf("spec.ingress[%d].from", i)
		if len(r.From) == 0 {
			rules = append(rules, field+" names no peer, which opens the pods to every source")
		}
		for j, p := range r.From {
			rules = append(rules, judgePeer(fmt.Sprintf("%s[%d]", field, j), p, ingressNamespaces, bounds.Blocks)...)
		}
	}
	dns := make([]policy.Block, len(bounds.DNSBlocks))
	for i, c := range bounds.DNSBlocks {
		dns[i] = policy.Block{CIDR: c}
	}
	for i, r := range np.Spec.Egress {
		field := fmt.Sprintf("spec.egress[%d].to", i)
		if len(r.To) == 0 {
			rules = append(rules, field+" names no peer, which opens every destination")
		}
		blocks := bounds.Blocks
		if dnsOnly(r.Ports) {
			blocks = append(slices.Clone(blocks), dns...)
		}
		for j, p := range r.To {
			rules = append(rules, judgePeer(fmt.Sprintf("%s[%d]", field, j), p, []string{namespace}, blocks)...)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	return []auditFinding{{Policy: policy.NetworkPolicyPeers, Rules: rules, Crosses: true}}
}

// judgePeer says what of peer p the policy refuses: a namespaceSelector that does not name one
// of namespaces by kubernetes.io/metadata.name (by another label, or none, it may match another
// tenant's namespace), and an ipBlock outside blocks.
func judgePeer(field string, p networkingv1.NetworkPolicyPeer, namespaces []string, blocks []policy.Block) []string {
	var rules []string
	if s := p.NamespaceSelector; s != nil && !namesNamespaces(s.MatchLabels[corev1.LabelMetadataName], s.MatchExpressions, namespaces) {
		rules = append(rules, fmt.Sprintf("%s.namespaceSelector may select a namespace other than %s", field, strings.Join(namespaces, ", ")))
	}
	if b := p.IPBlock; b != nil && !withinAnyBlock(b, blocks) {
		rules = append(rules, fmt.Sprintf("%s.ipBlock %s is not within the blocks tenants may name", field, b.CIDR))
	}
	return rules
}

// namesNamespaces is the policy's namespaceNamed: the selector's kubernetes.io/metadata.name
// label is one of allowed, or one of its expressions on that label is In values all allowed.
func namesNamespaces(name string, exprs []metav1.LabelSelectorRequirement, allowed []string) bool {
	if slices.Contains(allowed, name) {
		return true
	}
	for _, e := range exprs {
		if e.Key == corev1.LabelMetadataName && e.Operator == "In" && !slices.ContainsFunc(e.Values, func(v string) bool { return !slices.Contains(allowed, v) }) {
			return true
		}
	}
	return false
}

// dnsOnly is the policy's dnsOnly: the rule opens port 53 alone, over UDP or TCP, and names a
// port at all.
func dnsOnly(ports []networkingv1.NetworkPolicyPort) bool {
	if len(ports) == 0 {
		return false
	}
	for _, q := range ports {
		if q.Port == nil || q.Port.String() != "53" || q.EndPort != nil {
			return false
		}
		if q.Protocol != nil && *q.Protocol != corev1.ProtocolTCP && *q.Protocol != corev1.ProtocolUDP {
			return false
		}
	}
	return true
}

// withinAnyBlock is the policy's withinAny: ipBlock b lies within one of blocks.
func withinAnyBlock(b *networkingv1.IPBlock, blocks []policy.Block) bool {
	return slices.ContainsFunc(blocks, func(block policy.Block) bool { return withinBlock(b, block) })
}

// withinBlock is the policy's withinBlock: b lies within block, minus block's exceptions. An
// exception that holds all of b leaves it outside; one inside b must be excepted from b too.
func withinBlock(b *networkingv1.IPBlock, block policy.Block) bool {
	if !containsCIDR(block.CIDR, b.CIDR) {
		return false
	}
	for _, x := range block.Except {
		if containsCIDR(x, b.CIDR) {
			return false
		}
		if containsCIDR(b.CIDR, x) && !slices.ContainsFunc(b.Except, func(e string) bool { return containsCIDR(e, x) }) {
			return false
		}
	}
	return true
}

// containsCIDR is CEL's cidr(outer).containsCIDR(inner): inner's addresses all lie in outer, in
// the same address family. A block that does not parse contains nothing and lies in nothing.
func containsCIDR(outer, inner string) bool {
	o, err := netip.ParsePrefix(outer)
	if err != nil {
		return false
	}
	i, err := netip.ParsePrefix(inner)
	if err != nil {
		return false
	}
	o, i = o.Masked(), i.Masked()
	return o.Addr().Is4() == i.Addr().Is4() && o.Bits() <= i.Bits() && o.Contains(i.Addr())
}
