package migrations

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// migrationsFinished counts the moves whose migrations ended, by component and result; like the
// operator's other metrics, it carries no per-tenant label (the tenant's status and events name
// it).
var migrationsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "landlord_migrations_total",
	Help: "Component migrations that ended, by component and result (succeeded, failed).",
}, []string{"component", "result"})

// migrationDuration is how long the moves that succeeded took, from their start (backup and
// fence included) to their last post migration.
var migrationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "landlord_migration_duration_seconds",
	Help:    "Time from the start of a component's migration (its backup included) to its success, by component.",
	Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1200, 3600},
}, []string{"component"})

func init() {
	metrics.Registry.MustRegister(migrationsFinished, migrationDuration)
}

// countMoves makes the component's landlord_migrations_total series exist, at 0 until a move
// ends so: a counter first scraped at 1 shows no increase, and the alert on failed migrations
// (increase of result="failed") would miss a component's first failure.
func countMoves(component string) {
	for _, result := range []string{"succeeded", "failed"} {
		migrationsFinished.WithLabelValues(component, result)
	}
}
