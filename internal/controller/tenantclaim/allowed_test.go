package tenantclaim

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestAPoolRefusesClaimsItDoesNotAllow(t *testing.T) {
	pool := func(claims tenancyv1alpha1.TenantPoolClaims) *tenancyv1alpha1.TenantPool {
		return &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Spec: tenancyv1alpha1.TenantPoolSpec{Claims: claims}}
	}
	claim := func(labels map[string]string) *tenancyv1alpha1.TenantClaim {
		return &tenancyv1alpha1.TenantClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "signup", Name: "acme"}, Spec: tenancyv1alpha1.TenantClaimSpec{Pool: "standard", Labels: labels}}
	}
	signups := &metav1.LabelSelector{MatchLabels: map[string]string{"signup": "true"}}
	regions := []tenancyv1alpha1.AllowedClaimLabel{{Key: "region", Values: []string{"eu", "us"}}, {Key: "team"}}
	for _, tc := range []struct {
		name            string
		claims          tenancyv1alpha1.TenantPoolClaims
		labels          map[string]string
		namespaceLabels map[string]string
		refused         string // a part of the message; "" when the claim is allowed
	}{
		{name: "a pool that says nothing binds a claim without labels from any namespace"},
		{name: "a pool that says nothing refuses every label", labels: map[string]string{"plan": "enterprise"},
			refused: "spec.labels.plan: TenantPool standard does not let a claim set the label plan (spec.claims.allowedLabels: none)"},
		{name: "a claim from a selected namespace is bound", claims: tenancyv1alpha1.TenantPoolClaims{NamespaceSelector: signups}, namespaceLabels: map[string]string{"signup": "true"}},
		{name: "a claim from another namespace is refused, naming it", claims: tenancyv1alpha1.TenantPoolClaims{NamespaceSelector: signups},
			refused: "binds claims only from namespaces matching spec.claims.namespaceSelector (signup=true); namespace signup does not match"},
		{name: "an empty selector selects every namespace", claims: tenancyv1alpha1.TenantPoolClaims{NamespaceSelector: &metav1.LabelSelector{}}},
		{name: "a listed label with a listed value is allowed", claims: tenancyv1alpha1.TenantPoolClaims{AllowedLabels: regions}, labels: map[string]string{"region": "eu"}},
		{name: "a listed label without values takes any", claims: tenancyv1alpha1.TenantPoolClaims{AllowedLabels: regions}, labels: map[string]string{"team": "anything"}},
		{name: "a listed label with another value is refused", claims: tenancyv1alpha1.TenantPoolClaims{AllowedLabels: regions}, labels: map[string]string{"region": "asia"},
			refused: `spec.labels.region: TenantPool standard lets a claim set region only to eu, us, not "asia"`},
		{name: "of several labels, the first refused in key order is named", claims: tenancyv1alpha1.TenantPoolClaims{AllowedLabels: regions},
			labels: map[string]string{"zone": "a", "plan": "enterprise", "region": "eu"}, refused: "spec.labels.plan: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := refusal(pool(tc.claims), claim(tc.labels), tc.namespaceLabels)
			if tc.refused == "" && got != "" || tc.refused != "" && !strings.Contains(got, tc.refused) {
				t.Errorf("refusal = %q, want %q", got, tc.refused)
			}
		})
	}
}
