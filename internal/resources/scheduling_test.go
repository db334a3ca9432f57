package resources_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/resources"
)

// Admission policies read the priority classes and tolerations tenants' pods may name from the
// namespace: the annotations carry the configuration's lists as they are, and an unconfigured
// fleet's namespaces carry none (so a new release rewrites no namespace for them).
func TestTheSchedulingAllowancesAreWrittenOnTheNamespace(t *testing.T) {
	cases := []struct {
		name            string
		priorityClasses []string
		tolerations     []string
		want            map[string]string
	}{
		{"an unconfigured operator writes neither annotation", nil, nil, map[string]string{}},
		{"configured lists are written comma separated", []string{"tenant-batch", "tenant-web"}, []string{"nvidia.com/gpu:NoSchedule", "dedicated=batch"},
			map[string]string{
				tenancyv1alpha1.PriorityClassesAnnotation: "tenant-batch,tenant-web",
				tenancyv1alpha1.TolerationsAnnotation:     "nvidia.com/gpu:NoSchedule,dedicated=batch",
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Isolation.PriorityClasses, cfg.Isolation.Tolerations = tc.priorityClasses, tc.tolerations
			ns := resources.Namespace(tenant(), &cfg)
			for _, key := range []string{tenancyv1alpha1.PriorityClassesAnnotation, tenancyv1alpha1.TolerationsAnnotation} {
				got, ok := ns.Annotations[key]
				want, wantOK := tc.want[key]
				if got != want || ok != wantOK {
					t.Errorf("annotation %s = %q (present %v), want %q (present %v)", key, got, ok, want, wantOK)
				}
			}
		})
	}
}

// Without a limit on scratch space, one tenant's pod fills a shared node's disk and the kubelet
// evicts every pod on it. The defaults bound it even when the configuration names cpu and memory
// only (as configurations written for earlier releases do), and a tenant's spec.limits still overrides them.
func TestTheLimitRangeBoundsScratchSpace(t *testing.T) {
	eph := corev1.ResourceEphemeralStorage
	cases := []struct {
		name                      string
		cfg                       string
		limits                    *tenancyv1alpha1.Limits
		def, defaultRequest, most string
	}{
		{"the default configuration", "", nil, "2Gi", "256Mi", "16Gi"},
		{"a configuration naming cpu and memory only", "defaults:\n  limits:\n    default: {cpu: 500m, memory: 512Mi}\n    defaultRequest: {cpu: 100m}\n    max: {cpu: \"4\"}\n", nil, "2Gi", "256Mi", "16Gi"},
		{"a configuration naming scratch space", "defaults:\n  limits:\n    max: {ephemeral-storage: 4Gi}\n", nil, "2Gi", "256Mi", "4Gi"},
		{"a tenant's own limits", "", &tenancyv1alpha1.Limits{Default: corev1.ResourceList{eph: resource.MustParse("1Gi")}}, "1Gi", "256Mi", "16Gi"},
	}
	for _, tc := range cases {
		t.Run(tc.name+" bounds ephemeral-storage", func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			lr := resources.LimitRange(tenant(func(t *tenancyv1alpha1.Tenant) { t.Spec.Limits = tc.limits }), &cfg, "tenant-acme")
			item := lr.Spec.Limits[0]
			for _, c := range []struct {
				field string
				got   corev1.ResourceList
				want  string
			}{{"default", item.Default, tc.def}, {"defaultRequest", item.DefaultRequest, tc.defaultRequest}, {"max", item.Max, tc.most}} {
				if q := c.got[eph]; q.Cmp(resource.MustParse(c.want)) != 0 {
					t.Errorf("%s ephemeral-storage = %s, want %s", c.field, q.String(), c.want)
				}
			}
		})
	}
}
