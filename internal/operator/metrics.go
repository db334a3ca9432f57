package operator

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/usage"
	"github.com/landlord-dev/landlord/internal/version"
)

// buildInfo is 1, labelled with the running build, so a dashboard shows which release runs and
// a query can join any metric with it.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "landlord_build_info",
	Help: "Always 1; the labels name the running build of Landlord.",
}, []string{"version", "commit", "go_version"})

// shardLeader says, per process, whether it leads its shard. Every shard's replicas report it,
// 0 while they stand by: an alert finds the shard no replica leads, where a count of targets up
// cannot tell one shard's replicas from another's.
var shardLeader = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "landlord_shard_leader",
	Help: "1 while this replica leads its operator shard (holds the shard's lease, or runs without leader election), 0 while it stands by; shard is empty for the default shard.",
}, []string{"shard"})

// leading returns the Runnable that reports this process's lead of shard: the manager starts it
// once the process leads (a Runnable that does not say otherwise waits for leader election) and
// stops it when the process stops.
func leading(shard string) manager.Runnable {
	shardLeader.WithLabelValues(shard).Set(0)
	return manager.RunnableFunc(func(ctx context.Context) error {
		shardLeader.WithLabelValues(shard).Set(1)
		<-ctx.Done()
		shardLeader.WithLabelValues(shard).Set(0)
		return nil
	})
}

// The database and store packages keep their metrics unregistered, so the CLI, which uses them
// too, serves none; the operator's process registers them once with controller-runtime's
// registry, which its metrics endpoint serves.
func init() {
	info := version.Get()
	buildInfo.WithLabelValues(info.Version, info.Commit, info.GoVersion).Set(1)
	ctrlmetrics.Registry.MustRegister(buildInfo, shardLeader)
	ctrlmetrics.Registry.MustRegister(database.Collectors()...)
	ctrlmetrics.Registry.MustRegister(secret.Collectors()...)
	ctrlmetrics.Registry.MustRegister(usage.Collectors()...)
}
