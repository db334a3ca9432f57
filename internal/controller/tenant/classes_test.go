package tenant

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/tenantclass"
)

func TestATenantsClassDecidesWhetherItConvergesAndToWhat(t *testing.T) {
	spec := tenancyv1alpha1.TenantClassSpec{Quota: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}
	rev := tenantclass.Revision(spec)
	standard := &tenancyv1alpha1.TenantClass{
		ObjectMeta: metav1.ObjectMeta{Name: "standard", Generation: 1}, Spec: spec,
		Status: tenancyv1alpha1.TenantClassStatus{ObservedGeneration: 1, Revision: rev,
			Revisions: []tenancyv1alpha1.ClassRevision{{Name: rev, Spec: spec}}},
	}
	// A class whose controller has not recorded its first revision yet.
	fresh := &tenancyv1alpha1.TenantClass{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Generation: 1}, Spec: spec}
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(standard, fresh).Build()
	r := &Reconciler{Client: c, Classes: true}
	for _, tc := range []struct {
		name       string
		spec       tenancyv1alpha1.TenantSpec
		wantReason string // "" when the tenant converges
		waits      bool
		wantCPU    string
	}{
		{name: "a tenant of a class converges to the class's spec, and records its revision", spec: tenancyv1alpha1.TenantSpec{Class: "standard"}, wantCPU: "4"},
		{name: "a tenant of a class that does not exist stalls", spec: tenancyv1alpha1.TenantSpec{Class: "platinum"}, wantReason: tenancyv1alpha1.ReasonClassNotFound},
		{name: "a tenant setting what its class does not let it stalls", spec: tenancyv1alpha1.TenantSpec{Class: "standard", NodePool: "gpu"}, wantReason: tenancyv1alpha1.ReasonClassOverrideRefused},
		{name: "a new tenant of a class whose status lags waits, without a stall", spec: tenancyv1alpha1.TenantSpec{Class: "fresh"}, wantReason: tenancyv1alpha1.ReasonProgressing, waits: true},
		{name: "a Purged tenant of a class that does not exist is converged all the same", spec: tenancyv1alpha1.TenantSpec{Class: "platinum", State: tenancyv1alpha1.StatePurged}},
		{name: "an Archived tenant setting what its class does not let it is converged all the same", spec: tenancyv1alpha1.TenantSpec{Class: "standard", NodePool: "gpu", State: tenancyv1alpha1.StateArchived}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: tc.spec}
			applied, class, stall := r.applyClass(context.Background(), tenant)
			if tc.wantReason != "" {
				if stall == nil || stall.reason != tc.wantReason || stall.waiting != tc.waits {
					t.Fatalf("stall %+v, want reason %s (waiting %t)", stall, tc.wantReason, tc.waits)
				}
				st := classStalledStatus(tenant, stall)
				if stalled := meta.IsStatusConditionTrue(st.Conditions, tenancyv1alpha1.StalledCondition); stalled == tc.waits ||
					meta.IsStatusConditionTrue(st.Conditions, tenancyv1alpha1.ReconcilingCondition) != tc.waits {
					t.Errorf("conditions %+v: want Stalled unless it waits, Reconciling while it does", st.Conditions)
				}
				return
			}
			if stall != nil || applied == nil {
				t.Fatalf("stall %+v", stall)
			}
			if tc.wantCPU == "" {
				if class != nil || applied != tenant {
					t.Errorf("a tenant without a class to apply is converged as it is")
				}
				return
			}
			cpu := applied.Spec.Quota[corev1.ResourceRequestsCPU]
			if cpu.String() != tc.wantCPU || applied.Status.Class == nil || applied.Status.Class.Revision != rev || class == nil {
				t.Errorf("quota %s, status.class %+v", cpu.String(), applied.Status.Class)
			}
		})
	}
}
