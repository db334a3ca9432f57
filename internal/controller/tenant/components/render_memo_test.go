package components

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/landlord-dev/landlord/internal/apply"
)

// renderFixture is one rendered object and the digests of the inputs it was rendered from and
// of other inputs. Each subtest builds its own, so none depends on what another did to it.
func renderFixture(t *testing.T) (obj *unstructured.Unstructured, fingerprint, other apply.Fingerprint) {
	t.Helper()
	obj = &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	fingerprint, err := apply.FingerprintOf(renderInputs{Template: "uid-1", Input: map[string]string{"tenant": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err = apply.FingerprintOf(renderInputs{Template: "uid-1", Input: map[string]string{"tenant": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if fingerprint == other {
		t.Fatal("different inputs have the same digest")
	}
	return obj, fingerprint, other
}

func TestRenderMemo(t *testing.T) {
	t.Run("a rendering is found again with the same inputs only", func(t *testing.T) {
		obj, fingerprint, other := renderFixture(t)
		var m renderMemo
		m.put("tenant-a", "web", fingerprint, []*unstructured.Unstructured{obj})
		got, ok := m.get("tenant-a", "web", fingerprint)
		if !ok {
			t.Fatal("not found with the same inputs")
		}
		if len(got) != 1 || got[0].Object["data"].(map[string]any)["k"] != "v" {
			t.Errorf("found %v, want the rendering that was put", got)
		}
		if _, ok := m.get("tenant-a", "web", other); ok {
			t.Error("found with other inputs")
		}
		if _, ok := m.get("tenant-a", "api", fingerprint); ok {
			t.Error("found under another component")
		}
		if _, ok := m.get("tenant-b", "web", fingerprint); ok {
			t.Error("found in another namespace")
		}
	})
	t.Run("callers change copies, never the remembered rendering", func(t *testing.T) {
		obj, fingerprint, _ := renderFixture(t)
		var m renderMemo
		m.put("tenant-a", "web", fingerprint, []*unstructured.Unstructured{obj})
		obj.Object["data"].(map[string]any)["k"] = "changed after put"
		got, ok := m.get("tenant-a", "web", fingerprint)
		if !ok {
			t.Fatal("not found with the same inputs")
		}
		got[0].Object["data"].(map[string]any)["k"] = "changed by a caller"
		again, ok := m.get("tenant-a", "web", fingerprint)
		if !ok {
			t.Fatal("not found again with the same inputs")
		}
		if v := again[0].Object["data"].(map[string]any)["k"]; v != "v" {
			t.Errorf("remembered value = %v, want v", v)
		}
	})
	t.Run("a remembered rendering comes back with its integers as integers", func(t *testing.T) {
		_, fingerprint, _ := renderFixture(t)
		svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
			"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}}
		var m renderMemo
		m.put("tenant-a", "web", fingerprint, []*unstructured.Unstructured{svc})
		got, ok := m.get("tenant-a", "web", fingerprint)
		if !ok {
			t.Fatal("not found with the same inputs")
		}
		port := got[0].Object["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"]
		if port != int64(80) {
			t.Errorf("port = %#v, want int64(80) as the renderer makes it", port)
		}
	})
	t.Run("a forgotten namespace has no renderings", func(t *testing.T) {
		obj, fingerprint, _ := renderFixture(t)
		var m renderMemo
		m.put("tenant-a", "web", fingerprint, []*unstructured.Unstructured{obj})
		m.put("tenant-b", "web", fingerprint, []*unstructured.Unstructured{obj})
		m.forget("tenant-a")
		if _, ok := m.get("tenant-a", "web", fingerprint); ok {
			t.Error("found after forget")
		}
		if _, ok := m.get("tenant-b", "web", fingerprint); !ok {
			t.Error("another namespace's rendering was forgotten too")
		}
	})
}
