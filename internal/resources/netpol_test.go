package resources_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/resources"
)

// By default the platform's namespaces are named, by the label Kubernetes itself
// sets on every namespace and no one can change, not chosen by a label anyone who may edit a
// namespace can add. A namespace that merely carries the old platform label reaches no tenant.
func TestTheDefaultPlatformPolicyNamesNamespacesByTheirImmutableName(t *testing.T) {
	cfg := config.Default()
	var platform *networkingv1.NetworkPolicy
	for _, p := range resources.NetworkPolicies(tenant(), &cfg, "tenant-acme") {
		if p.Name == resources.PlatformPolicy {
			platform = p
		}
	}
	if platform == nil || len(platform.Spec.Ingress) != 1 || len(platform.Spec.Ingress[0].From) != 1 {
		t.Fatalf("platform policy = %+v, want one ingress rule from one peer", platform)
	}
	peer := platform.Spec.Ingress[0].From[0]
	selector, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("its namespace selector reads only kubernetes.io/metadata.name", func(t *testing.T) {
		sel := peer.NamespaceSelector
		if len(sel.MatchLabels) != 0 || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != "kubernetes.io/metadata.name" ||
			sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpIn || len(sel.MatchExpressions[0].Values) == 0 {
			t.Errorf("namespace selector = %v, want kubernetes.io/metadata.name in (...)", sel)
		}
		if peer.PodSelector != nil || peer.IPBlock != nil {
			t.Errorf("peer = %+v, want a namespace selector alone", peer)
		}
	})
	cases := []struct {
		name      string
		namespace map[string]string
		admitted  bool
	}{
		{"a namespace that merely carries the old platform label", map[string]string{"kubernetes.io/metadata.name": "team-x", "tenancy.landlord.dev/platform": "true"}, false},
		{"another tenant's namespace", map[string]string{"kubernetes.io/metadata.name": "tenant-other", "tenancy.landlord.dev/tenant": "other"}, false},
		{"the ingress controller's namespace", map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}, true},
		{"the monitoring namespace", map[string]string{"kubernetes.io/metadata.name": "monitoring"}, true},
	}
	for _, tc := range cases {
		verb := map[bool]string{true: " is let in", false: " is kept out"}[tc.admitted]
		t.Run(tc.name+verb, func(t *testing.T) {
			if got := selector.Matches(labels.Set(tc.namespace)); got != tc.admitted {
				t.Errorf("selector %s matches %v: %v, want %v", selector, tc.namespace, got, tc.admitted)
			}
		})
	}
}

// policyNamed is the NetworkPolicy of that name among those built for the configuration.
func policyNamed(t *testing.T, cfg *config.Config, name string) *networkingv1.NetworkPolicy {
	t.Helper()
	for _, p := range resources.NetworkPolicies(tenant(), cfg, "tenant-acme") {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no NetworkPolicy %s is built", name)
	return nil
}

func server(name, host string, port int32, mutate ...func(*tenancyv1alpha1.DatabaseServerSpec)) *tenancyv1alpha1.DatabaseServer {
	ds := &tenancyv1alpha1.DatabaseServer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.DatabaseServerSpec{Engine: tenancyv1alpha1.EnginePostgres, Host: host, Port: port},
	}
	for _, f := range mutate {
		f(&ds.Spec)
	}
	return ds
}

func tcpPort(port int32) []networkingv1.NetworkPolicyPort {
	return []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}}
}

func block(cidr string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}}
}

// The path to a tenant's databases opens exactly the servers they are placed on, at each
// server's port, by the address its DatabaseServer gives; a server with no address to open gets
// no rule, since a rule naming no peer would open every destination.
func TestTheDatabaseEgressPolicyOpensExactlyTheTenantsServers(t *testing.T) {
	inCluster := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "databases"}}
	primary := &metav1.LabelSelector{MatchLabels: map[string]string{"cnpg.io/instanceRole": "primary"}}
	cases := map[string]struct {
		servers []*tenancyv1alpha1.DatabaseServer
		want    []networkingv1.NetworkPolicyEgressRule
	}{
		"a tenant without databases opens nothing": {nil, nil},
		"a server at a private IPv4 address is opened at that address and its port": {
			[]*tenancyv1alpha1.DatabaseServer{server("main", "10.20.0.5", 5433)},
			[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{block("10.20.0.5/32")}, Ports: tcpPort(5433)}},
		},
		"a server at an IPv6 address is opened at that one address": {
			[]*tenancyv1alpha1.DatabaseServer{server("v6", "fd00::5", 5432)},
			[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{block("fd00::5/128")}, Ports: tcpPort(5432)}},
		},
		"a server without a port is opened at its engine's": {
			[]*tenancyv1alpha1.DatabaseServer{
				server("pg", "10.0.0.1", 0),
				server("my", "10.0.0.2", 0, func(s *tenancyv1alpha1.DatabaseServerSpec) { s.Engine = tenancyv1alpha1.EngineMySQL }),
			},
			[]networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{block("10.0.0.2/32")}, Ports: tcpPort(3306)},
				{To: []networkingv1.NetworkPolicyPeer{block("10.0.0.1/32")}, Ports: tcpPort(5432)},
			},
		},
		"a server named by DNS is opened at the blocks it declares": {
			[]*tenancyv1alpha1.DatabaseServer{server("managed", "pg.example.internal", 5432, func(s *tenancyv1alpha1.DatabaseServerSpec) {
				s.Network = &tenancyv1alpha1.DatabaseServerNetwork{CIDRs: []string{"10.30.0.0/24", "10.31.0.0/24"}}
			})},
			[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{block("10.30.0.0/24"), block("10.31.0.0/24")}, Ports: tcpPort(5432)}},
		},
		"a server in the cluster is opened at the pods it selects": {
			[]*tenancyv1alpha1.DatabaseServer{server("cnpg", "main-rw.databases.svc", 5432, func(s *tenancyv1alpha1.DatabaseServerSpec) {
				s.Network = &tenancyv1alpha1.DatabaseServerNetwork{NamespaceSelector: inCluster, PodSelector: primary}
			})},
			[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: inCluster, PodSelector: primary}}, Ports: tcpPort(5432)}},
		},
		"a server at an address that declares more blocks is opened at all of them": {
			[]*tenancyv1alpha1.DatabaseServer{server("ha", "10.40.0.10", 5432, func(s *tenancyv1alpha1.DatabaseServerSpec) {
				s.Network = &tenancyv1alpha1.DatabaseServerNetwork{CIDRs: []string{"10.40.0.0/28"}}
			})},
			[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{block("10.40.0.10/32"), block("10.40.0.0/28")}, Ports: tcpPort(5432)}},
		},
		"a server named by DNS that declares nothing gets no rule, which would open every destination": {
			[]*tenancyv1alpha1.DatabaseServer{server("unknown", "db.example.com", 5432), server("known", "10.0.0.9", 5432)},
			[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{block("10.0.0.9/32")}, Ports: tcpPort(5432)}},
		},
		"servers holding several databases are opened once each, in name order": {
			[]*tenancyv1alpha1.DatabaseServer{server("b", "10.0.0.2", 5432), server("a", "10.0.0.1", 5432), server("b", "10.0.0.2", 5432)},
			[]networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{block("10.0.0.1/32")}, Ports: tcpPort(5432)},
				{To: []networkingv1.NetworkPolicyPeer{block("10.0.0.2/32")}, Ports: tcpPort(5432)},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := resources.DatabaseEgress(tenant(), "tenant-acme", tc.servers)
			if p.Name != resources.DatabaseEgressPolicy || p.Namespace != "tenant-acme" {
				t.Errorf("policy %s/%s, want tenant-acme/%s", p.Namespace, p.Name, resources.DatabaseEgressPolicy)
			}
			if !metav1.IsControlledBy(p, tenant()) || p.Labels["tenancy.landlord.dev/tenant"] != "acme" {
				t.Errorf("policy is not the tenant's: %+v", p.ObjectMeta)
			}
			if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, p.Spec.PolicyTypes); diff != "" {
				t.Errorf("policy types (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(metav1.LabelSelector{}, p.Spec.PodSelector); diff != "" {
				t.Errorf("the policy is not for every pod of the namespace (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, p.Spec.Egress); diff != "" {
				t.Errorf("egress (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("the builder leaves the servers it is given as they were", func(t *testing.T) {
		servers := []*tenancyv1alpha1.DatabaseServer{server("b", "10.0.0.2", 5432), server("a", "10.0.0.1", 5432)}
		resources.DatabaseEgress(tenant(), "tenant-acme", servers)
		if servers[0].Name != "b" || servers[1].Name != "a" {
			t.Errorf("servers reordered: %s, %s", servers[0].Name, servers[1].Name)
		}
	})
}

// DNS is opened to the cluster's DNS pods, and by address to DNS servers the configuration names
// (a node-local cache's link-local address), at port 53 only.
func TestDNSIsOpenedToTheDNSPodsAndTheConfiguredAddresses(t *testing.T) {
	dnsPorts := []networkingv1.NetworkPolicyPort{
		{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))},
		{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(53))},
	}
	pods := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
	}
	cases := map[string]struct {
		cidrs []string
		want  []networkingv1.NetworkPolicyPeer
	}{
		"by default, the kube-dns pods alone":         {nil, []networkingv1.NetworkPolicyPeer{pods}},
		"with NodeLocal DNSCache's address, it too":   {[]string{"169.254.20.10/32"}, []networkingv1.NetworkPolicyPeer{pods, block("169.254.20.10/32")}},
		"with several addresses, each in their order": {[]string{"169.254.20.10/32", "fd00::a/128"}, []networkingv1.NetworkPolicyPeer{pods, block("169.254.20.10/32"), block("fd00::a/128")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Network.DNS.CIDRs = tc.cidrs
			p := policyNamed(t, &cfg, resources.DNSPolicy)
			want := []networkingv1.NetworkPolicyEgressRule{{To: tc.want, Ports: dnsPorts}}
			if diff := cmp.Diff(want, p.Spec.Egress); diff != "" {
				t.Errorf("egress (-want +got):\n%s", diff)
			}
		})
	}
}

// The platform's services are opened to every tenant as the configuration names them: one rule
// each, to the pods it selects at the ports it lists. None by default, and the policy is there
// all the same, opening nothing, so the set of a tenant's objects does not follow the
// configuration.
func TestThePlatformEgressPolicyOpensTheConfiguredServices(t *testing.T) {
	telemetry := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "telemetry"}}
	collector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "otel-collector"}}
	gateway := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{"gateway"}}}}
	otlp := []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(4317))}, {Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(6831))}}
	cases := map[string]struct {
		services []config.PlatformService
		want     []networkingv1.NetworkPolicyEgressRule
	}{
		"by default, nothing": {nil, nil},
		"a service's pods at its ports, and another's namespace at every port": {
			[]config.PlatformService{{NamespaceSelector: telemetry, PodSelector: collector, Ports: otlp}, {NamespaceSelector: gateway}},
			[]networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: telemetry, PodSelector: collector}}, Ports: otlp},
				{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: gateway}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Network.PlatformServices = tc.services
			p := policyNamed(t, &cfg, resources.PlatformEgressPolicy)
			if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, p.Spec.PolicyTypes); diff != "" {
				t.Errorf("policy types (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, p.Spec.Egress); diff != "" {
				t.Errorf("egress (-want +got):\n%s", diff)
			}
		})
	}
}
