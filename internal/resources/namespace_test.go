package resources_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/resources"
)

// The Ingress classes a tenant may use reach the admission policy through its
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

// The pool a tenant namespace's pods were placed on is what Landlord recorded, and for a namespace
// written before Landlord recorded it, the pool its label names: its pods were admitted under
// that label. An empty record is a record of no pool, not a missing one.
func TestThePodsPoolOfANamespaceIsItsRecordElseItsLabel(t *testing.T) {
	cases := map[string]struct {
		labels, annotations map[string]string
		want                string
	}{
		"a recorded pool is the pods' pool, whatever the label says now": {
			map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-b"}, map[string]string{tenancyv1alpha1.PodsPoolAnnotation: "pool-a"}, "pool-a"},
		"an empty record is no pool, even beside a pool label": {
			map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-b"}, map[string]string{tenancyv1alpha1.PodsPoolAnnotation: ""}, ""},
		"without a record the label's pool is the pods' pool": {
			map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-a"}, nil, "pool-a"},
		"without a record nor a label the pods are on no pool": {nil, nil, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations}}
			if got := resources.PodsPool(ns); got != tc.want {
				t.Errorf("PodsPool = %q, want %q", got, tc.want)
			}
		})
	}
}

// A namespace is built recording the tenant's pool, or an empty record for none; SetPodsPool
// replaces the record on the namespace among the built objects and on nothing else.
func TestANewNamespaceRecordsItsTenantsPool(t *testing.T) {
	cfg := config.Default()
	for _, pool := range []string{"pool-a", ""} {
		tn := tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.NodePool = pool })
		got, ok := resources.Namespace(tn, &cfg).Annotations[tenancyv1alpha1.PodsPoolAnnotation]
		if !ok || got != pool {
			t.Errorf("tenant on pool %q: record %q (present %v), want %q", pool, got, ok, pool)
		}
	}
	objs := resources.Build(tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.NodePool = "pool-b" }), &cfg)
	resources.SetPodsPool(objs, "pool-a")
	for _, obj := range objs {
		got, ok := obj.GetAnnotations()[tenancyv1alpha1.PodsPoolAnnotation]
		if _, isNamespace := obj.(*corev1.Namespace); isNamespace != ok || isNamespace && got != "pool-a" {
			t.Errorf("%T %s: record %q (present %v)", obj, obj.GetName(), got, ok)
		}
	}
}
