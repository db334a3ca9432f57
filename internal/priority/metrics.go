package priority

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	heldWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "landlord_background_writes_held_total",
		Help: "Background writes (anything the operator writes but a claim's bind and Bound status, a shared-secret change's copies, leases and reviews) that waited because a claim was being bound, until the bind was done, a write in flight ended, client.yield.maxWait passed or the request's context ended.",
	})
	heldSeconds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "landlord_background_writes_held_seconds_total",
		Help: "Seconds background writes spent waiting because a claim was being bound, in all.",
	})
	waitingWrites = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "landlord_background_writes_waiting",
		Help: "Background writes waiting now because a claim is being bound.",
	})
	urgentWork = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "landlord_claim_binds_in_progress",
		Help: "Claims being bound now, each holding the operator's background writes back (0 while client.yield.inFlight is -1).",
	})
)

func init() {
	metrics.Registry.MustRegister(heldWrites, heldSeconds, waitingWrites, urgentWork)
}
