package priority

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	heldWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "landlord_background_writes_held_total",
		Help: "Background writes (creating tenants, refilling pools, status) that waited for a claim's bind to finish first.",
	})
	heldSeconds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "landlord_background_writes_held_seconds_total",
		Help: "Seconds background writes spent waiting for claims' binds, in all.",
	})
)

func init() {
	metrics.Registry.MustRegister(heldWrites, heldSeconds)
}
