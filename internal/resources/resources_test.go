package resources_test

import (
	"bytes"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"gotest.tools/v3/golden"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/shipped"
)

func tenant(mutate ...func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
	t := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "6c2b2f7e-0000-4000-8000-000000000001"},
		Spec:       tenancyv1alpha1.TenantSpec{State: tenancyv1alpha1.StateActive, Organization: "Acme Inc."},
	}
	for _, f := range mutate {
		f(t)
	}
	return t
}

// The rendered objects are compared with reviewed files: a change to a builder shows up as a
// readable diff. Regenerate with `go test ./internal/resources -update`.
func TestBuildMatchesGoldenFiles(t *testing.T) {
	withBaseDomain := config.Default()
	withBaseDomain.Isolation.BaseDomain = "tenants.example.com"
	withBaseDomain.Network.DNS.CIDRs = []string{"169.254.20.10/32"}
	withBaseDomain.Network.PlatformServices = []config.PlatformService{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "telemetry"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "otel-collector"}},
		Ports:             []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(4317))}},
	}}
	defaults := config.Default()
	cases := map[string]struct {
		tenant *tenancyv1alpha1.Tenant
		cfg    *config.Config
	}{
		"defaults": {tenant(), &defaults},
		"everything-set": {tenant(func(t *tenancyv1alpha1.Tenant) {
			t.Spec.Access = tenancyv1alpha1.Access{
				Admins:    []tenancyv1alpha1.Subject{{Kind: "Group", Name: "oidc:acme.admins"}},
				Operators: []tenancyv1alpha1.Subject{{Kind: "User", Name: "olga@acme.example.com"}},
				Viewers:   []tenancyv1alpha1.Subject{{Kind: "ServiceAccount", Name: "ci", Namespace: "ci"}},
			}
			t.Spec.Quota = corev1.ResourceList{"cpu": resource.MustParse("2"), "count/deployments.apps": resource.MustParse("20")}
			t.Spec.Limits = &tenancyv1alpha1.Limits{Max: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}
			t.Spec.PodSecurity = tenancyv1alpha1.PodSecurityBaseline
			t.Spec.NodePool = "pool-a"
			t.Spec.Domains = []tenancyv1alpha1.Domain{"acme.example.com", "*.acme.example.com"}
		}), &withBaseDomain},
	}
	for name, tc := range cases {
		t.Run(name+" renders as reviewed", func(t *testing.T) {
			var out bytes.Buffer
			for _, obj := range resources.Build(tc.tenant, tc.cfg) {
				data, err := yaml.Marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				out.WriteString("---\n")
				out.Write(data)
			}
			golden.Assert(t, out.String(), name+".golden.yaml")
		})
	}
}

// Admission policies read the allowed domains from the namespace, never from the Tenant: the
// annotation must hold every name the tenant may serve, and nothing else.
func TestTheDomainsAnnotationListsEveryAllowedDomain(t *testing.T) {
	cases := map[string]struct {
		domains    []tenancyv1alpha1.Domain
		baseDomain string
		want       string
	}{
		"a tenant without domains and no base domain has no annotation": {nil, "", ""},
		"a tenant's domains are listed in order":                        {[]tenancyv1alpha1.Domain{"acme.example.com", "*.acme.example.com"}, "", "acme.example.com,*.acme.example.com"},
		"the base domain gives a tenant without domains its default":    {nil, "tenants.example.com", "acme.tenants.example.com"},
		"the default follows the tenant's own domains":                  {[]tenancyv1alpha1.Domain{"acme.example.com"}, "tenants.example.com", "acme.example.com,acme.tenants.example.com"},
		"a tenant listing its default domain has it once":               {[]tenancyv1alpha1.Domain{"acme.tenants.example.com"}, "tenants.example.com", "acme.tenants.example.com"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Isolation.BaseDomain = tc.baseDomain
			ns := resources.Namespace(tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Domains = tc.domains }), &cfg)
			got, ok := ns.Annotations[tenancyv1alpha1.DomainsAnnotation]
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("domains annotation = %q (present %v), want %q", got, ok, tc.want)
			}
		})
	}
}

// Pod Security Admission evaluates every level at the configured version, so a cluster upgrade
// does not change the rules under a tenant whose operator pins one.
func TestPodSecurityVersionIsPinnedOnEveryMode(t *testing.T) {
	cfg := config.Default()
	cfg.Defaults.PodSecurityVersion = "v1.36"
	labels := resources.Namespace(tenant(), &cfg).Labels
	for _, mode := range []string{"enforce", "warn", "audit"} {
		t.Run(mode+" is restricted at the pinned version", func(t *testing.T) {
			if got := labels["pod-security.kubernetes.io/"+mode]; got != "restricted" {
				t.Errorf("%s = %q", mode, got)
			}
			if got := labels["pod-security.kubernetes.io/"+mode+"-version"]; got != "v1.36" {
				t.Errorf("%s-version = %q", mode, got)
			}
		})
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	cfg := config.Default()
	tn := tenant(func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"a.example.com", "b.example.com"}
	})
	first, _ := yaml.Marshal(resources.Build(tn, &cfg))
	for range 20 {
		again, _ := yaml.Marshal(resources.Build(tn, &cfg))
		if !bytes.Equal(first, again) {
			t.Fatal("two builds of the same tenant differ")
		}
	}
}

func TestEveryObjectIsLabeledAndOwned(t *testing.T) {
	cfg := config.Default()
	tn := tenant()
	for _, obj := range resources.Build(tn, &cfg) {
		name := obj.GetObjectKind().GroupVersionKind().Kind + "/" + obj.GetName()
		t.Run(name+" carries the managed labels and a controller reference", func(t *testing.T) {
			if obj.GetObjectKind().GroupVersionKind().Kind == "" {
				t.Error("kind is not set")
			}
			if got := obj.GetLabels()[tenancyv1alpha1.ManagedByLabel]; got != "landlord" {
				t.Errorf("managed-by label = %q", got)
			}
			if got := obj.GetLabels()[tenancyv1alpha1.TenantLabel]; got != "acme" {
				t.Errorf("tenant label = %q", got)
			}
			if !metav1.IsControlledBy(obj, tn) {
				t.Error("not controlled by the tenant")
			}
		})
	}
}

func TestQuotaCannotOpenNodePorts(t *testing.T) {
	cfg := config.Default()
	tn := tenant(func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Quota = corev1.ResourceList{corev1.ResourceServicesNodePorts: resource.MustParse("5"), corev1.ResourceServicesLoadBalancers: resource.MustParse("1")}
	})
	hard := resources.ResourceQuota(tn, &cfg, "tenant-acme").Spec.Hard
	for _, r := range []corev1.ResourceName{corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers} {
		if q := hard[r]; !q.IsZero() {
			t.Errorf("%s = %s, want 0", r, q.String())
		}
	}
}

// The tenant roles are shipped as ClusterRoles and installed with Landlord; the file is compared
// with their builder. Regenerate with `go test ./internal/resources -update`.
func TestShippedTenantRolesMatchTheirBuilder(t *testing.T) {
	path, err := filepath.Abs(shipped.Path("config", "rbac", "tenant_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.WriteString("# The tenant roles, bound in each tenant namespace by Landlord. Generated from\n" +
		"# internal/resources/rbac.go: go test ./internal/resources -update\n")
	for _, role := range resources.ClusterRoles() {
		data, err := yaml.Marshal(role)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	golden.Assert(t, out.String(), path)
}

// The operator hands the tenant roles out by binding them, and holds none of what they grant:
// with "bind" on exactly the three ClusterRoles, a bug or a template can bind nothing else, and
// the operator cannot itself read a tenant's pods or exec into them.
func TestTheOperatorOnlyBindsTheTenantRoles(t *testing.T) {
	operatorRole, err := shipped.OperatorRole()
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range resources.ClusterRoles() {
		t.Run("the operator may bind "+role.Name, func(t *testing.T) {
			bind := []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{role.Name}}}
			if ok, _ := rbacvalidation.Covers(operatorRole.Rules, bind); !ok {
				t.Errorf("config/rbac/role.yaml does not let the operator bind %s", role.Name)
			}
		})
	}
	t.Run("the operator may bind no other role", func(t *testing.T) {
		other := []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"cluster-admin"}}}
		if ok, _ := rbacvalidation.Covers(operatorRole.Rules, other); ok {
			t.Error("config/rbac/role.yaml lets the operator bind cluster-admin")
		}
	})
	for _, probe := range []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "serviceaccounts"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "clusterroles"}, Verbs: []string{"create"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "clusterroles"}, Verbs: []string{"escalate"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"deletecollection"}},
	} {
		t.Run("the operator may not "+probe.Verbs[0]+" "+probe.Resources[0], func(t *testing.T) {
			if ok, _ := rbacvalidation.Covers(operatorRole.Rules, []rbacv1.PolicyRule{probe}); ok {
				t.Errorf("config/rbac/role.yaml grants %v", probe)
			}
		})
	}
}

// NetworkPolicies are not in the list: they only add paths, a tenant admin writes its own
// within bounds, and admission keeps Landlord's as they are (internal/policy, network.go).
func TestNoTenantRoleWritesTheIsolationBoundary(t *testing.T) {
	boundary := []rbacv1.PolicyRule{
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"resourcequotas", "limitranges", "namespaces"}, Verbs: []string{"update"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}, Verbs: []string{"escalate", "bind"}},
	}
	for name, rules := range resources.RoleRules() {
		for _, b := range boundary {
			for _, verb := range b.Verbs {
				for _, res := range b.Resources {
					probe := []rbacv1.PolicyRule{{APIGroups: b.APIGroups, Resources: []string{res}, Verbs: []string{verb}}}
					if ok, _ := rbacvalidation.Covers(rules, probe); ok {
						t.Errorf("%s may %s %s", name, verb, res)
					}
				}
			}
		}
	}
}

// A tenant admin writes NetworkPolicies of its own (a chart it installs may ship some); the
// operator and viewer roles neither write nor read them.
func TestOnlyTheAdminRoleWritesNetworkPolicies(t *testing.T) {
	write := []rbacv1.PolicyRule{{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create", "update", "patch", "delete"}}}
	read := []rbacv1.PolicyRule{{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"list"}}}
	for role, want := range map[string]bool{resources.AdminRole: true, resources.OperatorRole: false, resources.ViewerRole: false} {
		verdict := map[bool]string{true: " writes", false: " neither writes nor reads"}[want]
		t.Run(role+verdict+" NetworkPolicies", func(t *testing.T) {
			rules := resources.RoleRules()[role]
			if ok, _ := rbacvalidation.Covers(rules, write); ok != want {
				t.Errorf("%s may write networkpolicies: %v, want %v", role, ok, want)
			}
			if ok, _ := rbacvalidation.Covers(rules, read); ok != want {
				t.Errorf("%s may list networkpolicies: %v, want %v", role, ok, want)
			}
		})
	}
}
