package component_test

import (
	"errors"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/test/shipped"
)

// RBAC, NetworkPolicies, quotas and limit ranges in the tenant namespace are what the tenant's
// roles promise it never controls, so a template must not render them. A component may render
// only allowed kinds, and some kinds never, whatever the configuration says.
func TestAComponentMayRenderOnlyAllowedKinds(t *testing.T) {
	allowed := append(component.DefaultAllowedKinds(), schema.GroupKind{Group: "example.com", Kind: "Widget"})
	for _, tc := range []struct {
		name       string
		gk         schema.GroupKind
		namespaced bool
		// want is "" for allowed, else words the error must contain.
		want []string
		// never: no configuration can allow the kind.
		never bool
	}{
		{name: "a Deployment is allowed by default", gk: schema.GroupKind{Group: "apps", Kind: "Deployment"}, namespaced: true},
		{name: "an HTTPRoute is allowed by default", gk: schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute"}, namespaced: true},
		{name: "a kind added in the configuration is allowed", gk: schema.GroupKind{Group: "example.com", Kind: "Widget"}, namespaced: true},
		{name: "a Pod is refused, with how to allow it", gk: schema.GroupKind{Kind: "Pod"}, namespaced: true, want: []string{"Pod x: Pod is not among the kinds", `{group: "", kind: Pod}`, "components.allowedKinds"}},
		{name: "a ServiceAccount is refused by default", gk: schema.GroupKind{Kind: "ServiceAccount"}, namespaced: true, want: []string{"components.allowedKinds"}},
		{name: "a Role is never allowed", gk: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}, namespaced: true, never: true, want: []string{"may never render Role.rbac.authorization.k8s.io", "RBAC"}},
		{name: "a RoleBinding is never allowed", gk: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}, namespaced: true, never: true, want: []string{"may never render"}},
		{name: "a NetworkPolicy is never allowed", gk: schema.GroupKind{Group: "networking.k8s.io", Kind: "NetworkPolicy"}, namespaced: true, never: true, want: []string{"may never render NetworkPolicy.networking.k8s.io"}},
		{name: "hand-written Endpoints are never allowed", gk: schema.GroupKind{Group: "", Kind: "Endpoints"}, namespaced: true, never: true, want: []string{"may never render Endpoints", "another tenant"}},
		{name: "a hand-written EndpointSlice is never allowed", gk: schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"}, namespaced: true, never: true, want: []string{"may never render EndpointSlice.discovery.k8s.io"}},
		{name: "a CNI's network policy is never allowed", gk: schema.GroupKind{Group: "cilium.io", Kind: "CiliumNetworkPolicy"}, namespaced: true, never: true, want: []string{"may never render CiliumNetworkPolicy.cilium.io"}},
		{name: "a ResourceQuota is never allowed", gk: schema.GroupKind{Kind: "ResourceQuota"}, namespaced: true, never: true, want: []string{"may never render ResourceQuota"}},
		{name: "a LimitRange is never allowed", gk: schema.GroupKind{Kind: "LimitRange"}, namespaced: true, never: true, want: []string{"may never render LimitRange"}},
		{name: "an admission policy binding is never allowed", gk: schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}, never: true, want: []string{"cluster-scoped"}},
		{name: "a TenantClaim is never allowed", gk: schema.GroupKind{Group: "tenancy.landlord.dev", Kind: "TenantClaim"}, namespaced: true, never: true, want: []string{"may never render TenantClaim"}},
		{name: "a Namespace is never allowed", gk: schema.GroupKind{Kind: "Namespace"}, never: true, want: []string{"Namespace x is cluster-scoped"}},
		{name: "an allowed kind that is cluster-scoped is refused", gk: schema.GroupKind{Group: "example.com", Kind: "Widget"}, never: true, want: []string{"Widget x is cluster-scoped"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := component.CheckKind(allowed, tc.gk, "x", tc.namespaced)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ke *component.KindError
			if !errors.As(err, &ke) {
				t.Fatalf("want a KindError, got %v", err)
			}
			if ke.Never != tc.never {
				t.Errorf("never = %v, want %v", ke.Never, tc.never)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestNoDefaultAllowedKindIsNeverAllowed(t *testing.T) {
	for _, gk := range component.DefaultAllowedKinds() {
		if why := component.NeverAllowed(gk); why != "" {
			t.Errorf("%s is allowed by default and never allowed: %s", gk, why)
		}
	}
}

// The operator's role must let it watch and write every kind components may render by default,
// or a tenant pinning an ordinary template would stall on a permission the install left out.
func TestTheOperatorsRoleCoversEveryDefaultAllowedKind(t *testing.T) {
	role, err := shipped.OperatorRole()
	if err != nil {
		t.Fatal(err)
	}
	for _, gk := range component.DefaultAllowedKinds() {
		// Every default kind's resource is its lowercase plural.
		resource := strings.ToLower(gk.Kind) + "s"
		if strings.HasSuffix(gk.Kind, "s") {
			resource = strings.ToLower(gk.Kind) + "es"
		}
		name := strings.TrimSuffix(resource+"."+gk.Group, ".")
		t.Run("the operator may watch and write "+name, func(t *testing.T) {
			want := []rbacv1.PolicyRule{{APIGroups: []string{gk.Group}, Resources: []string{resource}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}}}
			if ok, missing := rbacvalidation.Covers(role.Rules, want); !ok {
				t.Errorf("config/rbac/role.yaml does not grant %v", missing)
			}
		})
	}
}
