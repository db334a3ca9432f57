package policy

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// Names of the policies over NetworkPolicies in tenant namespaces: the bounds of the tenant's own,
// and Landlord's kept as Landlord writes them.
const (
	NetworkPolicyPeers     = "landlord-network-policy-peers"
	ManagedNetworkPolicies = "landlord-managed-network-policies"
)

// NetworkBounds are what a tenant's own NetworkPolicies may name besides pods of the tenant's
// namespace. NetworkPolicies only ever add paths, so these bound what a tenant can open.
type NetworkBounds struct {
	// Namespaces are the platform's namespaces, by name, that an ingress peer's namespaceSelector
	// may name besides the tenant's own (config.Network.PlatformNamespaceNames). Egress peers may
	// name the tenant's own namespace alone: the platform's services a tenant may call are opened
	// by Landlord's landlord-allow-platform-egress, with the pods and ports the configuration
	// narrows them to, which a tenant's own policy must not widen to the whole namespace.
	Namespaces []string
	// Blocks are address blocks, each minus its exceptions, that an ipBlock peer may lie within
	// (network.egressCIDRs).
	Blocks []Block
	// DNSBlocks are address blocks an egress ipBlock peer may lie within when its rule's ports
	// are DNS's alone, port 53 over UDP or TCP (network.dns.cidrs): a node-local DNS cache's
	// address is the node's own, where other ports reach the node's services.
	DNSBlocks []string
}

// NetworkBoundsOf are the bounds of tenants' own NetworkPolicies under the operator's network
// configuration: the platform's namespaces by name, network.egressCIDRs, and network.dns.cidrs
// for DNS alone.
func NetworkBoundsOf(n config.Network) NetworkBounds {
	b := NetworkBounds{Namespaces: n.PlatformNamespaceNames(), DNSBlocks: n.DNS.CIDRs}
	for _, c := range n.EgressCIDRs {
		b.Blocks = append(b.Blocks, Block{CIDR: c.CIDR, Except: c.Except})
	}
	return b
}

// Block is an address block minus exceptions, as a NetworkPolicy's ipBlock is.
type Block struct {
	CIDR   string
	Except []string
}

// NetworkPolicyObjects are the policies over NetworkPolicies in tenant namespaces, with their
// bindings.
func NetworkPolicyObjects(op Operator) []client.Object {
	return []client.Object{
		NetworkPolicyPeersPolicy(op), validatingBinding(NetworkPolicyPeers),
		ManagedNetworkPoliciesPolicy(op), validatingBinding(ManagedNetworkPolicies),
	}
}

// networkPolicyRule matches the given operations on NetworkPolicies.
func networkPolicyRule(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"networkpolicies"},
			Scope: ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}}}
}

// platformAdministrator is a CEL condition: the requester may change the tenant namespace's
// quota, which no tenant role may, so is the platform's (or the operator).
const platformAdministrator = `authorizer.group('').resource('resourcequotas').namespace(request.namespace).check('patch').allowed()`

// withinBlock is a CEL condition: ipBlock b (a NetworkPolicy peer's) lies within block, minus
// block's exceptions. An exception that holds all of b leaves it outside; one inside b must be
// excepted from b too, by an exception of b's that holds it.
func withinBlock(b string, block Block) string {
	cond := `cidr(` + cel(block.CIDR) + `).containsCIDR(` + b + `.cidr)`
	if len(block.Except) == 0 {
		return cond
	}
	return `(` + cond + ` && ` + celList(block.Except) + `.all(x, !cidr(x).containsCIDR(` + b + `.cidr) && ` +
		`(!cidr(` + b + `.cidr).containsCIDR(x) || ` + b + `.?except.orValue([]).exists(e, cidr(e).containsCIDR(x)))))`
}

// withinAny is a CEL condition: ipBlock b lies within one of blocks.
func withinAny(b string, blocks []Block) string {
	if len(blocks) == 0 {
		return "false"
	}
	conds := make([]string, len(blocks))
	for i, block := range blocks {
		conds[i] = withinBlock(b, block)
	}
	return `(` + strings.Join(conds, " || ") + `)`
}

// dnsOnly is a CEL condition: egress rule r opens DNS's port alone, 53 over UDP or TCP.
const dnsOnly = `(size(r.?ports.orValue([])) > 0 && r.ports.all(q, has(q.port) && string(q.port) == '53' && !has(q.endPort) && q.?protocol.orValue('TCP') in ['TCP', 'UDP']))`

// namespaceNamed is a CEL condition: peer p's namespaceSelector, when it has one, is held to
// namespaces named in the CEL list allowed, by the label Kubernetes sets on every namespace and
// no one can change. Any other selector (by a label anyone who may label a namespace can add, or
// empty) may match another tenant's namespace.
func namespaceNamed(allowed string) string {
	return `(!has(p.namespaceSelector) || ` +
		`p.namespaceSelector.?matchLabels[?` + cel(corev1.LabelMetadataName) + `].orValue('') in ` + allowed + ` || ` +
		`p.namespaceSelector.?matchExpressions.orValue([]).exists(e, e.key == ` + cel(corev1.LabelMetadataName) + ` && e.operator == 'In' && ` +
		`e.?values.orValue([]).all(v, v in ` + allowed + `)))`
}

// eachPeer lists, for every peer p of every rule r of object's ingress (from) or egress (to)
// that breaks ok, field followed by suffix: "spec.egress[0].to[1]" + suffix.
func eachPeer(direction, peers, ok, suffix string) string {
	return `object.spec.?` + direction + `.orValue([]).transformList(i, r, r.?` + peers + `.orValue([]).transformList(j, p, !` + ok + `, ` +
		`'spec.` + direction + `[' + string(i) + '].` + peers + `[' + string(j) + ']` + suffix + `)).flatten()`
}

// describeBounds says in a message which blocks the bounds allow.
func describeBounds(n NetworkBounds) string {
	var parts []string
	for _, b := range n.Blocks {
		s := b.CIDR
		if len(b.Except) > 0 {
			s += " except " + strings.Join(b.Except, ", ")
		}
		parts = append(parts, s)
	}
	if len(n.DNSBlocks) > 0 {
		parts = append(parts, strings.Join(n.DNSBlocks, ", ")+" at port 53 (DNS) only")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// escape makes s safe inside a single-quoted CEL string: a backslash or quote is escaped, and a
// control character written as its code, so no name can end the string or change what it holds.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\' || r == '\'':
			b.WriteRune('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// NetworkPolicyPeersPolicy holds the NetworkPolicies tenant admins write to their bounds. A
// NetworkPolicy only adds paths to what Landlord's open, so what matters is whom it opens the
// tenant's pods to: every rule must name its peers (a rule naming none opens the pods to every
// source or destination), a namespaceSelector must name the tenant's own namespace or the
// platform's by kubernetes.io/metadata.name, and an ipBlock must lie within the blocks the
// configuration opens (op.Network). Pods of the tenant's own namespace (a podSelector alone) are
// always allowed. The operator, and whoever may change the namespace's quota (the platform's
// administrators), are not judged; nor are updates that leave the spec alone, so a policy
// admitted under wider bounds can still be relabelled and deleted.
func NetworkPolicyPeersPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	bounds := op.Network
	blocks := func(direction string) string {
		ok := withinAny("p.ipBlock", bounds.Blocks)
		if direction == "egress" && len(bounds.DNSBlocks) > 0 {
			dns := make([]Block, len(bounds.DNSBlocks))
			for i, c := range bounds.DNSBlocks {
				dns[i] = Block{CIDR: c}
			}
			ok = `(` + ok + ` || (` + dnsOnly + ` && ` + withinAny("p.ipBlock", dns) + `))`
		}
		return `(!has(p.ipBlock) || ` + ok + `)`
	}
	namespaces := `[namespaceObject.metadata.name]`
	if len(bounds.Namespaces) > 0 {
		namespaces += ` + ` + celList(bounds.Namespaces)
	}
	allowedBlocks := escape(describeBounds(bounds))
	return validatingPolicy(NetworkPolicyPeers, networkPolicyRule(admissionregistrationv1.Create, admissionregistrationv1.Update),
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{
				specChanged,
				{Name: "not-the-operator-nor-the-platform", Expression: `request.userInfo.username != ` + cel(op.User) + ` && !` + platformAdministrator},
			},
			Variables: []admissionregistrationv1.Variable{
				{Name: "namespaces", Expression: namespaces},
				{Name: "open", Expression: `object.spec.?ingress.orValue([]).transformList(i, r, size(r.?from.orValue([])) == 0, 'spec.ingress[' + string(i) + '].from') + ` +
					`object.spec.?egress.orValue([]).transformList(i, r, size(r.?to.orValue([])) == 0, 'spec.egress[' + string(i) + '].to')`},
				{Name: "foreignNamespaces", Expression: eachPeer("ingress", "from", namespaceNamed("variables.namespaces"), `.namespaceSelector'`) + ` + ` +
					eachPeer("egress", "to", namespaceNamed("[namespaceObject.metadata.name]"), `.namespaceSelector'`)},
				{Name: "foreignBlocks", Expression: eachPeer("ingress", "from", blocks("ingress"), `.ipBlock ' + p.ipBlock.cidr`) + ` + ` +
					eachPeer("egress", "to", blocks("egress"), `.ipBlock ' + p.ipBlock.cidr`)},
			},
			Validations: []admissionregistrationv1.Validation{
				deny(`size(variables.open) == 0`,
					"every rule of a NetworkPolicy in a tenant namespace must name its peers: a rule naming none opens the pods to everyone",
					`variables.open.join(', ') + (size(variables.open) == 1 ? ' names' : ' name') + ' no peer, which would open the pods of `+namespaceName+` to every source or destination: `+
						`list the pods (a podSelector), namespaces (' + variables.namespaces.join(', ') + ', by kubernetes.io/metadata.name) or address blocks (`+allowedBlocks+`) to open them to'`),
				deny(`size(variables.foreignNamespaces) == 0`,
					"a NetworkPolicy in a tenant namespace may name only its own namespace, and for ingress the platform's, by kubernetes.io/metadata.name",
					`variables.foreignNamespaces.join(', ') + ' may select only namespaces named by kubernetes.io/metadata.name: for ingress among ' + variables.namespaces.join(', ') + ', for egress `+namespaceName+` alone (the platform\'s services are opened by Landlord\'s landlord-allow-platform-egress)' + `+
						`': a selector naming another namespace, by another label or by none could match another tenant\'s namespace. Select pods of `+namespaceName+` with a podSelector alone, `+
						`or name an allowed namespace: {matchLabels: {kubernetes.io/metadata.name: <name>}}'`),
				deny(`size(variables.foreignBlocks) == 0`,
					"a NetworkPolicy in a tenant namespace may name only address blocks the platform opens to tenants",
					`variables.foreignBlocks.join(', ') + (size(variables.foreignBlocks) == 1 ? ' is' : ' are') + ' not within the address blocks tenants of `+namespaceName+` may name (`+allowedBlocks+`): `+
						`name a block within them (the tenant\'s database servers are opened by Landlord\'s own policy); the platform team opens blocks in network.egressCIDRs'`),
			},
		})
}

// ManagedNetworkPoliciesPolicy keeps Landlord's NetworkPolicies in tenant namespaces as Landlord
// writes them: tenant admins may write NetworkPolicies of their own, and RBAC cannot tell theirs
// from Landlord's (see managedObjectsPolicy).
func ManagedNetworkPoliciesPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return managedObjectsPolicy(op, ManagedNetworkPolicies, networkPolicyRule(admissionregistrationv1.Update, admissionregistrationv1.Delete),
		"Landlord's NetworkPolicies are the tenant's isolation: only the platform changes or deletes them; a NetworkPolicy of the tenant's own opens a path",
		`'NetworkPolicy ' + oldObject.metadata.name + ' is Landlord\'s, part of the isolation of `+namespaceName+`: only the platform changes or deletes it. `+
			`To open a path, create a NetworkPolicy of your own; its peers may be pods of `+namespaceName+`, the platform\'s namespaces and the address blocks the platform opens'`)
}

// managedObjectsPolicy refuses updates and deletes (rules) of Landlord's objects of a kind a
// tenant role may also write its own of, so that RBAC cannot tell them apart. Landlord's carry
// its managed-by label and the tenant's, which only the operator may set, change or remove
// (ManagedLabelsPolicy): the policy selects by them, not by an owner reference a tenant could
// take off. The operator, Kubernetes' controllers (the namespace controller empties a namespace
// being deleted) and whoever may change the namespace's quota (the platform's administrators)
// are let through.
func managedObjectsPolicy(op Operator, name string, rules []admissionregistrationv1.NamedRuleWithOperations, message, messageExpression string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := validatingPolicy(name, rules,
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: append([]admissionregistrationv1.MatchCondition{{
				Name: "not-the-operator-nor-kubernetes",
				Expression: `!(request.userInfo.username in ` + celList(append([]string{op.User}, KubernetesControllers.Users...)) + `) && ` +
					`!request.userInfo.username.startsWith(` + cel(KubernetesControllers.Prefix) + `)`,
			}}, op.trustedCondition()...),
			Validations: []admissionregistrationv1.Validation{deny(platformAdministrator, message, messageExpression)},
		})
	p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{
		MatchLabels:      map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: tenancyv1alpha1.TenantLabel, Operator: metav1.LabelSelectorOpExists}},
	}
	return p
}
