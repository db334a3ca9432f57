package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/landlord-dev/landlord/internal/apply"
)

func TestRenderMemo(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	print, err := apply.FingerprintOf(renderInputs{Template: "uid-1", Input: map[string]string{"tenant": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := apply.FingerprintOf(renderInputs{Template: "uid-1", Input: map[string]string{"tenant": "b"}})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a rendering is found again with the same inputs only", func(t *testing.T) {
		var m renderMemo
		m.put("tenant-a", "web", print, []*unstructured.Unstructured{obj})
		if _, ok := m.get("tenant-a", "web", print); !ok {
			t.Error("not found with the same inputs")
		}
		if _, ok := m.get("tenant-a", "web", other); ok {
			t.Error("found with other inputs")
		}
		if _, ok := m.get("tenant-a", "api", print); ok {
			t.Error("found under another component")
		}
	})
	t.Run("callers change copies, never the remembered rendering", func(t *testing.T) {
		var m renderMemo
		m.put("tenant-a", "web", print, []*unstructured.Unstructured{obj})
		obj.Object["data"].(map[string]any)["k"] = "changed after put"
		got, _ := m.get("tenant-a", "web", print)
		got[0].Object["data"].(map[string]any)["k"] = "changed by a caller"
		again, _ := m.get("tenant-a", "web", print)
		if v := again[0].Object["data"].(map[string]any)["k"]; v != "v" {
			t.Errorf("remembered value = %v, want v", v)
		}
	})
	t.Run("a forgotten namespace has no renderings", func(t *testing.T) {
		var m renderMemo
		m.put("tenant-a", "web", print, []*unstructured.Unstructured{obj})
		m.forget("tenant-a")
		if _, ok := m.get("tenant-a", "web", print); ok {
			t.Error("found after forget")
		}
	})
}
