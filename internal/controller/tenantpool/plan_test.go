package tenantpool

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestPlanPool(t *testing.T) {
	for _, tc := range []struct {
		name                string
		replicas            int32
		maxProvisioning     *int32
		maxTenants          *int32
		existing            int
		ready, provisioning []string
		collided            []string
		create              int
		remove              []string
	}{
		{name: "an empty pool creates its replicas", replicas: 3, create: 3},
		{name: "a full pool does nothing", replicas: 2, ready: []string{"a"}, provisioning: []string{"b"}},
		{name: "provisioning spares count towards the replicas", replicas: 3, provisioning: []string{"a", "b"}, create: 1},
		{name: "maxProvisioning bounds the creates", replicas: 10, maxProvisioning: ptr.To[int32](2), create: 2},
		{name: "maxProvisioning counts the spares already provisioning", replicas: 10, maxProvisioning: ptr.To[int32](3), ready: []string{"r"}, provisioning: []string{"a", "b"}, create: 1},
		{name: "more provisioning than maxProvisioning creates none", replicas: 10, maxProvisioning: ptr.To[int32](1), provisioning: []string{"a", "b"}},
		{name: "shrinking removes provisioning spares first, in name order", replicas: 1, ready: []string{"r2", "r1"}, provisioning: []string{"p2", "p1"}, remove: []string{"p1", "p2", "r1"}},
		{name: "shrinking to zero removes every spare", replicas: 0, ready: []string{"r1"}, provisioning: []string{"p1"}, remove: []string{"p1", "r1"}},
		{name: "a spare stalled on an earlier tenant's data is removed and replaced", replicas: 2, ready: []string{"r1"}, collided: []string{"c1"}, create: 1, remove: []string{"c1"}},
		{name: "a collided spare is removed from a full pool too", replicas: 1, ready: []string{"r1"}, collided: []string{"c1"}, remove: []string{"c1"}},
		{name: "maxTenants bounds the creates, counting every tenant the pool has", replicas: 3, maxTenants: ptr.To[int32](5), existing: 4, ready: []string{"r1"}, create: 1},
		{name: "a pool at maxTenants creates none", replicas: 3, maxTenants: ptr.To[int32](4), existing: 4, ready: []string{"r1"}},
		{name: "a pool past maxTenants (lowered) creates none and removes none it needs", replicas: 3, maxTenants: ptr.To[int32](1), existing: 4, ready: []string{"r1"}},
		{name: "a collided spare, still there, counts towards maxTenants", replicas: 2, maxTenants: ptr.To[int32](2), existing: 2, ready: []string{"r1"}, collided: []string{"c1"}, remove: []string{"c1"}},
		{name: "collided spares go first when shrinking", replicas: 0, ready: []string{"r1"}, collided: []string{"c1"}, remove: []string{"c1", "r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tenancyv1alpha1.TenantPoolSpec{Replicas: tc.replicas, MaxProvisioning: tc.maxProvisioning, MaxTenants: tc.maxTenants}
			ready, provisioning := slices.Clone(tc.ready), slices.Clone(tc.provisioning)
			got := planPool(spec, tc.existing, ready, provisioning, tc.collided)
			if got.create != tc.create || !slices.Equal(got.remove, tc.remove) {
				t.Errorf("plan = create %d, remove %v; want create %d, remove %v", got.create, got.remove, tc.create, tc.remove)
			}
			if !slices.Equal(ready, tc.ready) || !slices.Equal(provisioning, tc.provisioning) {
				t.Error("planPool reordered the lists it was given")
			}
		})
	}
}

func TestPoolRoleOf(t *testing.T) {
	spare := func(mutate func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
		pool := &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: "standard"}}
		tenant := &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{
				Name: "standard-x", Generation: 2,
				Labels:          map[string]string{tenancyv1alpha1.PoolLabel: "standard"},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pool, tenancyv1alpha1.GroupVersion.WithKind("TenantPool"))},
			},
			Status: tenancyv1alpha1.TenantStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
				{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: 2},
			}},
		}
		mutate(tenant)
		return tenant
	}
	suspend := func(t *tenancyv1alpha1.Tenant) { t.Spec.Suspend = true }
	for _, tc := range []struct {
		name   string
		tenant *tenancyv1alpha1.Tenant
		role   poolRole
	}{
		{name: "a Ready spare is ready", tenant: spare(func(*tenancyv1alpha1.Tenant) {}), role: readySpare},
		{name: "a spare not Ready yet is provisioning", tenant: spare(func(t *tenancyv1alpha1.Tenant) { t.Status.ObservedGeneration = 1 }), role: provisioningSpare},
		{name: "a suspended spare that was Ready is suspended, not provisioning", tenant: spare(suspend), role: suspendedSpare},
		{name: "a suspended spare still provisioning is suspended", tenant: spare(func(t *tenancyv1alpha1.Tenant) {
			suspend(t)
			t.Status.Conditions = nil
		}), role: suspendedSpare},
		{name: "a suspended spare stalled on an earlier tenant's data is kept as suspended", tenant: spare(func(t *tenancyv1alpha1.Tenant) {
			suspend(t)
			t.Status.Conditions = append(t.Status.Conditions, metav1.Condition{
				Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonForeignData,
			})
		}), role: suspendedSpare},
		{name: "a suspended spare being deleted is leaving", tenant: spare(func(t *tenancyv1alpha1.Tenant) {
			suspend(t)
			now := metav1.Now()
			t.DeletionTimestamp = &now
		}), role: leavingSpare},
		{name: "a suspended allocated tenant is allocated", tenant: spare(func(t *tenancyv1alpha1.Tenant) {
			suspend(t)
			t.Labels[tenancyv1alpha1.AllocatedLabel] = "true"
		}), role: allocatedTenant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, role := poolRoleOf(tc.tenant)
			if pool != "standard" || role != tc.role {
				t.Errorf("poolRoleOf = %q, %d; want standard, %d", pool, role, tc.role)
			}
		})
	}
}
