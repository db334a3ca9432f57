package tenantclaim

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var claimBindSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "landlord_claim_bind_seconds",
	Help:    "Seconds from a TenantClaim's creation until it is Bound to a tenant, by its TenantPool.",
	Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
}, []string{"pool"})

func init() {
	metrics.Registry.MustRegister(claimBindSeconds)
}
