package tenant

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/leadermetrics"
)

// The operator's metrics carry no per-tenant label: a fleet of thousands of tenants would be as
// many series in every Prometheus that scrapes it. Per-tenant status is what kube-state-metrics
// exposes from the Tenant objects (config/kube-state-metrics). The components' render failures
// are counted by their engine (package components).
var (
	// applyFailures counts writes the API server refused, by the kind written and the reason
	// the tenant reports: OwnershipConflict and InvalidObject stall the tenant, ApplyFailed is
	// retried.
	applyFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "landlord_apply_failures_total",
		Help: "Writes of a tenant's objects that failed, by kind and reason (OwnershipConflict, InvalidObject, ApplyFailed).",
	}, []string{"kind", "reason"})
)

// tenantsDesc is landlord_tenants: how many tenants are in each lifecycle state and Ready
// status, computed from the cache when scraped.
var tenantsDesc = prometheus.NewDesc("landlord_tenants",
	"Tenants by lifecycle state (spec.state), Ready condition status (True, False, Unknown), Ready reason, whether they are Stalled (true, false), whether they are suspended (spec.suspend: true, false) and the shard their tenancy.landlord.dev/shard label names (empty: the default shard); reported by the leading replica of the default shard.",
	[]string{"state", "ready", "reason", "stalled", "suspended", "shard"}, nil)

// oldestNotReadyDesc is landlord_tenant_oldest_not_ready_seconds: how long the longest-waiting
// tenant has gone without Ready. A count of tenants not Ready stays above zero through every
// rollout and pool refill, each tenant for a minute or two; the age of the oldest grows only
// when one tenant stays not Ready, which is what an alert should wait for. Its reason, stall and
// shard are labels, none of them the tenant's name, so the series stay few whatever the fleet.
var oldestNotReadyDesc = prometheus.NewDesc("landlord_tenant_oldest_not_ready_seconds",
	"Seconds since the tenant that has been not Ready longest was last Ready (its Ready condition's last transition, or its creation when it has no Ready condition yet), by its Ready reason, whether it is Stalled (true, false) and its shard (empty: the default shard); suspended tenants are left out, and no series is reported while every tenant is Ready. Reported by the leading replica of the default shard.",
	[]string{"reason", "stalled", "shard"}, nil)

// tenantsCollector serves the tenant gauges for whichever operator of this process leads.
var tenantsCollector = leadermetrics.New(collectTenants, tenantsDesc, oldestNotReadyDesc)

func init() {
	metrics.Registry.MustRegister(applyFailures, tenantsCollector)
}

// Counts returns the manager Runnable that reports landlord_tenants and
// landlord_tenant_oldest_not_ready_seconds from reader (the manager's cache) while its operator
// leads.
func Counts(reader client.Reader) manager.Runnable { return tenantsCollector.Source(reader) }

// collectTenants lists the tenants once, from the cache, for both gauges.
func collectTenants(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error {
	list := &tenancyv1alpha1.TenantList{}
	// Only read: no deep copy of every tenant for each scrape.
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	counts, oldest := summarizeTenants(list.Items, time.Now())
	for key, n := range counts {
		ch <- prometheus.MustNewConstMetric(tenantsDesc, prometheus.GaugeValue, float64(n), key.state, key.ready, key.reason,
			strconv.FormatBool(key.stalled), strconv.FormatBool(key.suspended), key.shard)
	}
	for key, seconds := range oldest {
		ch <- prometheus.MustNewConstMetric(oldestNotReadyDesc, prometheus.GaugeValue, seconds, key.reason,
			strconv.FormatBool(key.stalled), key.shard)
	}
	return nil
}

// tenantKey is one landlord_tenants series.
type tenantKey struct {
	state, ready, reason string
	// stalled: the tenant waits for a person (Stalled=True), where other reasons are retried.
	// Alerts select on it rather than on a list of reasons that could fall behind the code.
	stalled bool
	// suspended: spec.suspend is true, so the conditions are as last observed, on purpose. The
	// alerts on tenants leave such tenants out.
	suspended bool
	// shard is the shard the tenant's label names: a shard that is down shows as its tenants
	// not Ready, apart from the others'.
	shard string
}

// ageKey is one landlord_tenant_oldest_not_ready_seconds series.
type ageKey struct {
	reason  string
	stalled bool
	shard   string
}

// summarizeTenants counts tenants by state, Ready status and reason, stall, suspension and
// shard, and finds, for each Ready reason, stall and shard, the age in seconds at now of the
// tenant not Ready the longest. A tenant not yet reconciled has no Ready condition: Unknown, with
// no reason, since its creation.
func summarizeTenants(items []tenancyv1alpha1.Tenant, now time.Time) (map[tenantKey]int, map[ageKey]float64) {
	counts := map[tenantKey]int{}
	oldest := map[ageKey]float64{}
	for i := range items {
		t := &items[i]
		key := tenantKey{state: string(t.Spec.State), ready: string(metav1.ConditionUnknown), shard: t.Labels[tenancyv1alpha1.ShardLabel]}
		if key.state == "" {
			key.state = string(tenancyv1alpha1.StateActive)
		}
		since := t.CreationTimestamp.Time
		if ready := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ReadyCondition); ready != nil {
			key.ready, key.reason = string(ready.Status), ready.Reason
			since = ready.LastTransitionTime.Time
		}
		key.stalled = meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.StalledCondition)
		key.suspended = t.Spec.Suspend
		counts[key]++
		if key.ready == string(metav1.ConditionTrue) || key.suspended {
			continue
		}
		// Ready's transition was stamped by a replica whose clock may run a little ahead.
		seconds := max(now.Sub(since).Seconds(), 0)
		age := ageKey{reason: key.reason, stalled: key.stalled, shard: key.shard}
		if prev, ok := oldest[age]; !ok || seconds > prev {
			oldest[age] = seconds
		}
	}
	return counts, oldest
}
