package tenant

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The operator's metrics carry no per-tenant label: a fleet of thousands of tenants would be as
// many series in every Prometheus that scrapes it. Per-tenant status is what kube-state-metrics
// exposes from the Tenant objects (config/kube-state-metrics).
var (
	// componentRenderFailures counts the attempts to render a component that failed, by the
	// reason its tenant then reports: a missing template, a template that does not render, or
	// one rendering a kind components may not create. Every retry of a stalled tenant counts.
	componentRenderFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "landlord_component_render_failures_total",
		Help: "Component renderings that failed, by component and reason (TemplateNotFound, RenderFailed, KindNotAllowed).",
	}, []string{"component", "reason"})
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
	"Tenants by lifecycle state (spec.state), Ready condition status (True, False, Unknown), Ready reason, whether they are Stalled (true, false) and whether they are suspended (spec.suspend: true, false); reported by the leading replica.",
	[]string{"state", "ready", "reason", "stalled", "suspended"}, nil)

// tenantsCollector serves landlord_tenants for whichever operator of this process leads.
var tenantsCollector = &tenantCounts{}

func init() {
	metrics.Registry.MustRegister(componentRenderFailures, applyFailures, tenantsCollector)
}

// tenantCounts is a collector that lists the tenants from a reader (the manager's cache) at
// scrape time: counting at scrape time cannot drift from the tenants as they are, and costs no
// API request.
type tenantCounts struct {
	mu     sync.Mutex
	reader client.Reader
	// owner is the Runnable that set reader.
	owner *Counts
}

// collectTimeout bounds a scrape's listing; the cache answers from memory.
const collectTimeout = 10 * time.Second

func (c *tenantCounts) Describe(ch chan<- *prometheus.Desc) { ch <- tenantsDesc }

func (c *tenantCounts) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader := c.reader
	c.mu.Unlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	list := &tenancyv1alpha1.TenantList{}
	// Only read: no deep copy of every tenant for each scrape.
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(tenantsDesc, err)
		return
	}
	for key, n := range countTenants(list.Items) {
		ch <- prometheus.MustNewConstMetric(tenantsDesc, prometheus.GaugeValue, float64(n), key.state, key.ready, key.reason,
			strconv.FormatBool(key.stalled), strconv.FormatBool(key.suspended))
	}
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
}

// countTenants counts tenants by state, Ready status and reason, stall and suspension. A tenant not yet
// reconciled has no Ready condition: Unknown, with no reason.
func countTenants(items []tenancyv1alpha1.Tenant) map[tenantKey]int {
	counts := map[tenantKey]int{}
	for i := range items {
		t := &items[i]
		key := tenantKey{state: string(t.Spec.State), ready: string(metav1.ConditionUnknown)}
		if key.state == "" {
			key.state = string(tenancyv1alpha1.StateActive)
		}
		if ready := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ReadyCondition); ready != nil {
			key.ready, key.reason = string(ready.Status), ready.Reason
		}
		key.stalled = meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.StalledCondition)
		key.suspended = t.Spec.Suspend
		counts[key]++
	}
	return counts
}

// Counts is a manager Runnable that reports landlord_tenants from Reader while its
// operator leads (a Runnable without NeedLeaderElection runs on the leader only): one replica
// reports the fleet, so sums over replicas do not count tenants twice.
type Counts struct {
	Reader client.Reader
}

// Start reports from the reader until ctx ends.
func (tc *Counts) Start(ctx context.Context) error {
	tenantsCollector.mu.Lock()
	tenantsCollector.reader, tenantsCollector.owner = tc.Reader, tc
	tenantsCollector.mu.Unlock()
	<-ctx.Done()
	tenantsCollector.mu.Lock()
	// Another operator of this process (tests restart it) may have taken over meanwhile.
	if tenantsCollector.owner == tc {
		tenantsCollector.reader, tenantsCollector.owner = nil, nil
	}
	tenantsCollector.mu.Unlock()
	return nil
}
