package tenantpool

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestAPoolNamingAClassMakesSparesOfThatClass(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).Build()
	r := &Reconciler{Client: c}
	pool := &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: "standard", UID: "pool-uid"},
		Spec: tenancyv1alpha1.TenantPoolSpec{Template: tenancyv1alpha1.TenantTemplate{
			Spec: tenancyv1alpha1.TenantSpec{Class: "standard", Databases: tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "app"}}}},
		}},
	}
	if _, err := r.createSpare(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	spares := &tenancyv1alpha1.TenantList{}
	if err := c.List(context.Background(), spares, client.MatchingLabels{tenancyv1alpha1.PoolLabel: "standard"}); err != nil {
		t.Fatal(err)
	}
	if len(spares.Items) != 1 || spares.Items[0].Spec.Class != "standard" || len(spares.Items[0].Spec.Quota) != 0 {
		t.Fatalf("spares %+v, want one of class standard with no quota of its own", spares.Items)
	}
}
