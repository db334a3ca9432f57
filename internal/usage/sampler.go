// Package usage samples what each tenant uses, for billing: what its namespace's ResourceQuota
// counts (one list request per 500 tenants), what its pods use where the cluster serves a
// metrics API (one list request), and the size of each of its databases (one query per
// DatabaseServer). A sample that differs from a tenant's status.usage is handed to the
// tenant controller, which writes it with the rest of the status; an unchanged tenant costs no
// request of its own.
package usage

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
)

// Provisioners reaches a DatabaseServer by name (database.Connections).
type Provisioners interface {
	Provisioner(ctx context.Context, name string) (database.Provisioner, error)
}

// Sampler takes a sample of every tenant of its shard every Interval.
type Sampler struct {
	// Reader is the operator's cache, for Tenants.
	Reader client.Reader
	// APIReader lists the tenants' ResourceQuotas, whose counts the cache does not keep (it
	// keeps a quota's metadata and digest, to stay small at thousands of tenants).
	APIReader client.Reader
	// Objects selects the objects of the shard's tenants (the shard's cache's selector): a
	// shard lists its own tenants' quotas only.
	Objects      labels.Selector
	Provisioners Provisioners
	// PodMetrics, when set, reads what the tenants' pods use.
	PodMetrics PodMetrics
	// PodMetricsTimeout bounds the metrics API's list.
	PodMetricsTimeout time.Duration
	// Namespace is a tenant's namespace name.
	Namespace func(tenant string) string
	// QuotaName is the name of the ResourceQuota in each tenant namespace.
	QuotaName string
	Interval  time.Duration
	// Timeout bounds each server's query.
	Timeout time.Duration
	Clock   clock.WithTicker
	// Shard is the operator shard whose tenants are sampled ("" for the default shard).
	Shard string
	// Changed receives each tenant whose sample differs from its status.
	Changed chan<- event.GenericEvent

	mu sync.Mutex
	// pending holds the samples that differ from their tenant's status until the status
	// shows them (or the next sample finds them equal): a fleet at rest holds none.
	pending map[string]pendingSample
	// unserved counts the samples in a row that found no metrics API: the first keeps the
	// tenants' figures (an APIService re-created, an API server still discovering), the next
	// clears them.
	unserved int
	// measured holds each server's sizes as it last answered them: a server that cannot be asked
	// leaves its databases at these, whether or not the tenants' statuses (read from the cache,
	// which may not show the last sample's write yet) have them.
	measured map[string]map[string]int64
}

type pendingSample struct {
	uid   types.UID
	usage tenancyv1alpha1.TenantUsage
}

// NeedLeaderElection: only the leader samples, as only it writes.
func (s *Sampler) NeedLeaderElection() bool { return true }

// Start samples every Interval until ctx ends. The first sample is an interval after start, not
// at once: an operator restarted (or upgraded, or failed over) asks no server and writes no
// tenant before the fleet's usage is due again.
func (s *Sampler) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("usage")
	ctx = log.IntoContext(ctx, logger)
	ticker := s.Clock.NewTicker(s.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			s.Sample(ctx)
		}
	}
}

// For is the sample to record in t's status, if one differs from status, the usage t's status
// holds (asked for only when a sample is pending: a cached tenant's is decoded on demand).
func (s *Sampler) For(t *tenancyv1alpha1.Tenant, status func() *tenancyv1alpha1.TenantUsage) (*tenancyv1alpha1.TenantUsage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pending[t.Name]
	if !ok || p.uid != t.UID {
		return nil, false
	}
	if same(status(), &p.usage) {
		// The status shows it: nothing more to hand over.
		delete(s.pending, t.Name)
		return nil, false
	}
	u := p.usage.DeepCopy()
	return u, true
}

// Sample takes one sample of every tenant of the shard: each database server that holds a
// tenant's database is asked once. A server that cannot be asked leaves its databases at their
// last figures, and is logged and counted.
func (s *Sampler) Sample(ctx context.Context) {
	start := s.Clock.Now()
	logger := log.FromContext(ctx)
	tenants := &tenancyv1alpha1.TenantList{}
	// Only read: the cache's copies, not a deep copy of the fleet every interval.
	if err := s.Reader.List(ctx, tenants, client.UnsafeDisableDeepCopy); err != nil {
		logger.Error(err, "listing tenants to sample their usage")
		samples.WithLabelValues(resultError).Inc()
		return
	}
	var mine []*tenancyv1alpha1.Tenant
	servers := map[string]bool{}
	for i := range tenants.Items {
		t := &tenants.Items[i]
		if !s.covers(t) {
			continue
		}
		mine = append(mine, t)
		if t.Spec.State == tenancyv1alpha1.StatePurged {
			continue
		}
		for _, d := range t.Status.Databases {
			servers[d.Server] = true
		}
	}
	used, err := s.quotasUsed(ctx)
	if err != nil {
		logger.Error(err, "listing the tenants' ResourceQuotas to sample their usage")
		samples.WithLabelValues(resultError).Inc()
		return
	}
	var pods podUsage
	if len(mine) > 0 {
		pods = s.podsUsed(ctx, logger)
	}
	sizes := s.sizes(ctx, logger, servers)
	now := metav1.NewTime(s.Clock.Now())
	var changed []*tenancyv1alpha1.Tenant
	s.mu.Lock()
	if s.pending == nil {
		s.pending = map[string]pendingSample{}
	}
	seen := make(map[string]bool, len(mine))
	unmeasured, podsUnmeasured := 0, 0
	for _, t := range mine {
		seen[t.Name] = true
		// What the status holds: the cache keeps it compact (Compact), decoded here.
		last := Of(t)
		// A Purged tenant uses nothing: its namespace and databases are gone.
		var u tenancyv1alpha1.TenantUsage
		if t.Spec.State != tenancyv1alpha1.StatePurged {
			ns := ""
			if t.Status.Namespace != "" {
				ns = s.Namespace(t.Name)
				u.Resources = used[ns]
			}
			var measured bool
			if u.Used, measured = pods.of(last, ns, u.Resources); !measured {
				podsUnmeasured++
			}
			var missing int
			u.Databases, missing = databases(t, last, sizes)
			unmeasured += missing
		}
		if same(last, &u) {
			delete(s.pending, t.Name)
			continue
		}
		u.SampledAt = now
		s.pending[t.Name] = pendingSample{uid: t.UID, usage: u}
		changed = append(changed, t)
	}
	for name := range s.pending {
		if !seen[name] {
			delete(s.pending, name)
		}
	}
	s.mu.Unlock()
	result := resultSuccess
	if len(sizes.failed) > 0 || pods.failed {
		result = resultError
	}
	samples.WithLabelValues(result).Inc()
	sampleSeconds.Observe(s.Clock.Since(start).Seconds())
	lastSample.Set(float64(s.Clock.Now().Unix()))
	unmeasuredDatabases.Set(float64(unmeasured))
	unmeasuredPods.Set(float64(podsUnmeasured))
	if unmeasured > 0 {
		logger.Info("databases their servers did not report keep their last figures: the administrator may not measure them",
			"databases", unmeasured)
	}
	tenantsChanged.Add(float64(len(changed)))
	for _, t := range changed {
		select {
		case s.Changed <- event.GenericEvent{Object: t}:
		case <-ctx.Done():
			return
		}
	}
}

// covers reports whether t is sampled: its shard's, not deleted, not suspended (nothing of it
// is written).
func (s *Sampler) covers(t *tenancyv1alpha1.Tenant) bool {
	if !t.DeletionTimestamp.IsZero() || t.Spec.Suspend {
		return false
	}
	if t.Status.HandoverTo != nil || len(t.Status.Conditions) == 0 {
		return false
	}
	return t.Status.Shard == s.Shard
}

// quotaPage is how many ResourceQuotas one list request returns.
const quotaPage = 500

// quotasUsed is what each tenant namespace's quota counts as used, by namespace: one list request
// per quotaPage tenants, whatever changed.
func (s *Sampler) quotasUsed(ctx context.Context) (map[string]corev1.ResourceList, error) {
	out := map[string]corev1.ResourceList{}
	opts := []client.ListOption{
		client.MatchingLabelsSelector{Selector: s.Objects},
		client.MatchingFields{"metadata.name": s.QuotaName},
		client.Limit(quotaPage),
	}
	for next := ""; ; {
		page := &corev1.ResourceQuotaList{}
		if err := s.APIReader.List(ctx, page, append(opts, client.Continue(next))...); err != nil {
			return nil, err
		}
		for i := range page.Items {
			if q := &page.Items[i]; len(q.Status.Used) > 0 {
				out[q.Namespace] = q.Status.Used
			}
		}
		if next = page.Continue; next == "" {
			return out, nil
		}
	}
}

// podUsage is what the metrics API reported of each namespace's pods.
type podUsage struct {
	byNamespace map[string]corev1.ResourceList
	// served is whether the cluster serves a metrics API; failed, whether it did not answer;
	// gone, whether this is the first sample in a row to find none (the figures are kept).
	served, failed, gone bool
}

// defaultPodMetricsTimeout bounds the metrics API's list when PodMetricsTimeout is not set.
const defaultPodMetricsTimeout = time.Minute

func (s *Sampler) podsUsed(ctx context.Context, logger logr.Logger) podUsage {
	if s.PodMetrics == nil {
		return podUsage{}
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.PodMetricsTimeout, defaultPodMetricsTimeout))
	defer cancel()
	used, served, err := s.PodMetrics.Used(ctx)
	if err != nil {
		logger.Error(err, "reading what pods use from the metrics API; tenants keep their last figures")
		return podUsage{served: true, failed: true}
	}
	if !served {
		s.unserved++
		// One answer that there is no metrics API does not clear a fleet's figures: the API
		// may be back at the next sample. (A cluster that never had one has no figures to keep.)
		return podUsage{gone: s.unserved == 1}
	}
	s.unserved = 0
	return podUsage{byNamespace: used, served: true}
}

// of is what a tenant's pods, in namespace ns ("" while it has none), use, and whether the
// metrics API measured it: nothing without a metrics API; the last figures (of status, the
// tenant's status.usage) while the API does not answer, or reports none of the pods ns's quota
// counts (pods it has not scraped twice yet, pods on a node it cannot reach), rather than a
// zero that is not known; zero for a tenant with no pod.
func (p podUsage) of(status *tenancyv1alpha1.TenantUsage, ns string, counted corev1.ResourceList) (corev1.ResourceList, bool) {
	last := func() corev1.ResourceList {
		if status == nil {
			return nil
		}
		return status.Used.DeepCopy()
	}
	switch {
	case p.failed:
		return last(), false
	case p.gone:
		return last(), true
	case !p.served:
		return nil, true
	}
	if u, ok := p.byNamespace[ns]; ok && ns != "" {
		return u, true
	}
	if pods, ok := counted[corev1.ResourcePods]; ok && !pods.IsZero() {
		return last(), false
	}
	return noPods.DeepCopy(), true
}

// serverSizes are the database sizes of each server asked, the servers that failed, and the
// sizes those last answered.
type serverSizes struct {
	byServer map[string]map[string]int64
	failed   map[string]bool
	last     map[string]map[string]int64
}

func (s *Sampler) sizes(ctx context.Context, logger logr.Logger, servers map[string]bool) serverSizes {
	out := serverSizes{byServer: map[string]map[string]int64{}, failed: map[string]bool{}}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	slices.Sort(names)
	// The servers are asked beside one another, each within its own timeout: one that does not
	// answer holds no other server's figures up. A few at a time, so a fleet of servers is not
	// opened all at once.
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	at := make(chan struct{}, serversAtOnce)
	for _, name := range names {
		at <- struct{}{}
		wg.Go(func() {
			defer func() { <-at }()
			got, err := s.serverSizes(ctx, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				logger.Error(err, "reading database sizes; the server's databases keep their last figures", "databaseServer", name)
				out.failed[name] = true
				return
			}
			out.byServer[name] = got
		})
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	known := map[string]map[string]int64{}
	out.last = map[string]map[string]int64{}
	for name := range servers {
		if got, ok := out.byServer[name]; ok {
			known[name] = got
		} else if last, ok := s.measured[name]; ok {
			known[name], out.last[name] = last, last
		}
	}
	// Only the servers still asked are remembered.
	s.measured = known
	return out
}

// serversAtOnce is how many database servers a sample asks at once.
const serversAtOnce = 8

func (s *Sampler) serverSizes(ctx context.Context, name string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	p, err := s.Provisioners.Provisioner(ctx, name)
	if err != nil {
		return nil, err
	}
	return p.Sizes(ctx)
}

// databases is the size of each of t's databases: as its server reported it, or, where the
// server could not be asked, as it last answered, or else (or where it did not report it) the
// figure status (t's status.usage) already has. It also
// counts the databases whose server answered without them (the administrator may not measure
// them).
func databases(t *tenancyv1alpha1.Tenant, status *tenancyv1alpha1.TenantUsage, sizes serverSizes) (out []tenancyv1alpha1.DatabaseUsage, unmeasured int) {
	for _, d := range t.Status.Databases {
		u := tenancyv1alpha1.DatabaseUsage{Engine: d.Engine, Name: d.Name}
		reported, answered := sizes.byServer[d.Server]
		bytes, ok := reported[d.Database]
		if answered && !ok {
			unmeasured++
		}
		if !answered {
			// What the server last answered, which the status may not show yet.
			bytes, ok = sizes.last[d.Server][d.Database]
		}
		if ok {
			u.Bytes = bytes
		} else if last := lastFigure(status, d); last != nil {
			u.Bytes = last.Bytes
		} else {
			continue
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b tenancyv1alpha1.DatabaseUsage) int {
		return cmp.Or(cmp.Compare(a.Engine, b.Engine), cmp.Compare(a.Name, b.Name))
	})
	return out, unmeasured
}

func lastFigure(status *tenancyv1alpha1.TenantUsage, d tenancyv1alpha1.DatabaseStatus) *tenancyv1alpha1.DatabaseUsage {
	if status == nil {
		return nil
	}
	for i, u := range status.Databases {
		if u.Engine == d.Engine && u.Name == d.Name {
			return &status.Databases[i]
		}
	}
	return nil
}

// same reports whether a sample's figures are those of the status (the time aside); what pods
// use is the same within usedTolerance.
func same(status, sample *tenancyv1alpha1.TenantUsage) bool {
	if status == nil {
		return false
	}
	return equality.Semantic.DeepEqual(status.Resources, sample.Resources) &&
		closeEnough(status.Used, sample.Used) &&
		equality.Semantic.DeepEqual(status.Databases, sample.Databases)
}

// usedTolerance is how far what pods use may move and leave a tenant's status as it is: the
// larger of a share of the figure and a floor, per resource. A rate measured over seconds moves
// at every sample; without it, every tenant with a pod would be written every interval.
var usedTolerance = map[corev1.ResourceName]struct {
	percent int64
	floor   resource.Quantity
}{
	corev1.ResourceCPU:    {5, resource.MustParse("10m")},
	corev1.ResourceMemory: {5, resource.MustParse("16Mi")},
}

// closeEnough reports whether was and now hold the same resources, each within usedTolerance
// of was (exactly, for a resource it does not name).
func closeEnough(was, now corev1.ResourceList) bool {
	if len(was) != len(now) || (was == nil) != (now == nil) {
		return false
	}
	for name, w := range was {
		n, ok := now[name]
		if !ok {
			return false
		}
		tol, ok := usedTolerance[name]
		if !ok {
			if w.Cmp(n) != 0 {
				return false
			}
			continue
		}
		diff := max(n.MilliValue()-w.MilliValue(), w.MilliValue()-n.MilliValue())
		if diff > max(w.MilliValue()*tol.percent/100, tol.floor.MilliValue()) {
			return false
		}
	}
	return true
}
