// Package registered records every collector registered with controller-runtime's metrics
// registry from the moment it is initialized, so the metrics reference lists what the operator
// registers rather than a list kept beside it.
//
// Go initializes packages in the order of their import paths, each once its own imports are:
// this package's path sorts before every package under internal/, and it imports none of them,
// so it replaces the registry before any of their init functions registers a collector. The
// reference's generator checks that nothing escaped it.
package registered

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// recorder forwards to the registry it replaces, so what the operator's packages register is
// served as before, and keeps each collector registered.
type recorder struct {
	ctrlmetrics.RegistererGatherer

	mu         sync.Mutex
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.RegistererGatherer.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *recorder) Unregister(c prometheus.Collector) bool {
	if !r.RegistererGatherer.Unregister(c) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, kept := range r.collectors {
		if kept == c {
			r.collectors = append(r.collectors[:i], r.collectors[i+1:]...)
			break
		}
	}
	return true
}

var registry = &recorder{RegistererGatherer: ctrlmetrics.Registry}

func init() {
	ctrlmetrics.Registry = registry
}

// Collectors returns the collectors registered since this package was initialized, in the
// order they were.
func Collectors() []prometheus.Collector {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return append([]prometheus.Collector(nil), registry.collectors...)
}
