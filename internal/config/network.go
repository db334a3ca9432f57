package config

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Network configures the NetworkPolicies Landlord keeps in every tenant namespace, and the
// bounds of those tenant admins write themselves.
type Network struct {
	// PlatformNamespaceSelector selects namespaces (ingress controller, monitoring) allowed to
	// reach every tenant's pods.
	PlatformNamespaceSelector *metav1.LabelSelector `json:"platformNamespaceSelector,omitempty"`
	// PlatformServices are the platform's services every tenant's pods may call (a telemetry
	// collector, an internal API gateway), each a namespace selector with an optional pod
	// selector and ports. None by default.
	PlatformServices []PlatformService `json:"platformServices,omitempty"`
	// DNS is where tenant pods may send DNS queries.
	DNS DNS `json:"dns,omitempty"`
	// EgressCIDRs are the address blocks tenant pods may reach (the internet). A tenant's own
	// database servers are opened per tenant, from its DatabaseServers, not here.
	EgressCIDRs []EgressCIDR `json:"egressCIDRs,omitempty"`
}

// DNS selects the cluster DNS pods, and any DNS servers reached by address.
type DNS struct {
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	PodSelector       *metav1.LabelSelector `json:"podSelector,omitempty"`
	// CIDRs are DNS servers tenant pods may query by address, at port 53 over UDP and TCP: the
	// link-local address of NodeLocal DNSCache (169.254.20.10/32 unless it was set up with
	// another), whose queries never reach the kube-dns pods the selectors name. None by default.
	CIDRs []string `json:"cidrs,omitempty"`
}

// EgressCIDR is one allowed address block, minus exceptions.
type EgressCIDR struct {
	CIDR   string   `json:"cidr"`
	Except []string `json:"except,omitempty"`
}

// PlatformService is a service of the platform's that every tenant's pods may call.
type PlatformService struct {
	// NamespaceSelector selects the service's namespaces; required, and not empty. Select them by
	// name (kubernetes.io/metadata.name), which no one can change, not by a label anyone who may
	// edit a namespace could add.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
	// PodSelector narrows the path to the service's pods; every pod of the namespaces when unset.
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
	// Ports narrow the path to these ports (protocol TCP unless set); every port when empty.
	Ports []networkingv1.NetworkPolicyPort `json:"ports,omitempty"`
}

// DNSPort is the port DNS is queried at, over UDP and TCP.
const DNSPort = 53

// PlatformNamespaceNames are the namespaces the ingress rules of tenants' own NetworkPolicies may
// name besides their own: those network.platformNamespaceSelector and network.platformServices select by name
// (kubernetes.io/metadata.name in matchLabels, or its In expression), sorted, each once. A
// namespace those select by another label cannot be named: its name would not tell which
// namespaces the label is on tomorrow.
func (n Network) PlatformNamespaceNames() []string {
	selectors := []*metav1.LabelSelector{n.PlatformNamespaceSelector}
	for _, s := range n.PlatformServices {
		selectors = append(selectors, s.NamespaceSelector)
	}
	var names []string
	for _, sel := range selectors {
		names = append(names, namesSelected(sel)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// namesSelected are the namespace names sel is held to, or none when it is not held to names.
func namesSelected(sel *metav1.LabelSelector) []string {
	if sel == nil {
		return nil
	}
	if name, ok := sel.MatchLabels[corev1.LabelMetadataName]; ok {
		return []string{name}
	}
	for _, r := range sel.MatchExpressions {
		if r.Key == corev1.LabelMetadataName && r.Operator == metav1.LabelSelectorOpIn {
			return r.Values
		}
	}
	return nil
}

// validate checks the network section, naming each invalid field by its path.
func (n Network) validate() []error {
	var errs []error
	for i, e := range n.EgressCIDRs {
		if msgs := validation.IsValidCIDR(nil, e.CIDR); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("network.egressCIDRs[%d].cidr: %q is not a CIDR", i, e.CIDR))
		}
		for j, x := range e.Except {
			if msgs := validation.IsValidCIDR(nil, x); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("network.egressCIDRs[%d].except[%d]: %q is not a CIDR", i, j, x))
			}
		}
	}
	for i, c := range n.DNS.CIDRs {
		path := fmt.Sprintf("network.dns.cidrs[%d]", i)
		prefix, err := netip.ParsePrefix(c)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %q is not a CIDR, such as 169.254.20.10/32", path, c))
		case prefix.Bits() == 0:
			errs = append(errs, fmt.Errorf("%s: %q would let tenant pods query every address at port 53: name the DNS servers' addresses, such as 169.254.20.10/32", path, c))
		}
		if slices.Index(n.DNS.CIDRs, c) != i {
			errs = append(errs, fmt.Errorf("%s: %q is listed twice", path, c))
		}
	}
	for path, sel := range map[string]*metav1.LabelSelector{
		"network.platformNamespaceSelector": n.PlatformNamespaceSelector,
		"network.dns.namespaceSelector":     n.DNS.NamespaceSelector,
		"network.dns.podSelector":           n.DNS.PodSelector,
	} {
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	}
	for i, s := range n.PlatformServices {
		errs = append(errs, s.validate(fmt.Sprintf("network.platformServices[%d]", i))...)
	}
	return errs
}

func (s PlatformService) validate(path string) []error {
	var errs []error
	switch sel := s.NamespaceSelector; {
	case sel == nil:
		errs = append(errs, fmt.Errorf("%s.namespaceSelector is required: name the service's namespace, e.g. {matchLabels: {kubernetes.io/metadata.name: telemetry}}", path))
	case len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0:
		errs = append(errs, fmt.Errorf("%s.namespaceSelector: an empty selector selects every namespace, other tenants' included: name the service's namespace", path))
	default:
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, fmt.Errorf("%s.namespaceSelector: %w", path, err))
		}
	}
	if _, err := metav1.LabelSelectorAsSelector(s.PodSelector); err != nil {
		errs = append(errs, fmt.Errorf("%s.podSelector: %w", path, err))
	}
	for j, p := range s.Ports {
		errs = append(errs, validatePort(fmt.Sprintf("%s.ports[%d]", path, j), p)...)
	}
	return errs
}

// validatePort checks a NetworkPolicy port as the API server would, so that a mistake stops the
// operator at start rather than every tenant's policy write.
func validatePort(path string, p networkingv1.NetworkPolicyPort) []error {
	var errs []error
	if p.Protocol != nil {
		switch *p.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, fmt.Errorf("%s.protocol: %q is not TCP, UDP or SCTP", path, *p.Protocol))
		}
	}
	if p.Port == nil {
		if p.EndPort != nil {
			errs = append(errs, fmt.Errorf("%s.endPort needs a port", path))
		}
		return errs
	}
	if p.Port.Type == intstr.Int {
		if msgs := validation.IsValidPortNum(int(p.Port.IntVal)); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s.port: %d is not a port number, 1 to 65535", path, p.Port.IntVal))
		}
		if p.EndPort != nil && (*p.EndPort < p.Port.IntVal || *p.EndPort > 65535) {
			errs = append(errs, fmt.Errorf("%s.endPort: %d is not between port %d and 65535", path, *p.EndPort, p.Port.IntVal))
		}
		return errs
	}
	if msgs := validation.IsValidPortName(p.Port.StrVal); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s.port: %q is not a port number or name: %v", path, p.Port.StrVal, msgs))
	}
	if p.EndPort != nil {
		errs = append(errs, fmt.Errorf("%s.endPort needs a numeric port, not %q", path, p.Port.StrVal))
	}
	return errs
}
