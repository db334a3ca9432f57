package componentrollout

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/tenantclass"
)

func TestARolloutWaitsForTheWindowsOfATenantsClassWhenItHasNoneOfItsOwn(t *testing.T) {
	nights := []tenancyv1alpha1.MaintenanceWindow{{Start: "02:00", Duration: metav1.Duration{Duration: time.Hour}}}
	sundays := []tenancyv1alpha1.MaintenanceWindow{{Days: []tenancyv1alpha1.Weekday{"Sunday"}, Start: "10:00", Duration: metav1.Duration{Duration: time.Hour}}}
	spec := tenancyv1alpha1.TenantClassSpec{MaintenanceWindows: nights}
	rev := tenantclass.Revision(spec)
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(
		&tenancyv1alpha1.TenantClass{ObjectMeta: metav1.ObjectMeta{Name: "standard", Generation: 1}, Spec: spec,
			Status: tenancyv1alpha1.TenantClassStatus{ObservedGeneration: 1, Revision: rev, Revisions: []tenancyv1alpha1.ClassRevision{{Name: rev, Spec: spec}}}},
	).Build()
	for _, tc := range []struct {
		name   string
		served bool
		spec   tenancyv1alpha1.TenantSpec
		want   []tenancyv1alpha1.MaintenanceWindow
	}{
		{name: "a tenant of a class with windows has the class's", served: true, spec: tenancyv1alpha1.TenantSpec{Class: "standard"}, want: nights},
		{name: "a tenant's own windows win", served: true, spec: tenancyv1alpha1.TenantSpec{Class: "standard", MaintenanceWindows: sundays}, want: sundays},
		{name: "a class that does not exist gives none", served: true, spec: tenancyv1alpha1.TenantSpec{Class: "platinum"}},
		{name: "without the TenantClass kind, no class is read", spec: tenancyv1alpha1.TenantSpec{Class: "standard"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := classWindows{reader: c, served: tc.served}
			tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: tc.spec}
			got, err := w.of(context.Background(), tenant)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Spec.MaintenanceWindows) != len(tc.want) || (len(tc.want) > 0 && got.Spec.MaintenanceWindows[0].Start != tc.want[0].Start) {
				t.Errorf("windows %+v, want %+v", got.Spec.MaintenanceWindows, tc.want)
			}
			if len(tenant.Spec.MaintenanceWindows) != len(tc.spec.MaintenanceWindows) {
				t.Error("the tenant given was changed")
			}
		})
	}
}
