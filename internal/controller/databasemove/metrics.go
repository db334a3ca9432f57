package databasemove

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// moveDowntime is each move's cut-over, from the fence to the tenant's Secret naming the new
// server, by engine: how long a tenant's database took no session.
var moveDowntime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "landlord_database_move_downtime_seconds",
	Help:    "Cut-over of each database move, from the fence of the old login to the tenant's credentials naming the new server, by engine.",
	Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
}, []string{"engine"})

func init() {
	metrics.Registry.MustRegister(moveDowntime)
}
