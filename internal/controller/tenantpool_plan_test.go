package controller

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestPlanPool(t *testing.T) {
	for _, tc := range []struct {
		name                string
		replicas            int32
		maxProvisioning     *int32
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
		{name: "collided spares go first when shrinking", replicas: 0, ready: []string{"r1"}, collided: []string{"c1"}, remove: []string{"c1", "r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tenancyv1alpha1.TenantPoolSpec{Replicas: tc.replicas, MaxProvisioning: tc.maxProvisioning}
			ready, provisioning := slices.Clone(tc.ready), slices.Clone(tc.provisioning)
			got := planPool(spec, ready, provisioning, tc.collided)
			if got.create != tc.create || !slices.Equal(got.remove, tc.remove) {
				t.Errorf("plan = create %d, remove %v; want create %d, remove %v", got.create, got.remove, tc.create, tc.remove)
			}
			if !slices.Equal(ready, tc.ready) || !slices.Equal(provisioning, tc.provisioning) {
				t.Error("planPool reordered the lists it was given")
			}
		})
	}
}

func TestPoolStatus(t *testing.T) {
	pool := &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: "standard", Generation: 4},
		Spec:       tenancyv1alpha1.TenantPoolSpec{Replicas: 3},
	}
	for _, tc := range []struct {
		name                string
		ready, provisioning int32
		readyStatus         metav1.ConditionStatus
		reconciling         bool
	}{
		{name: "a pool with its replicas ready is Ready", ready: 3, readyStatus: metav1.ConditionTrue},
		{name: "a pool short of ready spares is Reconciling", ready: 1, provisioning: 2, readyStatus: metav1.ConditionFalse, reconciling: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := poolStatus(pool, tc.ready, tc.provisioning, 5)
			if s.Ready != tc.ready || s.Provisioning != tc.provisioning || s.Allocated != 5 || s.ObservedGeneration != 4 {
				t.Errorf("counts = ready %d provisioning %d allocated %d generation %d", s.Ready, s.Provisioning, s.Allocated, s.ObservedGeneration)
			}
			if c := meta.FindStatusCondition(s.Conditions, tenancyv1alpha1.ReadyCondition); c == nil || c.Status != tc.readyStatus || c.ObservedGeneration != 4 {
				t.Errorf("Ready = %+v, want %s at generation 4", c, tc.readyStatus)
			}
			if got := meta.IsStatusConditionTrue(s.Conditions, tenancyv1alpha1.ReconcilingCondition); got != tc.reconciling {
				t.Errorf("Reconciling = %v, want %v", got, tc.reconciling)
			}
		})
	}
}
