package usage

import "github.com/prometheus/client_golang/prometheus"

const (
	resultSuccess = "success"
	// resultError: the tenants could not be listed, or a server or the metrics API could not be
	// asked.
	resultError = "error"
)

var (
	samples = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "landlord_usage_samples_total",
		Help: "Usage samples taken, by result (success; error when a database server or the metrics API could not be asked, and what it measures kept its last figures).",
	}, []string{"result"})
	sampleSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "landlord_usage_sample_duration_seconds",
		Help:    "How long one usage sample of every tenant took, database servers' queries included.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300},
	})
	lastSample = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "landlord_usage_last_sample_timestamp_seconds",
		Help: "When the last usage sample ended (Unix time): a tenant's status.usage.sampledAt moves only when its figures change.",
	})
	unmeasuredDatabases = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "landlord_usage_databases_unmeasured",
		Help: "Tenant databases whose server answered the last sample without them (the administrator may not measure them): they keep their last figures.",
	})
	unmeasuredPods = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "landlord_usage_pods_unmeasured",
		Help: "Tenants whose pods the metrics API did not report at the last sample (not yet scraped, or on a node it cannot reach; or the API did not answer): what their pods use keeps its last figures.",
	})
	tenantsChanged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "landlord_usage_tenants_changed_total",
		Help: "Tenants whose sampled usage differed from their status and was handed to the tenant controller to write.",
	})
)

// Collectors are the usage metrics, for the operator to register once.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{samples, sampleSeconds, lastSample, unmeasuredDatabases, unmeasuredPods, tenantsChanged}
}
