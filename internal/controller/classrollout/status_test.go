package classrollout

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/tenantclass"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// classAt is a class whose spec asks for cpu, its status as nextStatus left it for the spec
// before (asked for before: cpu "4") with every tenant at it.
func classAt(cpu string, updates *tenancyv1alpha1.ClassUpdates) *tenancyv1alpha1.TenantClass {
	before := tenancyv1alpha1.TenantClassSpec{Quota: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}
	rev := tenantclass.Revision(before)
	c := &tenancyv1alpha1.TenantClass{
		ObjectMeta: metav1.ObjectMeta{Name: "standard", Generation: 2},
		Spec:       tenancyv1alpha1.TenantClassSpec{Quota: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}, Updates: updates},
		Status: tenancyv1alpha1.TenantClassStatus{ObservedGeneration: 1, Revision: rev,
			Revisions: []tenancyv1alpha1.ClassRevision{{Name: rev, Spec: before}},
			Rollout:   &tenancyv1alpha1.ClassRollout{Revision: rev, Strategy: tenancyv1alpha1.ClassUpdateImmediate, ReleasedPercent: 100}},
	}
	return c
}

// fleet is n tenants of the class at revision rev, each Ready, or stalled when stalled says so.
func fleet(n int, rev string, stalled func(name string) bool) []tenancyv1alpha1.Tenant {
	out := make([]tenancyv1alpha1.Tenant, 0, n)
	for i := range n {
		name := fmt.Sprintf("tenant-%d", i)
		t := tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
		t.Status.Class = &tenancyv1alpha1.TenantClassRef{Name: "standard", Revision: rev}
		if stalled != nil && stalled(name) {
			t.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Message: "quota refused"}}
		} else {
			t.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue}}
		}
		out = append(out, t)
	}
	return out
}

func TestAChangeOfAClassReachesItsTenantsAsItsUpdatesSay(t *testing.T) {
	waves := &tenancyv1alpha1.ClassUpdates{Strategy: tenancyv1alpha1.ClassUpdateWaves, WavePercent: 25, WaveInterval: &metav1.Duration{Duration: 10 * time.Minute}}
	old := classAt("4", nil).Status.Revision

	t.Run("an immediate change releases every tenant and keeps the old revision while tenants are at it", func(t *testing.T) {
		c := classAt("8", nil)
		s, after := nextStatus(c, fleet(4, old, nil), t0)
		if s.Revision == old || s.Rollout.ReleasedPercent != 100 || s.ObservedGeneration != 2 {
			t.Fatalf("status %+v", s)
		}
		if len(s.Revisions) != 2 || s.Updated != 0 || s.Tenants != 4 || after != classRecheck {
			t.Errorf("revisions %d, updated %d of %d, recheck %s", len(s.Revisions), s.Updated, s.Tenants, after)
		}
	})

	t.Run("a NewTenants change releases none, and is Ready", func(t *testing.T) {
		c := classAt("8", &tenancyv1alpha1.ClassUpdates{Strategy: tenancyv1alpha1.ClassUpdateNewTenants})
		s, after := nextStatus(c, fleet(4, old, nil), t0)
		if s.Rollout.ReleasedPercent != 0 || after != 0 || !ready(s) {
			t.Errorf("released %d%%, recheck %s, conditions %+v", s.Rollout.ReleasedPercent, after, s.Conditions)
		}
	})

	t.Run("a wave change releases one wave, the next only after its interval and once its tenants are Ready at it", func(t *testing.T) {
		c := classAt("8", waves)
		s, _ := nextStatus(c, fleet(40, old, nil), t0)
		if s.Rollout.ReleasedPercent != 25 {
			t.Fatalf("released %d%%, want 25", s.Rollout.ReleasedPercent)
		}
		c.Status = s
		// The released tenants move; the interval has passed, but one released tenant is not at
		// the revision yet.
		tenants := fleet(40, old, nil)
		moved := 0
		for i := range tenants {
			if tenantclass.Released(tenants[i].Name, 25) {
				tenants[i].Status.Class.Revision = s.Revision
				moved++
			}
		}
		if moved == 0 {
			t.Fatal("no tenant of 40 is in the first quarter")
		}
		laggard := -1
		for i := range tenants {
			if tenantclass.Released(tenants[i].Name, 25) {
				laggard = i
				tenants[i].Status.Class.Revision = old
				break
			}
		}
		if s2, _ := nextStatus(c, tenants, t0.Add(11*time.Minute)); s2.Rollout.ReleasedPercent != 25 {
			t.Fatalf("released %d%% with a tenant of the first wave not moved", s2.Rollout.ReleasedPercent)
		}
		tenants[laggard].Status.Class.Revision = s.Revision
		if s2, _ := nextStatus(c, tenants, t0.Add(5*time.Minute)); s2.Rollout.ReleasedPercent != 25 {
			t.Fatalf("released %d%% before the interval passed", s2.Rollout.ReleasedPercent)
		}
		s2, after := nextStatus(c, tenants, t0.Add(11*time.Minute))
		if s2.Rollout.ReleasedPercent != 50 || after != classRecheck || s2.Updated != int32(moved) {
			t.Fatalf("released %d%%, recheck %s, updated %d (want 50%%, %s, %d)", s2.Rollout.ReleasedPercent, after, s2.Updated, classRecheck, moved)
		}
	})

	t.Run("a released tenant that stalls at the new revision halts the waves", func(t *testing.T) {
		c := classAt("8", waves)
		s, _ := nextStatus(c, nil, t0)
		c.Status = s
		tenants := fleet(40, s.Revision, func(name string) bool { return tenantclass.Released(name, 25) })
		s2, _ := nextStatus(c, tenants, t0.Add(time.Hour))
		if s2.Rollout.ReleasedPercent != 25 || s2.Rollout.Halted == "" {
			t.Fatalf("released %d%%, halted %q", s2.Rollout.ReleasedPercent, s2.Rollout.Halted)
		}
		if !stalled(s2) {
			t.Errorf("conditions %+v, want Stalled", s2.Conditions)
		}
	})

	t.Run("changing updates alone releases what a NewTenants change left", func(t *testing.T) {
		c := classAt("8", &tenancyv1alpha1.ClassUpdates{Strategy: tenancyv1alpha1.ClassUpdateNewTenants})
		s, _ := nextStatus(c, fleet(4, old, nil), t0)
		c.Status = s
		c.Spec.Updates = &tenancyv1alpha1.ClassUpdates{Strategy: tenancyv1alpha1.ClassUpdateImmediate}
		s2, _ := nextStatus(c, fleet(4, old, nil), t0)
		if s2.Revision != s.Revision || s2.Rollout.ReleasedPercent != 100 {
			t.Errorf("revision %s (was %s), released %d%%", s2.Revision, s.Revision, s2.Rollout.ReleasedPercent)
		}
	})

	t.Run("a new spec is not adopted while every kept revision has tenants at it", func(t *testing.T) {
		c := classAt("8", &tenancyv1alpha1.ClassUpdates{Strategy: tenancyv1alpha1.ClassUpdateNewTenants})
		var tenants []tenancyv1alpha1.Tenant
		c.Status.Revisions = nil
		for i := range tenancyv1alpha1.MaxClassRevisions {
			name := fmt.Sprintf("r%d", i)
			c.Status.Revisions = append(c.Status.Revisions, tenancyv1alpha1.ClassRevision{Name: name})
			tenants = append(tenants, fleet(1, name, nil)...)
			tenants[i].Name = "tenant-of-" + name
		}
		c.Status.Revision = "r9"
		s, _ := nextStatus(c, tenants, t0)
		if s.Revision != "r9" || len(s.Revisions) != tenancyv1alpha1.MaxClassRevisions || !stalled(s) || s.ObservedGeneration != c.Generation {
			t.Errorf("revision %s, %d revisions, conditions %+v", s.Revision, len(s.Revisions), s.Conditions)
		}
	})

	t.Run("archived and suspended tenants neither count nor hold a wave, and keep their revision", func(t *testing.T) {
		c := classAt("8", waves)
		tenants := fleet(40, old, nil)
		for i := range tenants {
			if tenantclass.Released(tenants[i].Name, 25) {
				tenants[i].Spec.State = tenancyv1alpha1.StateArchived
			} else {
				tenants[i].Spec.Suspend = true
			}
		}
		s, _ := nextStatus(c, tenants, t0)
		c.Status = s
		s2, _ := nextStatus(c, tenants, t0.Add(time.Hour))
		if s2.Tenants != 0 || s2.Rollout.ReleasedPercent != 50 || len(s2.Revisions) != 2 {
			t.Errorf("tenants %d, released %d%%, revisions %d", s2.Tenants, s2.Rollout.ReleasedPercent, len(s2.Revisions))
		}
	})

	t.Run("a revision no tenant is at any more is dropped, the current one kept", func(t *testing.T) {
		c := classAt("8", nil)
		s, _ := nextStatus(c, nil, t0)
		if len(s.Revisions) != 1 || s.Revisions[0].Name != s.Revision || !ready(s) {
			t.Errorf("revisions %+v, conditions %+v", s.Revisions, s.Conditions)
		}
	})
}

func ready(s tenancyv1alpha1.TenantClassStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == tenancyv1alpha1.ReadyCondition {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func stalled(s tenancyv1alpha1.TenantClassStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == tenancyv1alpha1.StalledCondition {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
