package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/internal/resources"
)

// nodeLocalDNS is the address of NodeLocal DNSCache, which the suite's configuration lets
// tenants' pods query (network.dns.cidrs).
const nodeLocalDNS = "169.254.20.10/32"

// databaseEgress is the egress the tenant's database policy opens, nil while it has none.
func databaseEgress(g Gomega, tenant string) []networkingv1.NetworkPolicyEgressRule {
	p := &networkingv1.NetworkPolicy{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: opConfig.NamespaceName(tenant), Name: resources.DatabaseEgressPolicy}, p)).To(Succeed())
	g.Expect(p.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeEgress}))
	g.Expect(p.Spec.PodSelector).To(BeComparableTo(metav1.LabelSelector{}), "the policy is for every pod of the namespace")
	return p.Spec.Egress
}

// toServer is the egress rule that opens a server listening on host:port, as its address.
func toServer(host string, port int32) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: host + "/32"}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}},
	}
}

// A tenant's first real application talks to its own database: its pods may reach the servers
// its databases are placed on (the test servers listen on 127.0.0.1, a private address the
// default egress CIDRs leave closed), at their ports, and no other tenant's pods gain that path.
// The policy follows the tenant's placements, and costs nothing while they stay as they are.
func TestATenantsPodsReachItsOwnDatabaseServersOnly(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("egress-db", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	}))
	createTenant(t, newTenant("egress-none"))
	pgRule := toServer(pg.Server.Host, pg.Server.Port)
	mariaRule := toServer(maria.Server.Host, maria.Server.Port)

	t.Run("the tenant's policy opens its PostgreSQL server's address and port, and nothing else", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(pg.Server.Host).To(Equal("127.0.0.1"))
		g.Expect(databaseEgress(g, "egress-db")).To(BeComparableTo([]networkingv1.NetworkPolicyEgressRule{pgRule}))
	})

	t.Run("a tenant without databases has the policy, opening nothing", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(databaseEgress(g, "egress-none")).To(BeEmpty())
	})

	t.Run("an unchanged tenant with a database costs no request", func(t *testing.T) {
		expectNoRequestsOnResync(t, "egress-db", "egress-none")
	})

	setDatabases := func(g Gomega, databases tenancyv1alpha1.Databases) {
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "egress-db"}, tenant)).To(Succeed())
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.Databases = databases
		g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
	}
	// placementChanged changes the tenant's databases, waits until its policy opens want, and
	// returns the operator's requests meanwhile.
	placementChanged := func(t *testing.T, databases tenancyv1alpha1.Databases, want []networkingv1.NetworkPolicyEgressRule) map[string]int {
		t.Helper()
		g := NewWithT(t)
		waitIdle(t)
		before := op.Requests.Snapshot()
		setDatabases(g, databases)
		g.Eventually(func(g Gomega) {
			g.Expect(databaseEgress(g, "egress-db")).To(BeComparableTo(want))
		}).WithTimeout(timeout).Should(Succeed())
		waitReady(t, "egress-db")
		waitIdle(t)
		made := tenantRequests(op.Requests.Snapshot().Sub(before))
		t.Logf("requests made by the placement change: %s", made)
		return made
	}

	t.Run("a database placed on another server opens that server too, in one write of the policy", func(t *testing.T) {
		made := placementChanged(t, tenancyv1alpha1.Databases{
			Postgres: []tenancyv1alpha1.Database{{Name: "app"}},
			MySQL:    []tenancyv1alpha1.Database{{Name: "legacy"}},
		}, []networkingv1.NetworkPolicyEgressRule{mariaRule, pgRule})
		NewWithT(t).Expect(made["PATCH networkpolicies"]).To(Equal(1), "requests: %v", made)
	})

	t.Run("the other tenant's policy still opens nothing", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(databaseEgress(g, "egress-none")).To(BeEmpty())
	})

	t.Run("a database removed from the spec closes its server's path, in one write of the policy", func(t *testing.T) {
		made := placementChanged(t, tenancyv1alpha1.Databases{
			MySQL: []tenancyv1alpha1.Database{{Name: "legacy"}},
		}, []networkingv1.NetworkPolicyEgressRule{mariaRule})
		NewWithT(t).Expect(made["PATCH networkpolicies"]).To(Equal(1), "requests: %v", made)
	})

	t.Run("a tenant whose last database is removed keeps the policy, opening nothing", func(t *testing.T) {
		placementChanged(t, tenancyv1alpha1.Databases{}, nil)
	})
}

// A DatabaseServer says where its connections come from besides its host's address: blocks a
// DNS name resolves to, or the pods of a server in the cluster. What it says is validated, and
// reaches the policy of every tenant on the server when it changes.
func TestADatabaseServersNetworkReachesTheTenantsOnIt(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	const name = "pg-netpol"
	g.Expect(createDatabaseServer(ctx, name, pg, ptr.To[int32](1))).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: opConfig.Databases.CredentialsNamespace, Name: name + "-admin"}})
	})
	createTenant(t, newTenant("egress-pinned", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app", Server: name}}
	}))
	setNetwork := func(network *tenancyv1alpha1.DatabaseServerNetwork, opts ...client.UpdateOption) error {
		ds := &tenancyv1alpha1.DatabaseServer{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, ds); err != nil {
			return err
		}
		ds.Spec.Network = network
		return k8s.Update(ctx, ds, opts...)
	}

	invalid := []struct {
		name, message string
		network       tenancyv1alpha1.DatabaseServerNetwork
	}{
		{"a block that is not a CIDR", "every entry must be a CIDR",
			tenancyv1alpha1.DatabaseServerNetwork{CIDRs: []string{"10.20.0.300/24"}}},
		{"every address", "a CIDR must not be 0.0.0.0/0",
			tenancyv1alpha1.DatabaseServerNetwork{CIDRs: []string{"0.0.0.0/0"}}},
		{"an empty namespace selector, which selects every namespace", "an empty namespaceSelector selects every namespace",
			tenancyv1alpha1.DatabaseServerNetwork{NamespaceSelector: &metav1.LabelSelector{}}},
		{"a pod selector without a namespace selector, which selects the tenant's own pods", "podSelector needs a namespaceSelector",
			tenancyv1alpha1.DatabaseServerNetwork{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pg"}}}},
	}
	for _, tc := range invalid {
		t.Run("a network naming "+tc.name+" is refused", func(t *testing.T) {
			err := setNetwork(&tc.network, client.DryRunAll)
			g := NewWithT(t)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
			g.Expect(err).To(MatchError(ContainSubstring("spec.network")))
			g.Expect(err).To(MatchError(ContainSubstring(tc.message)))
		})
	}

	t.Run("the blocks and pods a server declares reach the policy of its tenant", func(t *testing.T) {
		g := NewWithT(t)
		pods := networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "databases"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pg"}},
		}
		g.Expect(setNetwork(&tenancyv1alpha1.DatabaseServerNetwork{
			CIDRs: []string{"10.99.0.0/24"}, NamespaceSelector: pods.NamespaceSelector, PodSelector: pods.PodSelector,
		})).To(Succeed())
		want := toServer(pg.Server.Host, pg.Server.Port)
		want.To = append(want.To, ipBlock("10.99.0.0/24"), pods)
		g.Eventually(func(g Gomega) {
			g.Expect(databaseEgress(g, "egress-pinned")).To(BeComparableTo([]networkingv1.NetworkPolicyEgressRule{want}))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a server's network removed leaves its tenant its address alone", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(setNetwork(nil)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(databaseEgress(g, "egress-pinned")).To(BeComparableTo([]networkingv1.NetworkPolicyEgressRule{toServer(pg.Server.Host, pg.Server.Port)}))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a server deleted is no longer reachable from its tenant's pods", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Delete(ctx, &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(databaseEgress(g, "egress-pinned")).To(BeEmpty())
		}).WithTimeout(timeout).Should(Succeed())
	})
}

// netpol is a NetworkPolicy of the tenant's own over every pod of ns.
func netpol(ns, name string, mutate func(*networkingv1.NetworkPolicySpec)) *networkingv1.NetworkPolicy {
	p := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	mutate(&p.Spec)
	return p
}

func egressTo(peers ...networkingv1.NetworkPolicyPeer) func(*networkingv1.NetworkPolicySpec) {
	return func(s *networkingv1.NetworkPolicySpec) {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		s.Egress = []networkingv1.NetworkPolicyEgressRule{{To: peers}}
	}
}

func ingressFrom(peers ...networkingv1.NetworkPolicyPeer) func(*networkingv1.NetworkPolicySpec) {
	return func(s *networkingv1.NetworkPolicySpec) {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: peers}}
	}
}

func namespaceNamed(names ...string) networkingv1.NetworkPolicyPeer {
	if len(names) == 1 {
		return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: names[0]}}}
	}
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: names},
	}}}
}

func ipBlock(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
}

var ownPods = networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}

// Tenant admins write NetworkPolicies of their own (a chart that ships one installs), within
// bounds: peers in their own namespace, the platform's namespaces, and address blocks within
// those the configuration opens. Another tenant's namespace, a selector that could match one, a
// private block, the cloud metadata address and a rule open to everyone are refused, naming the
// field and saying what is allowed; Landlord's own policies stay Landlord's.
func TestTenantNetworkPoliciesStayWithinTheirBounds(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("netpol-own", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "netpol-admin"}}
	}))
	createTenant(t, newTenant("netpol-other"))
	const ns, other = "tenant-netpol-own", "tenant-netpol-other"
	admin := impersonate(t, "netpol-admin")
	NewWithT(t).Eventually(func() error {
		return admin.Create(ctx, netpol(ns, "probe", egressTo(ipBlock("169.254.169.254/32"))), client.DryRunAll)
	}).WithTimeout(timeout).Should(MatchError(ContainSubstring("ValidatingAdmissionPolicy '"+policy.NetworkPolicyPeers+"'")), "the policy is not in force yet")

	// What each refusal says is allowed instead: the namespaces by name, the address blocks of the
	// configuration (network.egressCIDRs, and network.dns.cidrs at DNS's port), or peers at all.
	const (
		namespaces = "among tenant-netpol-own, ingress-nginx, monitoring, telemetry"
		egressOwn  = "for egress tenant-netpol-own alone"
		blocks     = "(0.0.0.0/0 except 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 169.254.0.0/16, 100.64.0.0/10; " + nodeLocalDNS + " at port 53 (DNS) only)"
		peers      = "list the pods (a podSelector), namespaces (tenant-netpol-own, ingress-nginx, monitoring, telemetry"
	)
	refused := []struct {
		name, field, allowed string
		spec                 func(*networkingv1.NetworkPolicySpec)
	}{
		{"a policy letting its pods reach another tenant's namespace",
			"spec.egress[0].to[0].namespaceSelector", namespaces, egressTo(namespaceNamed(other))},
		{"a policy letting another tenant's namespace in",
			"spec.ingress[0].from[0].namespaceSelector", namespaces, ingressFrom(namespaceNamed(other))},
		{"a policy naming its own namespace and another tenant's",
			"spec.egress[0].to[0].namespaceSelector", namespaces, egressTo(namespaceNamed(ns, other))},
		{"a policy selecting namespaces by a label anyone who may label a namespace can add",
			"spec.egress[0].to[0].namespaceSelector", namespaces, egressTo(networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}})},
		{"a policy selecting every namespace",
			"spec.ingress[0].from[0].namespaceSelector", namespaces, ingressFrom(networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}})},
		// The platform's services are opened by Landlord's landlord-allow-platform-egress, to the
		// pods and ports the configuration names; a tenant's own policy may not open the rest of
		// those namespaces (the monitoring stack's every port, the ingress controller's webhook).
		{"a policy reaching every pod of a namespace the platform lets reach tenants",
			"spec.egress[0].to[0].namespaceSelector", egressOwn, egressTo(networkingv1.NetworkPolicyPeer{
				NamespaceSelector: namespaceNamed("monitoring").NamespaceSelector,
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "alertmanager"}},
			})},
		{"a policy reaching a platform service's whole namespace",
			"spec.egress[0].to[0].namespaceSelector", egressOwn, egressTo(namespaceNamed("telemetry"))},
		{"a policy reaching a private address block",
			"spec.egress[0].to[0].ipBlock 10.0.0.0/16", blocks, egressTo(ipBlock("10.0.0.0/16"))},
		{"a policy reaching the cloud metadata address",
			"spec.egress[0].to[0].ipBlock 169.254.169.254/32", blocks, egressTo(ipBlock("169.254.169.254/32"))},
		{"a policy reaching every address, private ones included",
			"spec.egress[0].to[0].ipBlock 0.0.0.0/0", blocks, egressTo(ipBlock("0.0.0.0/0"))},
		{"a policy reaching the internet and the link-local range the configuration keeps closed",
			"spec.egress[0].to[0].ipBlock 0.0.0.0/0", blocks, egressTo(ipBlock("0.0.0.0/0", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))},
		{"a policy reaching an IPv6 block the configuration does not open",
			"spec.egress[0].to[0].ipBlock 2001:db8::/32", blocks, egressTo(ipBlock("2001:db8::/32"))},
		{"a policy whose second peer reaches the cloud metadata address",
			"spec.egress[0].to[1].ipBlock 169.254.169.254/32", blocks, egressTo(ownPods, ipBlock("169.254.169.254/32"))},
		{"a policy letting in any address",
			"spec.ingress[0].from[0].ipBlock 0.0.0.0/0", blocks, ingressFrom(ipBlock("0.0.0.0/0"))},
		{"a policy reaching the node-local DNS cache's address at another port than DNS's",
			"spec.egress[0].to[0].ipBlock " + nodeLocalDNS, blocks, func(s *networkingv1.NetworkPolicySpec) {
				egressTo(ipBlock(nodeLocalDNS))(s)
				s.Egress[0].Ports = []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(10250))}}
			}},
		{"a policy letting in the node-local DNS cache's address",
			"spec.ingress[0].from[0].ipBlock " + nodeLocalDNS, blocks, ingressFrom(ipBlock(nodeLocalDNS))},
		{"an egress rule naming no peer, which would reach everything",
			"spec.egress[0].to", peers, func(s *networkingv1.NetworkPolicySpec) {
				s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
				s.Egress = []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(443))}}}}
			}},
		{"an ingress rule naming no peer, which would let everyone in",
			"spec.ingress[1].from", peers, func(s *networkingv1.NetworkPolicySpec) {
				s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
				s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{ownPods}}, {}}
			}},
	}
	for i, tc := range refused {
		t.Run(tc.name+" is refused, naming the field", func(t *testing.T) {
			g := NewWithT(t)
			err := admin.Create(ctx, netpol(ns, fmt.Sprintf("refused-%d", i), tc.spec))
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			g.Expect(err).To(MatchError(ContainSubstring(tc.field)), "the message names the field")
			g.Expect(err).To(MatchError(ContainSubstring(tc.allowed)), "the message says what is allowed")
		})
	}

	admitted := []struct {
		name string
		spec func(*networkingv1.NetworkPolicySpec)
	}{
		{"a policy between its own pods", func(s *networkingv1.NetworkPolicySpec) {
			s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{ownPods}}}
			s.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{ownPods}}}
		}},
		{"a policy naming its own namespace by name", egressTo(namespaceNamed(ns))},
		{"a policy naming its own namespace and the ingress controller's by name", ingressFrom(namespaceNamed(ns, "ingress-nginx"))},
		{"a policy letting in the platform's ingress controller", ingressFrom(namespaceNamed("ingress-nginx"))},
		{"a policy reaching a public address block", egressTo(ipBlock("203.0.113.0/24"))},
		{"a policy querying the node-local DNS cache at port 53", func(s *networkingv1.NetworkPolicySpec) {
			egressTo(ipBlock(nodeLocalDNS))(s)
			s.Egress[0].Ports = []networkingv1.NetworkPolicyPort{
				{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))},
				{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(53))},
			}
		}},
		{"a policy reaching the internet but the private ranges, as the configuration does",
			egressTo(ipBlock("0.0.0.0/0", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"))},
	}
	for i, tc := range admitted {
		t.Run(tc.name+" is admitted", func(t *testing.T) {
			NewWithT(t).Expect(admin.Create(ctx, netpol(ns, fmt.Sprintf("admitted-%d", i), tc.spec))).To(Succeed())
		})
	}

	t.Run("its own policy changed to reach the cloud metadata address is refused", func(t *testing.T) {
		g := NewWithT(t)
		own := netpol(ns, "public", egressTo(ipBlock("203.0.113.0/24")))
		g.Expect(admin.Create(ctx, own)).To(Succeed())
		own.Spec.Egress[0].To = append(own.Spec.Egress[0].To, ipBlock("169.254.169.254/32"))
		err := admin.Update(ctx, own)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
		g.Expect(err).To(MatchError(ContainSubstring("spec.egress[0].to[1].ipBlock 169.254.169.254/32")))
	})

	t.Run("its own policy is relabelled and deleted by the tenant admin", func(t *testing.T) {
		g := NewWithT(t)
		own := &networkingv1.NetworkPolicy{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "public"}, own)).To(Succeed())
		own.Labels = map[string]string{"team": "web"}
		g.Expect(admin.Update(ctx, own)).To(Succeed())
		g.Expect(admin.Delete(ctx, own)).To(Succeed())
	})

	landlords := []struct {
		name string
		do   func() error
	}{
		// A change its own policies could make: the guard, not the bounds, refuses it.
		{"changing Landlord's default-deny policy, even within its bounds", func() error {
			p := &networkingv1.NetworkPolicy{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.DefaultDenyPolicy}, p); err != nil {
				return err
			}
			p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{ownPods}}}
			return admin.Update(ctx, p)
		}},
		{"deleting Landlord's default-deny policy", func() error {
			return admin.Delete(ctx, named(&networkingv1.NetworkPolicy{}, ns, resources.DefaultDenyPolicy))
		}},
		{"deleting Landlord's database egress policy", func() error {
			return admin.Delete(ctx, named(&networkingv1.NetworkPolicy{}, ns, resources.DatabaseEgressPolicy))
		}},
		{"deleting every policy of the namespace at once", func() error {
			return admin.DeleteAllOf(ctx, &networkingv1.NetworkPolicy{}, client.InNamespace(ns))
		}},
	}
	for _, tc := range landlords {
		t.Run("a tenant admin "+tc.name+" is forbidden", func(t *testing.T) {
			g := NewWithT(t)
			err := tc.do()
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			g.Expect(err).To(MatchError(ContainSubstring("is Landlord's, part of the isolation of " + ns + ": only the platform changes or deletes it")))
			for _, name := range []string{resources.DefaultDenyPolicy, resources.DatabaseEgressPolicy} {
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &networkingv1.NetworkPolicy{})).To(Succeed(), "%s is still there", name)
			}
		})
	}
}
