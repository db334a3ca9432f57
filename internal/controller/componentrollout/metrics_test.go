package componentrollout

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// served registers, in a registry of its own, the rollout metrics computed from a reader
// holding objs, as the leader's cache would.
func served(t *testing.T, objs ...client.Object) *prometheus.Registry {
	t.Helper()
	reader := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(objs...).Build()
	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(direct{reader})
	return registry
}

// direct collects the rollout metrics from its reader at every scrape, as the collector does
// while its Source runs.
type direct struct{ reader client.Reader }

func (d direct) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range rolloutDescs {
		ch <- desc
	}
}

func (d direct) Collect(ch chan<- prometheus.Metric) {
	if err := collectRollouts(context.Background(), d.reader, ch); err != nil {
		ch <- prometheus.NewInvalidMetric(rolloutDescs[0], err)
	}
}

func TestRolloutMetrics(t *testing.T) {
	rollout := func(name string, mutate func(*tenancyv1alpha1.ComponentRollout)) *tenancyv1alpha1.ComponentRollout {
		ro := &tenancyv1alpha1.ComponentRollout{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "1.2.0"},
		}
		mutate(ro)
		return ro
	}
	halfway := rollout("web-1-2-0", func(ro *tenancyv1alpha1.ComponentRollout) {
		ro.Spec.Strategy.MaxFailures = 1
		ro.Status.Waves = make([]tenancyv1alpha1.RolloutWave, 4)
		ro.Status.Released = 2
		ro.Status.Done, ro.Status.Pending, ro.Status.Failed, ro.Status.Blocked, ro.Status.Skipped, ro.Status.Ahead = 10, 28, 1, 1, 2, 0
		ro.Status.Conditions = []metav1.Condition{
			{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonWaveInProgress},
			{Type: tenancyv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonWaveInProgress},
		}
	})
	overBudget := rollout("api-2-0-0", func(ro *tenancyv1alpha1.ComponentRollout) {
		ro.Spec.Component, ro.Spec.Version = "api", "2.0.0"
		ro.Status.Waves = make([]tenancyv1alpha1.RolloutWave, 1)
		ro.Status.Released = 1
		ro.Status.Done, ro.Status.Failed = 3, 2
		ro.Status.Conditions = []metav1.Condition{
			{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonTooManyFailures},
			{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonTooManyFailures},
		}
	})
	fresh := rollout("jobs-0-1-0", func(ro *tenancyv1alpha1.ComponentRollout) { ro.Spec.Component, ro.Spec.Version = "jobs", "0.1.0" })

	t.Run("a rollout reports its Ready status, its tenants by progress, its waves and its failure budget, with no tenant's name", func(t *testing.T) {
		registry := served(t, halfway)
		want := `
# HELP landlord_rollout_max_failures ` + maxFailuresHelp + `
# TYPE landlord_rollout_max_failures gauge
landlord_rollout_max_failures{component="web",rollout="web-1-2-0",version="1.2.0"} 1
# HELP landlord_rollout_status ` + statusHelp + `
# TYPE landlord_rollout_status gauge
landlord_rollout_status{component="web",ready="False",reason="WaveInProgress",rollout="web-1-2-0",stalled="false",version="1.2.0"} 1
# HELP landlord_rollout_tenants ` + tenantsHelp + `
# TYPE landlord_rollout_tenants gauge
landlord_rollout_tenants{component="web",progress="ahead",rollout="web-1-2-0",version="1.2.0"} 0
landlord_rollout_tenants{component="web",progress="blocked",rollout="web-1-2-0",version="1.2.0"} 1
landlord_rollout_tenants{component="web",progress="done",rollout="web-1-2-0",version="1.2.0"} 10
landlord_rollout_tenants{component="web",progress="failed",rollout="web-1-2-0",version="1.2.0"} 1
landlord_rollout_tenants{component="web",progress="pending",rollout="web-1-2-0",version="1.2.0"} 28
landlord_rollout_tenants{component="web",progress="skipped",rollout="web-1-2-0",version="1.2.0"} 2
# HELP landlord_rollout_waves ` + wavesHelp + `
# TYPE landlord_rollout_waves gauge
landlord_rollout_waves{component="web",rollout="web-1-2-0",version="1.2.0"} 4
# HELP landlord_rollout_waves_released ` + releasedHelp + `
# TYPE landlord_rollout_waves_released gauge
landlord_rollout_waves_released{component="web",rollout="web-1-2-0",version="1.2.0"} 2
`
		if err := testutil.GatherAndCompare(registry, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
	})

	t.Run("a rollout over its failure budget reports more failed tenants than it tolerates, and is Stalled", func(t *testing.T) {
		registry := served(t, overBudget)
		want := `
# HELP landlord_rollout_max_failures ` + maxFailuresHelp + `
# TYPE landlord_rollout_max_failures gauge
landlord_rollout_max_failures{component="api",rollout="api-2-0-0",version="2.0.0"} 0
# HELP landlord_rollout_status ` + statusHelp + `
# TYPE landlord_rollout_status gauge
landlord_rollout_status{component="api",ready="False",reason="TooManyFailures",rollout="api-2-0-0",stalled="true",version="2.0.0"} 1
`
		if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "landlord_rollout_status", "landlord_rollout_max_failures"); err != nil {
			t.Error(err)
		}
		if got := testutil.ToFloat64(gathered(t, registry, "landlord_rollout_tenants", "failed")); got != 2 {
			t.Errorf("failed tenants %v, want 2", got)
		}
	})

	t.Run("a rollout not reconciled yet reports Ready Unknown, no wave and no tenant", func(t *testing.T) {
		registry := served(t, fresh)
		want := `
# HELP landlord_rollout_status ` + statusHelp + `
# TYPE landlord_rollout_status gauge
landlord_rollout_status{component="jobs",ready="Unknown",reason="",rollout="jobs-0-1-0",stalled="false",version="0.1.0"} 1
# HELP landlord_rollout_waves ` + wavesHelp + `
# TYPE landlord_rollout_waves gauge
landlord_rollout_waves{component="jobs",rollout="jobs-0-1-0",version="0.1.0"} 0
# HELP landlord_rollout_waves_released ` + releasedHelp + `
# TYPE landlord_rollout_waves_released gauge
landlord_rollout_waves_released{component="jobs",rollout="jobs-0-1-0",version="0.1.0"} 0
`
		if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "landlord_rollout_status", "landlord_rollout_waves", "landlord_rollout_waves_released"); err != nil {
			t.Error(err)
		}
		if got := testutil.ToFloat64(gathered(t, registry, "landlord_rollout_tenants", "pending")); got != 0 {
			t.Errorf("pending tenants %v, want 0", got)
		}
	})

	t.Run("no rollout, no series", func(t *testing.T) {
		if n, err := testutil.GatherAndCount(served(t)); err != nil || n != 0 {
			t.Errorf("%d series (%v), want none", n, err)
		}
	})
}

// gathered is the one series of name whose progress label is progress, as a gauge.
func gathered(t *testing.T, registry *prometheus.Registry, name, progress string) prometheus.Collector {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "progress" && l.GetValue() == progress {
					g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name})
					g.Set(m.GetGauge().GetValue())
					return g
				}
			}
		}
	}
	t.Fatalf("no %s{progress=%q}", name, progress)
	return nil
}
