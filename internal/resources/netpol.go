package resources

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// NetworkPolicy names. Policies are additive: the default deny closes everything and each of
// the others opens one path, so each can be read (and audited) on its own.
const (
	DefaultDenyPolicy   = "landlord-default-deny"
	SameNamespacePolicy = "landlord-allow-same-namespace"
	PlatformPolicy      = "landlord-allow-platform-ingress"
	DNSPolicy           = "landlord-allow-dns-egress"
	EgressCIDRsPolicy   = "landlord-allow-egress-cidrs"
)

// NetworkPolicies isolate the tenant namespace: nothing in or out, except traffic within the
// namespace, ingress from the platform's namespaces, DNS, and egress to the configured CIDRs.
func NetworkPolicies(t *tenancyv1alpha1.Tenant, cfg *config.Config, namespace string) []*networkingv1.NetworkPolicy {
	ingress := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egress := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	samePods := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	dnsPort := intstr.FromInt32(53)

	var cidrs []networkingv1.NetworkPolicyPeer
	for _, c := range cfg.Network.EgressCIDRs {
		cidrs = append(cidrs, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c.CIDR, Except: c.Except}})
	}
	var cidrRules []networkingv1.NetworkPolicyEgressRule
	if len(cidrs) > 0 {
		cidrRules = []networkingv1.NetworkPolicyEgressRule{{To: cidrs}}
	}

	specs := []struct {
		name string
		spec networkingv1.NetworkPolicySpec
	}{
		{DefaultDenyPolicy, networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		}},
		{SameNamespacePolicy, networkingv1.NetworkPolicySpec{
			PolicyTypes: append(append([]networkingv1.PolicyType{}, ingress...), egress...),
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: samePods}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: samePods}},
		}},
		{PlatformPolicy, networkingv1.NetworkPolicySpec{
			PolicyTypes: ingress,
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{NamespaceSelector: cfg.Network.PlatformNamespaceSelector.DeepCopy()},
			}}},
		}},
		{DNSPolicy, networkingv1.NetworkPolicySpec{
			PolicyTypes: egress,
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: cfg.Network.DNS.NamespaceSelector.DeepCopy(),
					PodSelector:       cfg.Network.DNS.PodSelector.DeepCopy(),
				}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dnsPort}, {Protocol: &tcp, Port: &dnsPort}},
			}},
		}},
		{EgressCIDRsPolicy, networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: cidrRules}},
	}
	policies := make([]*networkingv1.NetworkPolicy, 0, len(specs))
	for _, s := range specs {
		policies = append(policies, &networkingv1.NetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: objectMeta(t, namespace, s.name),
			Spec:       s.spec,
		})
	}
	return policies
}
