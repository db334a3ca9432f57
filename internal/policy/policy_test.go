package policy_test

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"gotest.tools/v3/golden"

	"github.com/google/cel-go/cel"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/policy"
)

const shippedHeader = `# Landlord's admission policies (Kubernetes 1.36 or later), as the operator applies them at
# start-up. Generated from internal/policy: regenerate with 'go test ./internal/policy -update'.
`

// shippedOperator is the operator of the shipped install, with the default configuration.
func shippedOperator() policy.Operator {
	cfg := config.Default()
	return policy.Operator{
		User:            config.DefaultIdentity,
		NamespacePrefix: cfg.NamespacePrefix,
		Namespaces:      []string{cfg.Secrets.TemplateNamespace, cfg.Databases.CredentialsNamespace},
		Network:         policy.NetworkBoundsOf(cfg.Network),
	}
}

// config/policies ships what the operator applies, so a cluster can have the policies before
// the operator first starts (or without it). The file must never drift from the builders.
// Regenerate with `go test ./internal/policy -update`.
func TestShippedPoliciesMatchTheBuilders(t *testing.T) {
	var out bytes.Buffer
	out.WriteString(shippedHeader)
	for _, obj := range policy.Objects(shippedOperator()) {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		delete(content, "status")
		delete(content["metadata"].(map[string]any), "creationTimestamp")
		data, err := yaml.Marshal(content)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	path, err := filepath.Abs(filepath.Join("..", "..", "config", "policies", "policies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, out.String(), path)
}

func TestEveryPolicyIsLandlordsAndScopedToTenantNamespaces(t *testing.T) {
	objs := append(policy.TenantNamespaceObjects(policy.Operator{User: config.DefaultIdentity}), policy.NetworkPolicyObjects(shippedOperator())...)
	policies := map[string]bool{}
	for _, obj := range objs {
		switch obj.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicy:
			policies[obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName()] = true
		}
	}
	for _, obj := range objs {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		t.Run(kind+" "+obj.GetName()+" is labeled, named and confined to tenant namespaces", func(t *testing.T) {
			if got := obj.GetLabels()[tenancyv1alpha1.ManagedByLabel]; got != tenancyv1alpha1.ManagedByValue {
				t.Errorf("managed-by label = %q", got)
			}
			if !strings.HasPrefix(obj.GetName(), "landlord-") {
				t.Errorf("name %q does not start with landlord-", obj.GetName())
			}
			var selectors []*metav1.LabelSelector
			switch o := obj.(type) {
			case *admissionregistrationv1.ValidatingAdmissionPolicy:
				if o.Spec.FailurePolicy == nil || *o.Spec.FailurePolicy != admissionregistrationv1.Fail {
					t.Error("a validating policy must fail closed")
				}
				for _, v := range o.Spec.Validations {
					if v.MessageExpression == "" || v.Message == "" {
						t.Errorf("validation %q says nothing about what to do", v.Expression)
					}
				}
				selectors = append(selectors, o.Spec.MatchConstraints.NamespaceSelector)
			case *admissionregistrationv1.MutatingAdmissionPolicy:
				if o.Spec.FailurePolicy == nil || *o.Spec.FailurePolicy != admissionregistrationv1.Fail {
					t.Error("a mutating policy must fail closed")
				}
				if o.Spec.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
					t.Error("mutations must be reinvoked when another plugin changes the object")
				}
				selectors = append(selectors, o.Spec.MatchConstraints.NamespaceSelector)
			case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
				if len(o.Spec.ValidationActions) != 1 || o.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
					t.Errorf("validation actions = %v, want [Deny]", o.Spec.ValidationActions)
				}
				if !policies["ValidatingAdmissionPolicy/"+o.Spec.PolicyName] {
					t.Errorf("binds %q, which is not built", o.Spec.PolicyName)
				}
				selectors = append(selectors, o.Spec.MatchResources.NamespaceSelector)
			case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
				if !policies["MutatingAdmissionPolicy/"+o.Spec.PolicyName] {
					t.Errorf("binds %q, which is not built", o.Spec.PolicyName)
				}
				selectors = append(selectors, o.Spec.MatchResources.NamespaceSelector)
			default:
				t.Fatalf("unexpected %T", obj)
			}
			for _, sel := range selectors {
				if !selectsTenantNamespacesOnly(sel) {
					t.Errorf("namespace selector %v reaches beyond tenant namespaces", sel)
				}
			}
		})
	}
}

func selectsTenantNamespacesOnly(sel *metav1.LabelSelector) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	tenant := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.TenantLabel: "acme", tenancyv1alpha1.NodePoolLabel: "a", tenancyv1alpha1.CostCodeLabel: "cc-1"}
	templates := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}
	kubeSystem := map[string]string{"kubernetes.io/metadata.name": "kube-system"}
	return s.Matches(labels.Set(tenant)) && !s.Matches(labels.Set(templates)) && !s.Matches(labels.Set(kubeSystem))
}

// The protection policies reach only Landlord's own cluster-scoped objects: Tenants, and
// Landlord's CustomResourceDefinitions by name. They never judge a tenant namespace's contents
// or anyone else's CRDs.
func TestProtectionPoliciesReachOnlyLandlordsOwnObjects(t *testing.T) {
	for _, obj := range policy.ProtectionObjects(policy.Operator{User: config.DefaultIdentity}) {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		t.Run(kind+" "+obj.GetName()+" is labeled and confined to Landlord's objects", func(t *testing.T) {
			if got := obj.GetLabels()[tenancyv1alpha1.ManagedByLabel]; got != tenancyv1alpha1.ManagedByValue {
				t.Errorf("managed-by label = %q", got)
			}
			switch o := obj.(type) {
			case *admissionregistrationv1.ValidatingAdmissionPolicy:
				if o.Spec.FailurePolicy == nil || *o.Spec.FailurePolicy != admissionregistrationv1.Fail {
					t.Error("a validating policy must fail closed")
				}
				for _, v := range o.Spec.Validations {
					if v.MessageExpression == "" || v.Message == "" {
						t.Errorf("validation %q says nothing about what to do", v.Expression)
					}
				}
				for _, r := range o.Spec.MatchConstraints.ResourceRules {
					if r.Scope == nil || *r.Scope != admissionregistrationv1.ClusterScope {
						t.Errorf("rule %v is not confined to cluster-scoped objects", r.Rule)
					}
					tenants := len(r.APIGroups) == 1 && r.APIGroups[0] == tenancyv1alpha1.GroupVersion.Group && len(r.Resources) == 1 && r.Resources[0] == "tenants"
					crds := len(r.Resources) == 1 && r.Resources[0] == "customresourcedefinitions" && len(r.ResourceNames) > 0
					for _, name := range r.ResourceNames {
						crds = crds && strings.HasSuffix(name, "."+tenancyv1alpha1.GroupVersion.Group)
					}
					if !tenants && !crds {
						t.Errorf("rule %v reaches beyond Tenants and Landlord's CRDs", r)
					}
				}
			case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
				if len(o.Spec.ValidationActions) != 1 || o.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
					t.Errorf("validation actions = %v, want [Deny]", o.Spec.ValidationActions)
				}
				if o.Spec.PolicyName != o.Name {
					t.Errorf("binds %q", o.Spec.PolicyName)
				}
			default:
				t.Fatalf("unexpected %T", obj)
			}
		})
	}
}

// The confinement policy judges the operator's own namespaced writes and nothing
// else: its match condition names the operator, it leaves out events and leases (which go where
// their objects and leader election say), and it lets every namespace of the operator's own.
func TestTheConfinementPolicyJudgesOnlyTheOperatorsWrites(t *testing.T) {
	op := policy.Operator{User: "system:serviceaccount:ops:landlord", NamespacePrefix: "t-", Namespaces: []string{"landlord-templates", "landlord-system", "", "landlord-system", "ops"}}
	objs := policy.ConfinementObjects(op)
	if len(objs) != 2 {
		t.Fatalf("%d objects, want a policy and its binding", len(objs))
	}
	p, ok := objs[0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !ok {
		t.Fatalf("first object is %T", objs[0])
	}
	t.Run("it fails closed", func(t *testing.T) {
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
			t.Error("the policy does not fail closed")
		}
	})
	t.Run("it judges the operator's requests alone", func(t *testing.T) {
		if len(p.Spec.MatchConditions) != 1 || p.Spec.MatchConditions[0].Expression != `request.userInfo.username == 'system:serviceaccount:ops:landlord'` {
			t.Errorf("match conditions = %v", p.Spec.MatchConditions)
		}
	})
	t.Run("it judges namespaced writes, namespaces and volumes, and leaves out events and leases", func(t *testing.T) {
		cluster := map[string]int{}
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			if r.Scope != nil && *r.Scope == admissionregistrationv1.ClusterScope {
				for _, res := range r.Resources {
					cluster[res] = len(r.Operations)
				}
				continue
			}
			if len(r.Operations) != 3 {
				t.Errorf("rule %v judges %v, want CREATE, UPDATE, DELETE", r.Rule, r.Operations)
			}
		}
		// The operator creates no PersistentVolume; it keeps and deletes tenants'.
		if want := map[string]int{"namespaces": 3, "persistentvolumes": 2}; !maps.Equal(cluster, want) {
			t.Errorf("cluster-scoped resources judged (with their operations) = %v, want %v", cluster, want)
		}
		excluded := map[string]bool{}
		for _, r := range p.Spec.MatchConstraints.ExcludeResourceRules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					excluded[g+"/"+res] = true
				}
			}
		}
		for _, want := range []string{"/events", "events.k8s.io/events", "coordination.k8s.io/leases"} {
			if !excluded[want] {
				t.Errorf("%s is not left out", want)
			}
		}
	})
	t.Run("it names each of the operator's own namespaces once, and the tenant namespaces' prefix", func(t *testing.T) {
		expr := p.Spec.Validations[0].Expression
		if !strings.Contains(expr, `['landlord-system', 'landlord-templates', 'ops']`) {
			t.Errorf("expression %s does not list the operator's namespaces", expr)
		}
		if !strings.Contains(expr, `'t-' + namespaceObject.metadata.labels['`+tenancyv1alpha1.TenantLabel+`']`) {
			t.Errorf("expression %s does not check the tenant namespace's name", expr)
		}
	})
	t.Run("its binding denies", func(t *testing.T) {
		b, ok := objs[1].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		if !ok || b.Spec.PolicyName != p.Name || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
			t.Errorf("binding = %+v", objs[1])
		}
	})
}

// The label policy exempts the operator and Kubernetes' own controllers, which copy
// labels onto what they create, and no one else.
func TestTheLabelPolicyExemptsTheOperatorAndKubernetesControllersAlone(t *testing.T) {
	p := policy.ManagedLabelsPolicy(policy.Operator{User: "system:serviceaccount:ops:landlord"})
	if len(p.Spec.MatchConditions) != 1 {
		t.Fatalf("match conditions = %v", p.Spec.MatchConditions)
	}
	want := `!(request.userInfo.username in ['system:serviceaccount:ops:landlord', 'system:kube-controller-manager']) && ` +
		`!request.userInfo.username.startsWith('system:serviceaccount:kube-system:')`
	if got := p.Spec.MatchConditions[0].Expression; got != want {
		t.Errorf("match condition = %s, want %s", got, want)
	}
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		if len(r.Resources) != 1 || r.Resources[0] != "*" || len(r.APIGroups) != 1 || r.APIGroups[0] != "*" {
			t.Errorf("rule %v does not reach every namespaced resource", r.Rule)
		}
	}
}

// The platform's trusted tools are let past the guards over Landlord's labels, annotations and
// objects, by username (a ServiceAccount spelled as the API server spells it) or group, and past
// no other policy; a configuration that trusts no one leaves every policy as it was, so the
// shipped policies stay what the operator builds.
func TestTheGuardsLetTheTrustedPrincipalsThroughAndNoOtherPolicyDoes(t *testing.T) {
	op := policy.Operator{User: config.DefaultIdentity, Trusted: []rbacv1.Subject{
		{Kind: rbacv1.ServiceAccountKind, Namespace: "velero", Name: "velero"},
		{Kind: rbacv1.UserKind, Name: "gatekeeper"},
		{Kind: rbacv1.GroupKind, Name: "platform-tools"},
	}}
	want := admissionregistrationv1.MatchCondition{
		Name: "not-a-trusted-principal",
		Expression: `!(request.userInfo.username in ['system:serviceaccount:velero:velero', 'gatekeeper'] || ` +
			`request.userInfo.?groups.orValue([]).exists(g, g in ['platform-tools']))`,
	}
	guards := []string{policy.ManagedLabels, policy.ComponentObjects, policy.ComponentScale, policy.ControllerLabels, policy.ManagedByLabel, policy.PlatformNamespaces, policy.ServingFinalizers, policy.ManagedSecrets, policy.ManagedNetworkPolicies, policy.NamespaceLabels, policy.TenantLabels}
	plain := map[string]client.Object{}
	for _, obj := range policy.Objects(policy.Operator{User: config.DefaultIdentity}) {
		plain[obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName()] = obj
	}
	found := 0
	for _, obj := range policy.Objects(op) {
		p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		if !ok {
			continue
		}
		conditions := p.Spec.MatchConditions
		before := plain["ValidatingAdmissionPolicy/"+p.Name].(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.MatchConditions
		if slices.Contains(guards, p.Name) {
			found++
			t.Run(p.Name+" lets them through", func(t *testing.T) {
				if len(conditions) != len(before)+1 || conditions[len(conditions)-1] != want {
					t.Errorf("match conditions = %v, want those without trust and %v", conditions, want)
				}
			})
			continue
		}
		t.Run(p.Name+" holds them as anyone else", func(t *testing.T) {
			if len(conditions) != len(before) {
				t.Errorf("match conditions = %v, want %v", conditions, before)
			}
		})
	}
	if found != len(guards) {
		t.Errorf("found %d of the %d guards", found, len(guards))
	}
}

// A name is written into the policies' CEL as a quoted string: whatever it holds (a Windows-style
// user with a backslash, a quote, a control character, or text meant to close the string and add
// a condition), the string parses and holds exactly the name, so a trusted principal's match
// condition still matches a tenant admin's request and no one else is let through.
func TestNamesAreQuotedSoNoNameChangesACondition(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("name", cel.StringType))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		`CORP\svc-velero`, `CORP\velero`, `it's`, "tab\there", `x\' ] || true) && false && "`, `" != "" //`, `\`,
	} {
		t.Run(fmt.Sprintf("%q stays itself", name), func(t *testing.T) {
			op := policy.Operator{Trusted: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: name}}}
			expr := policy.ManagedLabelsPolicy(op).Spec.MatchConditions[1].Expression
			// The same quoting, alone: the literal must evaluate to the name.
			literal := strings.TrimSuffix(strings.TrimPrefix(expr, `!(request.userInfo.username in [`), `])`)
			ast, iss := env.Compile(literal + ` == name`)
			if iss.Err() != nil {
				t.Fatalf("%s does not parse: %v", literal, iss.Err())
			}
			prg, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := prg.Eval(map[string]any{"name": name})
			if err != nil || out.Value() != true {
				t.Errorf("%s is not %q: %v, %v", literal, name, out, err)
			}
		})
	}
}
