package resources

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database"
)

// NetworkPolicy names. Policies are additive: the default deny closes everything and each of
// the others opens one path, so each can be read (and audited) on its own.
const (
	DefaultDenyPolicy    = "landlord-default-deny"
	SameNamespacePolicy  = "landlord-allow-same-namespace"
	PlatformPolicy       = "landlord-allow-platform-ingress"
	PlatformEgressPolicy = "landlord-allow-platform-egress"
	DNSPolicy            = "landlord-allow-dns-egress"
	EgressCIDRsPolicy    = "landlord-allow-egress-cidrs"
	DatabaseEgressPolicy = "landlord-allow-database-egress"
)

var (
	ingressOnly = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egressOnly  = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
)

// NetworkPolicies isolate the tenant namespace: nothing in or out, except traffic within the
// namespace, ingress from the platform's namespaces, egress to the platform's services, DNS,
// and egress to the configured CIDRs. Each exists whatever the configuration, opening nothing
// when it has nothing to open, so the set of objects is fixed. The path to the tenant's own
// database servers follows its placements: DatabaseEgress.
func NetworkPolicies(t *tenancyv1alpha1.Tenant, cfg *config.Config, namespace string) []*networkingv1.NetworkPolicy {
	samePods := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	dnsPort := intstr.FromInt32(config.DNSPort)

	var cidrs []networkingv1.NetworkPolicyPeer
	for _, c := range cfg.Network.EgressCIDRs {
		cidrs = append(cidrs, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c.CIDR, Except: c.Except}})
	}
	var cidrRules []networkingv1.NetworkPolicyEgressRule
	if len(cidrs) > 0 {
		cidrRules = []networkingv1.NetworkPolicyEgressRule{{To: cidrs}}
	}
	dnsServers := []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: cfg.Network.DNS.NamespaceSelector.DeepCopy(),
		PodSelector:       cfg.Network.DNS.PodSelector.DeepCopy(),
	}}
	for _, c := range cfg.Network.DNS.CIDRs {
		dnsServers = append(dnsServers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}})
	}
	var platformServices []networkingv1.NetworkPolicyEgressRule
	for _, s := range cfg.Network.PlatformServices {
		rule := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: s.NamespaceSelector.DeepCopy(),
			PodSelector:       s.PodSelector.DeepCopy(),
		}}}
		for _, p := range s.Ports {
			rule.Ports = append(rule.Ports, *p.DeepCopy())
		}
		platformServices = append(platformServices, rule)
	}

	specs := []struct {
		name string
		spec networkingv1.NetworkPolicySpec
	}{
		{DefaultDenyPolicy, networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		}},
		{SameNamespacePolicy, networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: samePods}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: samePods}},
		}},
		{PlatformPolicy, networkingv1.NetworkPolicySpec{
			PolicyTypes: ingressOnly,
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{NamespaceSelector: cfg.Network.PlatformNamespaceSelector.DeepCopy()},
			}}},
		}},
		{PlatformEgressPolicy, networkingv1.NetworkPolicySpec{PolicyTypes: egressOnly, Egress: platformServices}},
		{DNSPolicy, networkingv1.NetworkPolicySpec{
			PolicyTypes: egressOnly,
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    dnsServers,
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dnsPort}, {Protocol: &tcp, Port: &dnsPort}},
			}},
		}},
		{EgressCIDRsPolicy, networkingv1.NetworkPolicySpec{PolicyTypes: egressOnly, Egress: cidrRules}},
	}
	policies := make([]*networkingv1.NetworkPolicy, 0, len(specs))
	for _, s := range specs {
		policies = append(policies, networkPolicy(t, namespace, s.name, s.spec))
	}
	return policies
}

func networkPolicy(t *tenancyv1alpha1.Tenant, namespace, name string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: objectMeta(t, namespace, name),
		Spec:       spec,
	}
}

// DatabaseEgress lets the tenant's pods reach the database servers its databases are placed on,
// at each server's port (TCP) and nowhere else: servers are the DatabaseServers its status
// records, in any order and each at least once. A server is reached at its host when that is an
// IP address, at the blocks of its spec.network.cidrs, and, for one in the cluster, at the pods
// its spec.network selectors name. A server with none of these (a DNS host and no network) gets
// no rule: an egress rule naming no peer would open every destination. A tenant with no
// databases has the policy opening nothing, so the set of its objects never changes.
func DatabaseEgress(t *tenancyv1alpha1.Tenant, namespace string, servers []*tenancyv1alpha1.DatabaseServer) *networkingv1.NetworkPolicy {
	servers = slices.Clone(servers)
	slices.SortFunc(servers, func(a, b *tenancyv1alpha1.DatabaseServer) int { return cmp.Compare(a.Name, b.Name) })
	servers = slices.CompactFunc(servers, func(a, b *tenancyv1alpha1.DatabaseServer) bool { return a.Name == b.Name })
	tcp := corev1.ProtocolTCP
	var rules []networkingv1.NetworkPolicyEgressRule
	for _, ds := range servers {
		peers := databaseServerPeers(ds)
		if len(peers) == 0 {
			continue
		}
		port := intstr.FromInt32(database.Address(ds).Port)
		rules = append(rules, networkingv1.NetworkPolicyEgressRule{
			To:    peers,
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
		})
	}
	return networkPolicy(t, namespace, DatabaseEgressPolicy, networkingv1.NetworkPolicySpec{PolicyTypes: egressOnly, Egress: rules})
}

// databaseServerPeers are where tenants' pods reach a database server: its host when that is an
// IP address, its spec.network.cidrs, and the pods its spec.network selectors name.
func databaseServerPeers(ds *tenancyv1alpha1.DatabaseServer) []networkingv1.NetworkPolicyPeer {
	var peers []networkingv1.NetworkPolicyPeer
	if addr, err := netip.ParseAddr(ds.Spec.Host); err == nil {
		addr = addr.Unmap().WithZone("")
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(addr, addr.BitLen()).String()}})
	}
	n := ds.Spec.Network
	if n == nil {
		return peers
	}
	for _, c := range n.CIDRs {
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}})
	}
	if n.NamespaceSelector != nil {
		peers = append(peers, networkingv1.NetworkPolicyPeer{NamespaceSelector: n.NamespaceSelector.DeepCopy(), PodSelector: n.PodSelector.DeepCopy()})
	}
	return peers
}

// UndeclaredDatabaseNetwork reports whether a database server's tenants' NetworkPolicy opens no
// path to it (its host is a DNS name, and spec.network declares no address or namespace), and
// says so for its status.
func UndeclaredDatabaseNetwork(ds *tenancyv1alpha1.DatabaseServer) (string, bool) {
	if len(databaseServerPeers(ds)) > 0 {
		return "", false
	}
	return fmt.Sprintf("spec.host %s is a DNS name and spec.network declares neither cidrs nor a namespaceSelector: the NetworkPolicy %s of its tenants opens no path to it, "+
		"and their pods reach it only where the operator configuration's network.egressCIDRs covers its addresses. "+
		"Declare spec.network.cidrs (the addresses the name resolves to) or spec.network.namespaceSelector (a server running in the cluster)",
		ds.Spec.Host, DatabaseEgressPolicy), true
}
