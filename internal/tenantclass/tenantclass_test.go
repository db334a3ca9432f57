package tenantclass

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func class(spec tenancyv1alpha1.TenantClassSpec) *tenancyv1alpha1.TenantClass {
	return &tenancyv1alpha1.TenantClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Spec: spec}
}

func tenant(spec tenancyv1alpha1.TenantSpec) *tenancyv1alpha1.Tenant {
	spec.Class = "standard"
	return &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: spec}
}

func TestATenantSetsOnlyWhatItsClassLetsIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		class    tenancyv1alpha1.TenantClassSpec
		tenant   tenancyv1alpha1.TenantSpec
		wantPath string // "" when admitted
	}{
		{
			name:   "a tenant setting nothing of its class is admitted",
			tenant: tenancyv1alpha1.TenantSpec{Organization: "Acme", Databases: tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "app"}}}},
		},
		{
			name:     "a quota is refused unless the class lists quota",
			tenant:   tenancyv1alpha1.TenantSpec{Quota: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}},
			wantPath: "spec.quota",
		},
		{
			name:   "a quota is admitted where the class lists quota",
			class:  tenancyv1alpha1.TenantClassSpec{Overrides: []tenancyv1alpha1.ClassField{tenancyv1alpha1.ClassFieldQuota}},
			tenant: tenancyv1alpha1.TenantSpec{Quota: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}},
		},
		{
			name:     "a node pool is refused, naming the field, even where quota is allowed",
			class:    tenancyv1alpha1.TenantClassSpec{Overrides: []tenancyv1alpha1.ClassField{tenancyv1alpha1.ClassFieldQuota}},
			tenant:   tenancyv1alpha1.TenantSpec{NodePool: "gpu"},
			wantPath: "spec.nodePool",
		},
		{
			name:     "a database pinned to a server is refused unless the class lists databaseServers",
			tenant:   tenancyv1alpha1.TenantSpec{Databases: tenancyv1alpha1.Databases{MySQL: []tenancyv1alpha1.Database{{Name: "app", Server: "my-big"}}}},
			wantPath: "spec.databases.mysql[name=app].server",
		},
		{
			name:     "a component the class does not allow is refused by name",
			class:    tenancyv1alpha1.TenantClassSpec{Components: &tenancyv1alpha1.ClassComponents{Allowed: []string{"web"}}},
			tenant:   tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1"}, {Name: "analytics", Version: "1"}}},
			wantPath: "spec.components[name=analytics]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tenant(tc.tenant), class(tc.class))
			if tc.wantPath == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Path != tc.wantPath || refused.Class != "standard" {
				t.Fatalf("Check = %v, want a refusal of %s by class standard", err, tc.wantPath)
			}
		})
	}
}

func TestATenantIsItsClassBeneathWhatItSetsItself(t *testing.T) {
	q := func(cpu, mem string) corev1.ResourceList {
		out := corev1.ResourceList{}
		if cpu != "" {
			out[corev1.ResourceRequestsCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			out[corev1.ResourceRequestsMemory] = resource.MustParse(mem)
		}
		return out
	}
	window := []tenancyv1alpha1.MaintenanceWindow{{Start: "02:00", Duration: metav1.Duration{Duration: 3600e9}}}
	standard := tenancyv1alpha1.TenantClassSpec{
		Quota: q("4", "8Gi"), PodSecurity: tenancyv1alpha1.PodSecurityBaseline, CostCode: "std",
		NodePool: &tenancyv1alpha1.ClassNodePool{Name: "shared"}, MaintenanceWindows: window,
		Components: &tenancyv1alpha1.ClassComponents{Values: map[string]apiextensionsv1.JSON{
			"web": {Raw: []byte(`{"replicas":1,"resources":{"cpu":"250m","memory":"256Mi"}}`)},
		}},
	}
	for _, tc := range []struct {
		name   string
		class  tenancyv1alpha1.TenantClassSpec
		tenant tenancyv1alpha1.TenantSpec
		want   tenancyv1alpha1.TenantSpec
	}{
		{
			name:   "a tenant setting nothing gets everything of its class",
			class:  standard,
			tenant: tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1"}}},
			want: tenancyv1alpha1.TenantSpec{
				Quota: q("4", "8Gi"), PodSecurity: tenancyv1alpha1.PodSecurityBaseline, CostCode: "std", NodePool: "shared",
				MaintenanceWindows: window,
				Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1",
					Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":1,"resources":{"cpu":"250m","memory":"256Mi"}}`)}}},
			},
		},
		{
			name:  "what the tenant sets wins, quota and values key by key",
			class: standard,
			// "cpu" is requests.cpu: the tenant's overrides the class's.
			tenant: tenancyv1alpha1.TenantSpec{Quota: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}, CostCode: "acme",
				Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1",
					Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":3,"resources":{"cpu":"1"}}`)}}}},
			want: tenancyv1alpha1.TenantSpec{
				Quota: q("16", "8Gi"), PodSecurity: tenancyv1alpha1.PodSecurityBaseline, CostCode: "acme", NodePool: "shared",
				MaintenanceWindows: window,
				Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1",
					Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":3,"resources":{"cpu":"1","memory":"256Mi"}}`)}}},
			},
		},
		{
			name:   "a dedicated node pool is named after the tenant, apart from shared pools' names",
			class:  tenancyv1alpha1.TenantClassSpec{NodePool: &tenancyv1alpha1.ClassNodePool{Dedicated: true}},
			tenant: tenancyv1alpha1.TenantSpec{},
			want:   tenancyv1alpha1.TenantSpec{NodePool: "dedicated-acme"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tenant(tc.tenant)
			before := in.DeepCopy()
			got := Apply(in, class(tc.class))
			tc.want.Class = "standard"
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("Apply (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, in); diff != "" {
				t.Errorf("Apply changed the tenant it was given:\n%s", diff)
			}
		})
	}
}
