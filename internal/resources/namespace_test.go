package resources_test

import (
	"testing"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/resources"
)

// Finding 1: the Ingress classes a tenant may use reach the admission policy through its
// namespace: the Tenant's own list, else the operator's default, else no annotation (any class).
func TestTheIngressClassesAnnotationListsTheAllowedClasses(t *testing.T) {
	cases := map[string]struct {
		tenant   []tenancyv1alpha1.IngressClassName
		operator []string
		want     string
	}{
		"a tenant without classes under an operator without a default has no annotation": {nil, nil, ""},
		"a tenant without classes gets the operator's default":                           {nil, []string{"nginx", "internal"}, "nginx,internal"},
		"a tenant's own classes replace the operator's default":                          {[]tenancyv1alpha1.IngressClassName{"traefik"}, []string{"nginx"}, "traefik"},
		"a tenant's own classes are listed in order":                                     {[]tenancyv1alpha1.IngressClassName{"public", "internal.example.com"}, nil, "public,internal.example.com"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Isolation.IngressClasses = tc.operator
			ns := resources.Namespace(tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.IngressClasses = tc.tenant }), &cfg)
			got, ok := ns.Annotations[tenancyv1alpha1.IngressClassesAnnotation]
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("ingress classes annotation = %q (present %v), want %q", got, ok, tc.want)
			}
		})
	}
}
