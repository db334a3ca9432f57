package resources_test

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

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
