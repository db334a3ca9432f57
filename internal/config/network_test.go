package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/internal/config"
)

// The network section is checked field by field, each mistake named by its path, so that a
// typo stops the operator at start rather than every tenant's policy write, and a setting that
// would open tenants to each other is refused outright.
func TestTheNetworkSectionIsValidated(t *testing.T) {
	cases := map[string]struct {
		doc, want string
	}{
		"a DNS server address that is not a CIDR": {"network: {dns: {cidrs: [169.254.20.10]}}",
			`network.dns.cidrs[0]: "169.254.20.10" is not a CIDR, such as 169.254.20.10/32`},
		"every address as a DNS server": {"network: {dns: {cidrs: [169.254.20.10/32, 0.0.0.0/0]}}",
			`network.dns.cidrs[1]: "0.0.0.0/0" would let tenant pods query every address at port 53`},
		"a DNS server address listed twice": {"network: {dns: {cidrs: [169.254.20.10/32, 169.254.20.10/32]}}",
			`network.dns.cidrs[1]: "169.254.20.10/32" is listed twice`},
		"a platform service without a namespace selector": {"network: {platformServices: [{ports: [{port: 4317}]}]}",
			"network.platformServices[0].namespaceSelector is required"},
		"a platform service selecting every namespace": {"network: {platformServices: [{namespaceSelector: {}}]}",
			"network.platformServices[0].namespaceSelector: an empty selector selects every namespace, other tenants' included"},
		"a platform service with an invalid namespace selector": {"network: {platformServices: [{namespaceSelector: {matchExpressions: [{key: a, operator: Near}]}}]}",
			"network.platformServices[0].namespaceSelector: "},
		"a platform service with an invalid pod selector": {"network: {platformServices: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: telemetry}}, podSelector: {matchLabels: {'a b': c}}}]}",
			"network.platformServices[0].podSelector: "},
		"a platform service port out of range": {"network: {platformServices: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: telemetry}}, ports: [{port: 4317}, {port: 70000}]}]}",
			"network.platformServices[0].ports[1].port: 70000 is not a port number, 1 to 65535"},
		"a platform service port of an unknown protocol": {"network: {platformServices: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: telemetry}}, ports: [{port: 4317, protocol: ICMP}]}]}",
			`network.platformServices[0].ports[0].protocol: "ICMP" is not TCP, UDP or SCTP`},
		"a platform service port range ending before it starts": {"network: {platformServices: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: telemetry}}, ports: [{port: 4317, endPort: 4000}]}]}",
			"network.platformServices[0].ports[0].endPort: 4000 is not between port 4317 and 65535"},
		"a platform service port range from a named port": {"network: {platformServices: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: telemetry}}, ports: [{port: otlp, endPort: 4400}]}]}",
			`network.platformServices[0].ports[0].endPort needs a numeric port, not "otlp"`},
		"a platform service with an invalid port name": {"network: {platformServices: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: telemetry}}, ports: [{port: Not_A_Name}]}]}",
			`network.platformServices[0].ports[0].port: "Not_A_Name" is not a port number or name`},
		"an unknown field in a platform service": {"network: {platformServices: [{namespaceSelectr: {}}]}",
			`unknown field "namespaceSelectr"`},
	}
	for name, tc := range cases {
		t.Run(name+" is rejected, naming the field", func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// By default no DNS server is opened by address and no platform service is opened to tenants:
// both depend on the cluster, and the platform team names them.
func TestTheNetworkDefaultsOpenNoDNSAddressAndNoPlatformService(t *testing.T) {
	c := config.Default()
	if len(c.Network.DNS.CIDRs) != 0 {
		t.Errorf("network.dns.cidrs = %v, want none", c.Network.DNS.CIDRs)
	}
	if len(c.Network.PlatformServices) != 0 {
		t.Errorf("network.platformServices = %v, want none", c.Network.PlatformServices)
	}
	t.Run("a configuration with NodeLocal DNSCache and a telemetry collector loads", func(t *testing.T) {
		c, err := config.Parse([]byte(`
network:
  dns: {cidrs: [169.254.20.10/32]}
  platformServices:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: telemetry}}
      podSelector: {matchLabels: {app: otel-collector}}
      ports: [{port: 4317}, {port: 6831, protocol: UDP}, {port: 9000, endPort: 9010}, {port: otlp-http}]
`))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Network.DNS.CIDRs; !slices.Equal(got, []string{"169.254.20.10/32"}) {
			t.Errorf("network.dns.cidrs = %v", got)
		}
		if got := c.Network.PlatformServices; len(got) != 1 || len(got[0].Ports) != 4 {
			t.Errorf("network.platformServices = %+v", got)
		}
	})
}

// Tenants' own NetworkPolicies may name the platform's namespaces that the configuration names
// by kubernetes.io/metadata.name, and no namespace it selects by another label: the name of a
// namespace selected by a label does not say which namespaces carry the label tomorrow.
func TestThePlatformsNamespacesAreThoseNamedByName(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want []string
	}{
		"by default, the ingress controller's and monitoring's": {"", []string{"ingress-nginx", "monitoring"}},
		"platform services named by matchLabels or In join them, each once": {`
network:
  platformServices:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: telemetry}}
    - namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [gateway, monitoring]}]}
`, []string{"gateway", "ingress-nginx", "monitoring", "telemetry"}},
		"namespaces selected by another label are not named": {`
network:
  platformNamespaceSelector: {matchLabels: {team: platform}}
  platformServices:
    - namespaceSelector: {matchExpressions: [{key: team, operator: In, values: [observability]}]}
`, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Network.PlatformNamespaceNames(); !slices.Equal(got, tc.want) {
				t.Errorf("platform namespace names = %v, want %v", got, tc.want)
			}
		})
	}
}
