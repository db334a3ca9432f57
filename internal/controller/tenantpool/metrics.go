package tenantpool

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	poolSparesReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "landlord_pool_spares_ready",
		Help: "Ready spare tenants a TenantPool holds, not yet claimed.",
	}, []string{"pool"})
	// poolSparesDesired is the pool's target beside poolSparesReady, so an alert compares the
	// two without knowing any pool's size.
	poolSparesDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "landlord_pool_spares_desired",
		Help: "Spare tenants each TenantPool is asked to keep (spec.replicas).",
	}, []string{"pool"})
)

func init() {
	metrics.Registry.MustRegister(poolSparesReady, poolSparesDesired)
}
