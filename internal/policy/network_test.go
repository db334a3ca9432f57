package policy_test

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/policy"
)

// The bounds of tenants' own NetworkPolicies come from the network configuration: the platform's
// namespaces by name, network.egressCIDRs with their exceptions, and network.dns.cidrs.
func TestTheNetworkBoundsAreTheNetworkConfiguration(t *testing.T) {
	c, err := config.Parse([]byte(`
network:
  dns: {cidrs: [169.254.20.10/32]}
  egressCIDRs: [{cidr: 0.0.0.0/0, except: [10.0.0.0/8]}, {cidr: 2001:db8::/32}]
  platformServices: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: telemetry}}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	b := policy.NetworkBoundsOf(c.Network)
	if want := []string{"ingress-nginx", "monitoring", "telemetry"}; !slices.Equal(b.Namespaces, want) {
		t.Errorf("namespaces = %v, want %v", b.Namespaces, want)
	}
	if len(b.Blocks) != 2 || b.Blocks[0].CIDR != "0.0.0.0/0" || !slices.Equal(b.Blocks[0].Except, []string{"10.0.0.0/8"}) || b.Blocks[1].CIDR != "2001:db8::/32" {
		t.Errorf("blocks = %+v", b.Blocks)
	}
	if !slices.Equal(b.DNSBlocks, []string{"169.254.20.10/32"}) {
		t.Errorf("DNS blocks = %v", b.DNSBlocks)
	}
}

// The peers policy judges tenants' own NetworkPolicies and nothing else: creates and updates of
// NetworkPolicies whose spec changed, by anyone but the operator and whoever may change the
// namespace's quota. Its expressions carry the bounds it was built with, and its messages say
// what they are.
func TestThePeersPolicyJudgesTenantsNetworkPoliciesByTheirBounds(t *testing.T) {
	op := policy.Operator{User: "system:serviceaccount:ops:landlord", Network: policy.NetworkBounds{
		Namespaces: []string{"ingress-nginx"},
		Blocks:     []policy.Block{{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8", "169.254.0.0/16"}}},
		DNSBlocks:  []string{"169.254.20.10/32"},
	}}
	p := policy.NetworkPolicyPeersPolicy(op)
	t.Run("it judges creates and updates of NetworkPolicies only", func(t *testing.T) {
		rules := p.Spec.MatchConstraints.ResourceRules
		if len(rules) != 1 || !slices.Equal(rules[0].Resources, []string{"networkpolicies"}) || !slices.Equal(rules[0].APIGroups, []string{"networking.k8s.io"}) ||
			!slices.Equal(rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
			t.Errorf("rules = %+v", rules)
		}
	})
	t.Run("it leaves the operator, the platform and unchanged specs alone", func(t *testing.T) {
		var conds []string
		for _, c := range p.Spec.MatchConditions {
			conds = append(conds, c.Expression)
		}
		all := strings.Join(conds, " && ")
		for _, want := range []string{
			`object.spec != oldObject.spec`,
			`request.userInfo.username != 'system:serviceaccount:ops:landlord'`,
			`!authorizer.group('').resource('resourcequotas').namespace(request.namespace).check('patch').allowed()`,
		} {
			if !strings.Contains(all, want) {
				t.Errorf("match conditions %v lack %s", conds, want)
			}
		}
	})
	variables := map[string]string{}
	for _, v := range p.Spec.Variables {
		variables[v.Name] = v.Expression
	}
	t.Run("the tenant's own namespace comes first among those it may name, then the platform's", func(t *testing.T) {
		if got := variables["namespaces"]; got != `[namespaceObject.metadata.name] + ['ingress-nginx']` {
			t.Errorf("namespaces = %s", got)
		}
	})
	t.Run("an ipBlock is judged by each block and exception, and by the DNS blocks at port 53 only, in egress only", func(t *testing.T) {
		blocks := variables["foreignBlocks"]
		ingress, egress, ok := strings.Cut(blocks, "object.spec.?egress")
		if !ok {
			t.Fatalf("foreignBlocks judges no egress: %s", blocks)
		}
		for _, want := range []string{`cidr('0.0.0.0/0').containsCIDR(p.ipBlock.cidr)`, `['10.0.0.0/8', '169.254.0.0/16'].all(x,`} {
			if !strings.Contains(ingress, want) || !strings.Contains(egress, want) {
				t.Errorf("foreignBlocks does not judge both directions by %s: %s", want, blocks)
			}
		}
		if strings.Contains(ingress, "169.254.20.10") || !strings.Contains(egress, `cidr('169.254.20.10/32')`) || !strings.Contains(egress, `string(q.port) == '53'`) {
			t.Errorf("the DNS blocks are not for egress at port 53 alone: %s", blocks)
		}
	})
	t.Run("without DNS blocks, ports are not looked at", func(t *testing.T) {
		none := op
		none.Network.DNSBlocks = nil
		for _, v := range policy.NetworkPolicyPeersPolicy(none).Spec.Variables {
			if strings.Contains(v.Expression, "ports") {
				t.Errorf("variable %s reads ports: %s", v.Name, v.Expression)
			}
		}
	})
	t.Run("its messages say which blocks are allowed", func(t *testing.T) {
		for _, v := range p.Spec.Validations {
			if strings.Contains(v.Expression, "foreignBlocks") &&
				!strings.Contains(v.MessageExpression, "(0.0.0.0/0 except 10.0.0.0/8, 169.254.0.0/16; 169.254.20.10/32 at port 53 (DNS) only)") {
				t.Errorf("message %s does not list the blocks", v.MessageExpression)
			}
		}
	})
	t.Run("with no blocks, no ipBlock is admitted and the message says none", func(t *testing.T) {
		closed := policy.NetworkPolicyPeersPolicy(policy.Operator{User: op.User})
		for _, v := range closed.Spec.Variables {
			if v.Name == "foreignBlocks" && !strings.Contains(v.Expression, "(!has(p.ipBlock) || false)") {
				t.Errorf("foreignBlocks = %s", v.Expression)
			}
		}
		for _, v := range closed.Spec.Validations {
			if strings.Contains(v.Expression, "foreignBlocks") && !strings.Contains(v.MessageExpression, "may name (none)") {
				t.Errorf("message = %s", v.MessageExpression)
			}
		}
	})
}

// Landlord's own NetworkPolicies and Secrets are refused to tenant users: each policy reaches
// updates and deletes of objects labelled as Landlord's for a tenant (labels only the operator
// sets, so a tenant cannot shed them by taking an owner reference off), and lets the operator
// and Kubernetes' controllers (the namespace controller empties a namespace being deleted)
// through. A component's Secrets are the component-objects policy's.
func TestLandlordsNetworkPoliciesAndSecretsAreGuardedByTheirLabels(t *testing.T) {
	op := policy.Operator{User: "system:serviceaccount:ops:landlord"}
	landlords := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.TenantLabel: "acme"}
	components := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.TenantLabel: "acme", tenancyv1alpha1.ComponentLabel: "web"}
	for _, pc := range []struct {
		policy              *admissionregistrationv1.ValidatingAdmissionPolicy
		resource            string
		componentsOwnGuards bool
	}{
		{policy.ManagedNetworkPoliciesPolicy(op), "networkpolicies", false},
		{policy.ManagedSecretsPolicy(op), "secrets", true},
	} {
		p := pc.policy
		t.Run(p.Name, func(t *testing.T) {
			rules := p.Spec.MatchConstraints.ResourceRules
			if len(rules) != 1 || !slices.Equal(rules[0].Resources, []string{pc.resource}) ||
				!slices.Equal(rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete}) {
				t.Errorf("rules = %+v", rules)
			}
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.MatchConstraints.ObjectSelector)
			if err != nil {
				t.Fatal(err)
			}
			for name, tc := range map[string]struct {
				labels  map[string]string
				guarded bool
			}{
				"Landlord's, for a tenant":      {landlords, true},
				"a component's":                 {components, !pc.componentsOwnGuards},
				"the tenant's own":              {map[string]string{"app": "web"}, false},
				"another tool's":                {map[string]string{tenancyv1alpha1.ManagedByLabel: "Helm"}, false},
				"Landlord's, for no one tenant": {map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}, false},
			} {
				t.Run(name+map[bool]string{true: " is guarded", false: " is not"}[tc.guarded], func(t *testing.T) {
					if got := sel.Matches(labels.Set(tc.labels)); got != tc.guarded {
						t.Errorf("object selector %s matches %v: %v", sel, tc.labels, got)
					}
				})
			}
			want := `!(request.userInfo.username in ['system:serviceaccount:ops:landlord', 'system:kube-controller-manager']) && ` +
				`!request.userInfo.username.startsWith('system:serviceaccount:kube-system:')`
			if len(p.Spec.MatchConditions) != 1 || p.Spec.MatchConditions[0].Expression != want {
				t.Errorf("match conditions = %+v, want %s", p.Spec.MatchConditions, want)
			}
		})
	}
}
