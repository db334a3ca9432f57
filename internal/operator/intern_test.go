package operator

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
)

func TestEqualLabelMapsAreSharedAndForgottenWhenUnused(t *testing.T) {
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	labels := func(tenant string) map[string]string {
		return map[string]string{"app.kubernetes.io/managed-by": "landlord", "tenancy.landlord.dev/tenant": tenant}
	}

	t.Run("equal maps get one map, equal to them", func(t *testing.T) {
		in := &mapInterner{}
		a, b := in.intern(labels("acme")), in.intern(labels("acme"))
		if !same(a, b) || !reflect.DeepEqual(a, labels("acme")) {
			t.Errorf("got %v and %v, shared %v", a, b, same(a, b))
		}
	})
	t.Run("different maps stay different", func(t *testing.T) {
		in := &mapInterner{}
		if a, b := in.intern(labels("acme")), in.intern(labels("globex")); same(a, b) || a["tenancy.landlord.dev/tenant"] != "acme" {
			t.Errorf("got %v and %v", a, b)
		}
	})
	t.Run("a map asked for again in the next generation is still shared", func(t *testing.T) {
		clock := time.Now()
		in := &mapInterner{sharer[map[string]string]{now: func() time.Time { return clock }}}
		a := in.intern(labels("acme"))
		clock = clock.Add(generationAge)
		in.intern(labels("globex"))
		if !same(a, in.intern(labels("acme"))) {
			t.Error("not shared across one generation")
		}
	})
	t.Run("a map no longer asked for is forgotten after two generations", func(t *testing.T) {
		clock := time.Now()
		in := &mapInterner{sharer[map[string]string]{now: func() time.Time { return clock }}}
		in.intern(labels("gone"))
		for range 2 {
			clock = clock.Add(generationAge)
			in.intern(labels("acme"))
		}
		if _, ok := in.current[mapKey(labels("gone"))]; ok {
			t.Error("still in the current generation")
		}
		if _, ok := in.previous[mapKey(labels("gone"))]; ok {
			t.Error("still in the previous generation")
		}
		for _, gen := range []map[uint64]map[string]string{in.current, in.previous} {
			for key := range gen {
				if key != mapKey(labels("acme")) {
					t.Errorf("remembers %x, want only the map still asked for", key)
				}
			}
		}
	})
}

func TestEqualOwnerReferenceListsAreShared(t *testing.T) {
	same := func(a, b []metav1.OwnerReference) bool { return &a[0] == &b[0] }
	refs := func(name string, controller *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "tenancy.landlord.dev/v1alpha1", Kind: "Tenant", Name: name, UID: types.UID("uid-" + name), Controller: controller}}
	}
	yes, no := true, false
	t.Run("the objects one tenant owns share one list, equal to theirs", func(t *testing.T) {
		in := &refsInterner{}
		a, b := in.intern(refs("acme", &yes)), in.intern(refs("acme", &yes))
		if !same(a, b) || !reflect.DeepEqual(a, refs("acme", &yes)) {
			t.Errorf("got %v and %v, shared %v", a, b, same(a, b))
		}
	})
	t.Run("lists that differ in a name or in a flag stay apart", func(t *testing.T) {
		in := &refsInterner{}
		acme := in.intern(refs("acme", &yes))
		for name, other := range map[string][]metav1.OwnerReference{
			"another tenant":         refs("globex", &yes),
			"not the controller":     refs("acme", &no),
			"controller flag absent": refs("acme", nil),
		} {
			got := in.intern(other)
			if same(acme, got) || !reflect.DeepEqual(got, other) {
				t.Errorf("%s: got %v, shared %v", name, got, same(acme, got))
			}
		}
	})
}

func TestAHashCollisionIsNeverShared(t *testing.T) {
	var s sharer[string]
	first := s.share(7, func(v string) bool { return v == "acme" }, func() string { return "acme" })
	second := s.share(7, func(v string) bool { return v == "globex" }, func() string { return "globex" })
	if first != "acme" || second != "globex" {
		t.Errorf("got %q and %q for two values with one hash, want each its own", first, second)
	}
}

func TestAnnotationsAreSharedUnlessTheyDigestTheirObject(t *testing.T) {
	shared := newSharing()
	copyOf := func(tenant string, annotations map[string]string) *metav1.ObjectMeta {
		m := &metav1.ObjectMeta{Namespace: "tenant-" + tenant, Name: "api-token", Annotations: annotations}
		internMetadata(m, m, shared)
		return m
	}
	source := func() map[string]string {
		return map[string]string{"tenancy.landlord.dev/source": "landlord-templates/api-token", "tenancy.landlord.dev/source-hash": "abc"}
	}
	a, b := copyOf("acme", source()), copyOf("globex", source())
	if reflect.ValueOf(a.Annotations).UnsafePointer() != reflect.ValueOf(b.Annotations).UnsafePointer() {
		t.Error("two tenants' copies of one shared secret hold equal annotations apart")
	}
	withDigest := func() map[string]string {
		return map[string]string{"tenancy.landlord.dev/applied-hash": "d1", "tenancy.landlord.dev/pods-pool": "general"}
	}
	c, d := copyOf("acme", withDigest()), copyOf("globex", withDigest())
	if reflect.ValueOf(c.Annotations).UnsafePointer() == reflect.ValueOf(d.Annotations).UnsafePointer() {
		t.Error("annotations holding an object's digest are shared")
	}
	t.Run("a past annotation is forgotten a minute after it was last asked for, not ten", func(t *testing.T) {
		clock := time.Now()
		shared.annotations.now = func() time.Time { return clock }
		health := func(ready string) map[string]string {
			return map[string]string{apply.HealthAnnotation: `{"status":"InProgress","ready":` + ready + `}`}
		}
		copyOf("acme", health("1"))
		for range 2 {
			clock = clock.Add(annotationGenerationAge)
			copyOf("acme", health("2"))
		}
		for _, gen := range []map[uint64]map[string]string{shared.annotations.current, shared.annotations.previous} {
			if _, ok := gen[mapKey(health("1"))]; ok {
				t.Error("a health value no object asked for in two minutes is still remembered")
			}
		}
	})
	if !reflect.DeepEqual(c.Annotations, withDigest()) || !reflect.DeepEqual(a.Annotations, source()) {
		t.Errorf("annotations changed: %v, %v", c.Annotations, a.Annotations)
	}
}

func TestATenantsRepeatedStringsAreStoredOnce(t *testing.T) {
	tenant := func(name string) *tenancyv1alpha1.Tenant {
		// Built from fresh strings, as each decoded object's are.
		fresh := func(s string) string { return string([]byte(s)) }
		return &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: tenancyv1alpha1.TenantStatus{
				Conditions: []metav1.Condition{{Type: fresh("Ready"), Status: metav1.ConditionStatus(fresh("True")), Reason: fresh("Reconciled"), Message: fresh("all in place for " + name)}},
				Components: []tenancyv1alpha1.ComponentStatus{{Name: fresh("web"), Version: fresh("1.0.0"), Inventory: []string{fresh("ConfigMap/web-settings")}}},
			},
		}
	}
	a, b := tenant("acme"), tenant("globex")
	shared := newSharing()
	internMetadata(a, a, shared)
	internMetadata(b, b, shared)
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	ca, cb := a.Status.Conditions[0], b.Status.Conditions[0]
	if !same(ca.Type, cb.Type) || !same(ca.Reason, cb.Reason) || !same(string(ca.Status), string(cb.Status)) {
		t.Error("two tenants' condition type, reason and status are stored twice")
	}
	if !same(a.Status.Components[0].Inventory[0], b.Status.Components[0].Inventory[0]) || !same(a.Status.Components[0].Version, b.Status.Components[0].Version) {
		t.Error("two tenants' component version and inventory are stored twice")
	}
	if ca.Message != "all in place for acme" || cb.Message != "all in place for globex" {
		t.Errorf("messages changed: %q, %q", ca.Message, cb.Message)
	}
}
