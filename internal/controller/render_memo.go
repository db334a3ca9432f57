package controller

import (
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/landlord-dev/landlord/internal/apply"
)

// renderMemo remembers each tenant component's last rendering and a fingerprint of what it was
// rendered from. Parsing the template, validating the values against its schema and decoding
// the YAML took most of the CPU of a no-op reconcile of a tenant with a component, to produce
// the same objects every time.
type renderMemo struct {
	mu sync.Mutex
	// byNamespace maps a tenant namespace to its components' renderings.
	byNamespace map[string]map[string]rendering
}

type rendering struct {
	print apply.Fingerprint
	objs  []*unstructured.Unstructured
}

// renderInputs is everything a rendering depends on. The template's spec is immutable, so its
// UID stands for it; the operator's default values are fixed for the life of the process.
type renderInputs struct {
	Template string
	Values   json.RawMessage
	Input    any
}

// get returns a copy of the remembered rendering, which the caller may change.
func (m *renderMemo) get(namespace, component string, print apply.Fingerprint) ([]*unstructured.Unstructured, bool) {
	m.mu.Lock()
	e, ok := m.byNamespace[namespace][component]
	m.mu.Unlock()
	if !ok || e.print != print {
		return nil, false
	}
	out := make([]*unstructured.Unstructured, len(e.objs))
	for i, obj := range e.objs {
		out[i] = obj.DeepCopy()
	}
	return out, true
}

// put remembers a copy of a rendering.
func (m *renderMemo) put(namespace, component string, print apply.Fingerprint, objs []*unstructured.Unstructured) {
	kept := make([]*unstructured.Unstructured, len(objs))
	for i, obj := range objs {
		kept[i] = obj.DeepCopy()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byNamespace == nil {
		m.byNamespace = map[string]map[string]rendering{}
	}
	if m.byNamespace[namespace] == nil {
		m.byNamespace[namespace] = map[string]rendering{}
	}
	m.byNamespace[namespace][component] = rendering{print: print, objs: kept}
}

func (m *renderMemo) forget(namespace string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byNamespace, namespace)
}
