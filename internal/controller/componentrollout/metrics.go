package componentrollout

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/leadermetrics"
)

// The rollout metrics are read from each rollout's status when scraped: the status already
// counts its tenants wave by wave, so the series are a few per rollout, never one per tenant.
const (
	statusHelp      = "Always 1 per ComponentRollout: its component, version, Ready condition status (True, False, Unknown) and reason, and whether it is Stalled (true, false): over its failure budget, its template missing or its selector invalid."
	tenantsHelp     = "A ComponentRollout's tenants by progress: done (run the version Ready), pending, failed (count against maxFailures), blocked (failed for reasons of their own), skipped (no longer chosen), ahead (run a higher version)."
	wavesHelp       = "A ComponentRollout's waves, planned so far."
	releasedHelp    = "A ComponentRollout's waves released to their tenants."
	maxFailuresHelp = "A ComponentRollout's failure budget (spec.strategy.maxFailures): one more failed tenant halts it."
)

var (
	rolloutLabels      = []string{"rollout", "component", "version"}
	rolloutStatusDesc  = prometheus.NewDesc("landlord_rollout_status", statusHelp, append(rolloutLabels[:3:3], "ready", "reason", "stalled"), nil)
	rolloutTenantsDesc = prometheus.NewDesc("landlord_rollout_tenants", tenantsHelp, append(rolloutLabels[:3:3], "progress"), nil)
	rolloutWavesDesc   = prometheus.NewDesc("landlord_rollout_waves", wavesHelp, rolloutLabels, nil)
	rolloutReleased    = prometheus.NewDesc("landlord_rollout_waves_released", releasedHelp, rolloutLabels, nil)
	rolloutMaxFailures = prometheus.NewDesc("landlord_rollout_max_failures", maxFailuresHelp, rolloutLabels, nil)
	rolloutDescs       = []*prometheus.Desc{rolloutStatusDesc, rolloutTenantsDesc, rolloutWavesDesc, rolloutReleased, rolloutMaxFailures}
)

// rolloutsCollector serves the rollout metrics for whichever operator of this process leads.
var rolloutsCollector = leadermetrics.New(collectRollouts, rolloutDescs...)

func init() {
	metrics.Registry.MustRegister(rolloutsCollector)
}

// Metrics returns the manager Runnable that reports every rollout's progress from reader (the
// manager's cache) while its operator leads.
func Metrics(reader client.Reader) manager.Runnable { return rolloutsCollector.Source(reader) }

// collectRollouts reports each rollout from its status.
func collectRollouts(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error {
	list := &tenancyv1alpha1.ComponentRolloutList{}
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	for i := range list.Items {
		ro := &list.Items[i]
		s := &ro.Status
		id := []string{ro.Name, ro.Spec.Component, ro.Spec.Version}
		ready, reason := string(metav1.ConditionUnknown), ""
		if c := meta.FindStatusCondition(s.Conditions, tenancyv1alpha1.ReadyCondition); c != nil {
			ready, reason = string(c.Status), c.Reason
		}
		stalled := meta.IsStatusConditionTrue(s.Conditions, tenancyv1alpha1.StalledCondition)
		gauge(rolloutStatusDesc, 1, append(id, ready, reason, strconv.FormatBool(stalled))...)
		gauge(rolloutWavesDesc, float64(len(s.Waves)), id...)
		gauge(rolloutMaxFailures, float64(ro.Spec.Strategy.MaxFailures), id...)
		gauge(rolloutReleased, float64(s.Released), id...)
		for progress, n := range map[string]int32{
			"done": s.Done, "pending": s.Pending, "failed": s.Failed, "blocked": s.Blocked, "skipped": s.Skipped, "ahead": s.Ahead,
		} {
			gauge(rolloutTenantsDesc, float64(n), append(id, progress)...)
		}
	}
	return nil
}
