package operator

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newMapper is controller-runtime's dynamic REST mapper with its answers to RESTMapping kept.
// The cache asks for a mapping on every read of a Secret (to tell namespaced kinds apart), and
// the dynamic mapper builds a fresh answer each time: an eighth of the CPU of a no-op reconcile.
// A kind's mapping does not change while it exists; errors are not kept, so a kind installed
// later is still found.
func newMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &keptMapper{RESTMapper: m, mappings: map[string]*meta.RESTMapping{}}, nil
}

type keptMapper struct {
	meta.RESTMapper
	mu       sync.RWMutex
	mappings map[string]*meta.RESTMapping
}

func (m *keptMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := gk.String() + "/" + strings.Join(versions, ",")
	m.mu.RLock()
	mapping, ok := m.mappings[key]
	m.mu.RUnlock()
	if ok {
		return mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.mappings[key] = mapping
	m.mu.Unlock()
	return mapping, nil
}
