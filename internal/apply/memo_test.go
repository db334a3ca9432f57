package apply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func role(ns, verb string) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-admin", Labels: map[string]string{"a": "b"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{verb}}},
	}
}

func configMap(ns, value string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": ns, "name": "settings"},
		"data":     map[string]any{"k": value},
	}}
	return u
}

func TestFingerprint(t *testing.T) {
	cases := map[string]struct {
		a, b client.Object
		same bool
	}{
		"two equal typed objects have the same fingerprint":       {role("t", "get"), role("t", "get"), true},
		"a changed field changes a typed object's fingerprint":    {role("t", "get"), role("t", "list"), false},
		"two equal rendered objects have the same fingerprint":    {configMap("t", "1"), configMap("t", "1"), true},
		"a changed value changes a rendered object's fingerprint": {configMap("t", "1"), configMap("t", "2"), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := fingerprintOf(tc.a)
			if err != nil {
				t.Fatal(err)
			}
			b, err := fingerprintOf(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if (a == b) != tc.same {
				t.Errorf("same fingerprint = %v, want %v", a == b, tc.same)
			}
		})
	}
}

func TestMemo(t *testing.T) {
	desired := role("tenant-a", "get")
	fingerprint, err := fingerprintOf(desired)
	if err != nil {
		t.Fatal(err)
	}
	other, err := fingerprintOf(role("tenant-a", "list"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("an object never compared is unknown", func(t *testing.T) {
		if got := NewMemo().lookup(desired, fingerprint, "7", "d1"); got != memoUnknown {
			t.Errorf("state = %v, want unknown", got)
		}
	})
	cases := []struct {
		name           string
		recordedRV     string
		recordedDigest string
		fingerprint    Fingerprint
		liveRV, digest string
		want           memoState
	}{
		{"an unchanged object at the recorded resourceVersion is the same", "7", "d1", fingerprint, "7", "d1", memoSame},
		{"a status write moves the resourceVersion but not the content", "7", "d1", fingerprint, "8", "d1", memoSame},
		{"an edit moves the resourceVersion and the content", "7", "d1", fingerprint, "8", "d2", memoMoved},
		{"a changed desired object is wanted although the live one is as it was", "7", "d1", other, "7", "d1", memoWanted},
		{"the answer to a write is the same once the cache shows that resourceVersion", "7", "", fingerprint, "7", "d1", memoSame},
		{"the answer to a write tells nothing of a later resourceVersion", "7", "", fingerprint, "8", "d1", memoMoved},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemo()
			m.record(desired, fingerprint, tc.recordedRV, tc.recordedDigest)
			if got := m.lookup(desired, tc.fingerprint, tc.liveRV, tc.digest); got != tc.want {
				t.Errorf("state = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a match by digest is remembered at the new resourceVersion", func(t *testing.T) {
		m := NewMemo()
		m.record(desired, fingerprint, "7", "")
		if !m.matched(desired, fingerprint, "7", "d1") {
			t.Fatal("not matched at the written resourceVersion")
		}
		if !m.matched(desired, fingerprint, "9", "d1") {
			t.Fatal("a status write was taken for an edit")
		}
		if !m.matched(desired, fingerprint, "9", "") {
			t.Error("the status write's resourceVersion was not remembered")
		}
	})
	t.Run("an object in another namespace is unknown", func(t *testing.T) {
		m := NewMemo()
		m.record(desired, fingerprint, "7", "d1")
		if got := m.lookup(role("tenant-b", "get"), fingerprint, "7", "d1"); got != memoUnknown {
			t.Errorf("state = %v, want unknown", got)
		}
	})
	t.Run("an empty resourceVersion is never recorded", func(t *testing.T) {
		m := NewMemo()
		m.record(desired, fingerprint, "", "d1")
		if m.matched(desired, fingerprint, "", "d1") || m.Len() != 0 {
			t.Error("recorded an object without a resourceVersion")
		}
	})
	t.Run("forgetting a namespace drops its objects and the Namespace itself", func(t *testing.T) {
		m := NewMemo()
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}
		nsPrint, err := fingerprintOf(ns)
		if err != nil {
			t.Fatal(err)
		}
		m.record(desired, fingerprint, "7", "d1")
		m.record(ns, nsPrint, "3", "d2")
		m.record(role("tenant-b", "get"), fingerprint, "9", "d3")
		m.Forget("tenant-a")
		if m.matched(desired, fingerprint, "7", "d1") || m.matched(ns, nsPrint, "3", "d2") {
			t.Error("still matched after Forget")
		}
		if m.Len() != 1 {
			t.Errorf("Len = %d, want the other namespace's 1", m.Len())
		}
	})
	t.Run("a nil memo remembers nothing and does not fail", func(t *testing.T) {
		var m *Memo
		m.record(desired, fingerprint, "7", "d1")
		m.Forget("tenant-a")
		if m.matched(desired, fingerprint, "7", "d1") {
			t.Error("a nil memo matched")
		}
	})
}
