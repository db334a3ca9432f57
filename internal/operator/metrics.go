package operator

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/version"
)

// buildInfo is 1, labelled with the running build, so a dashboard shows which release runs and
// a query can join any metric with it.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "landlord_build_info",
	Help: "Always 1; the labels name the running build of Landlord.",
}, []string{"version", "commit", "go_version"})

// The database and store packages keep their metrics unregistered, so the CLI, which uses them
// too, serves none; the operator's process registers them once with controller-runtime's
// registry, which its metrics endpoint serves.
func init() {
	info := version.Get()
	buildInfo.WithLabelValues(info.Version, info.Commit, info.GoVersion).Set(1)
	ctrlmetrics.Registry.MustRegister(buildInfo)
	ctrlmetrics.Registry.MustRegister(database.Collectors()...)
	ctrlmetrics.Registry.MustRegister(secret.Collectors()...)
}
