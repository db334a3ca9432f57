package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestForgetObject(t *testing.T) {
	roleKind := schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}
	cmKind := schema.GroupKind{Kind: "ConfigMap"}
	cases := map[string]struct {
		gk        schema.GroupKind
		namespace string
		name      string
		// forgotten are the remembered objects (by namespace) no longer matched afterwards.
		forgotten map[string]bool
	}{
		"the named object is forgotten, and nothing else in its namespace": {roleKind, "tenant-a", "tenant-admin", map[string]bool{"tenant-a/Role": true}},
		"an object of another kind under the same name stays":              {roleKind, "tenant-a", "settings", map[string]bool{}},
		"the same object in another namespace stays":                       {cmKind, "tenant-b", "settings", map[string]bool{"tenant-b/ConfigMap": true}},
		"an object never remembered forgets nothing":                       {cmKind, "tenant-c", "settings", map[string]bool{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewMemo()
			remembered := map[string]client.Object{
				"tenant-a/Role":      role("tenant-a", "get"),
				"tenant-a/ConfigMap": configMap("tenant-a", "1"),
				"tenant-b/ConfigMap": configMap("tenant-b", "1"),
			}
			prints := map[string]Fingerprint{}
			for key, obj := range remembered {
				fingerprint, err := fingerprintOf(obj)
				if err != nil {
					t.Fatal(err)
				}
				prints[key] = fingerprint
				m.record(obj, fingerprint, "7", "")
			}
			m.ForgetObject(tc.gk, tc.namespace, tc.name)
			for key, obj := range remembered {
				if got := m.matched(obj, prints[key], "7", ""); got == tc.forgotten[key] {
					t.Errorf("%s still matched = %v, want %v", key, got, !tc.forgotten[key])
				}
			}
			if want := len(remembered) - len(tc.forgotten); m.Len() != want {
				t.Errorf("Len() = %d, want %d", m.Len(), want)
			}
		})
	}

	t.Run("a namespace whose last object is forgotten leaves no group behind", func(t *testing.T) {
		m := NewMemo()
		obj := configMap("tenant-a", "1")
		fingerprint, err := fingerprintOf(obj)
		if err != nil {
			t.Fatal(err)
		}
		m.record(obj, fingerprint, "7", "")
		m.ForgetObject(cmKind, "tenant-a", "settings")
		if len(m.groups) != 0 {
			t.Errorf("groups = %v, want none", m.groups)
		}
	})
}
