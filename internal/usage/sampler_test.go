package usage

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	"k8s.io/utils/ptr"

	"github.com/go-logr/logr"
	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
)

func TestDatabasesKeepTheirLastFigureWhereTheServerCouldNotBeAsked(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{
		Databases: []tenancyv1alpha1.DatabaseStatus{
			{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg", Database: "t_acme_app"},
			{Engine: tenancyv1alpha1.EngineMySQL, Name: "legacy", Server: "my", Database: "t_acme_legacy"},
			{Engine: tenancyv1alpha1.EnginePostgres, Name: "new", Server: "down", Database: "t_acme_new"},
		},
		Usage: &tenancyv1alpha1.TenantUsage{Databases: []tenancyv1alpha1.DatabaseUsage{
			{Engine: tenancyv1alpha1.EngineMySQL, Name: "legacy", Bytes: 700},
			{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Bytes: 100},
		}},
	}}
	sizes := serverSizes{
		byServer: map[string]map[string]int64{"pg": {"t_acme_app": 150, "t_other_app": 9}},
		failed:   map[string]bool{"my": true, "down": true},
	}
	got, unmeasured := databases(tenant, tenant.Status.Usage, sizes)
	if unmeasured != 0 {
		t.Errorf("%d databases counted unmeasured; every server that answered reported its database", unmeasured)
	}
	want := []tenancyv1alpha1.DatabaseUsage{
		// Listed by engine, then name.
		{Engine: tenancyv1alpha1.EngineMySQL, Name: "legacy", Bytes: 700},
		{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Bytes: 150},
	}
	if len(got) != len(want) {
		t.Fatalf("databases = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("databases[%d] = %+v, want %+v (a server that failed keeps the last figure; a database never measured is left out)", i, got[i], want[i])
		}
	}
}

func TestADatabaseItsServerDidNotReportIsCounted(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{
		Databases: []tenancyv1alpha1.DatabaseStatus{{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg", Database: "t_acme_app"}},
		Usage:     &tenancyv1alpha1.TenantUsage{Databases: []tenancyv1alpha1.DatabaseUsage{{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Bytes: 100}}},
	}}
	got, unmeasured := databases(tenant, tenant.Status.Usage, serverSizes{byServer: map[string]map[string]int64{"pg": {}}})
	if unmeasured != 1 || len(got) != 1 || got[0].Bytes != 100 {
		t.Errorf("databases = %+v, %d unmeasured; want the last figure kept, and 1 unmeasured", got, unmeasured)
	}
}

func TestTheSamplerCoversTheTenantsItsShardWrites(t *testing.T) {
	reconciled := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue}}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		shard  string
		tenant tenancyv1alpha1.Tenant
		want   bool
	}{
		{"an Active tenant of the default shard is sampled", "", tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, true},
		{"an Archived tenant is sampled: its databases are kept", "", tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{State: tenancyv1alpha1.StateArchived}, Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, true},
		{"a Purged tenant is sampled, to nothing: what it used is gone", "", tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{State: tenancyv1alpha1.StatePurged}, Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, true},
		{"a suspended tenant is not: nothing of it is written", "", tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{Suspend: true}, Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, false},
		{"a tenant being deleted is not", "", tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, false},
		{"a tenant never reconciled is not yet", "", tenancyv1alpha1.Tenant{}, false},
		{"another shard's tenant is not", "", tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Shard: "b", Conditions: reconciled}}, false},
		{"a shard samples its own", "b", tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Shard: "b", Conditions: reconciled}}, true},
		{"a tenant being handed over is not", "b", tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Shard: "b", HandoverTo: ptr.To("c"), Conditions: reconciled}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Sampler{Shard: tc.shard}
			if got := s.covers(&tc.tenant); got != tc.want {
				t.Errorf("covers = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWhatATenantsPodsUseFollowsWhatTheMetricsAPIAnswered(t *testing.T) {
	last := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	tenant := &tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Usage: &tenancyv1alpha1.TenantUsage{Used: last}}}
	reported := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("200Mi")}
	twoPods := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}
	noPod := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	served := func(byNamespace map[string]corev1.ResourceList) podUsage {
		return podUsage{served: true, byNamespace: byNamespace}
	}
	for _, tc := range []struct {
		name         string
		pods         podUsage
		namespace    string
		counted      corev1.ResourceList
		want         corev1.ResourceList
		wantMeasured bool
	}{
		{"a cluster with no metrics API records nothing", podUsage{}, "tenant-acme", twoPods, nil, true},
		{"the first sample to find the API gone leaves the last figures", podUsage{gone: true}, "tenant-acme", twoPods, last, true},
		{"a metrics API that did not answer leaves the last figures, unmeasured", podUsage{served: true, failed: true}, "tenant-acme", twoPods, last, false},
		{"a namespace the API reports takes its figures", served(map[string]corev1.ResourceList{"tenant-acme": reported}), "tenant-acme", twoPods, reported, true},
		{"pods the quota counts but the API did not report leave the last figures, unmeasured", served(map[string]corev1.ResourceList{"tenant-other": reported}), "tenant-acme", twoPods, last, false},
		{"a namespace with no pod uses nothing", served(map[string]corev1.ResourceList{"tenant-other": reported}), "tenant-acme", noPod, used(0, 0), true},
		{"a tenant without a namespace uses nothing", served(map[string]corev1.ResourceList{"tenant-other": reported}), "", nil, used(0, 0), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, measured := tc.pods.of(tenant.Status.Usage, tc.namespace, tc.counted)
			if !equality.Semantic.DeepEqual(got, tc.want) || measured != tc.wantMeasured {
				t.Errorf("used = %v (measured %v), want %v (measured %v)", got, measured, tc.want, tc.wantMeasured)
			}
		})
	}
}

func TestWhatPodsUseIsWrittenOnlyWhenItMovesBeyondItsTolerance(t *testing.T) {
	list := func(cpu, memory string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	}
	for _, tc := range []struct {
		name     string
		was, now corev1.ResourceList
		same     bool
	}{
		{"the same figures are the same", list("300m", "200Mi"), list("300m", "200Mi"), true},
		{"CPU within 10m of a small figure is the same", list("100m", "200Mi"), list("110m", "200Mi"), true},
		{"CPU 11m off a small figure is not", list("100m", "200Mi"), list("111m", "200Mi"), false},
		{"CPU within 5% of a large figure is the same", list("4", "200Mi"), list("4200m", "200Mi"), true},
		{"CPU 6% off a large figure is not", list("4", "200Mi"), list("4240m", "200Mi"), false},
		{"memory within 16Mi is the same", list("1", "100Mi"), list("1", "116Mi"), true},
		{"memory 17Mi off a small figure is not", list("1", "100Mi"), list("1", "83Mi"), false},
		{"memory within 5% of a large figure is the same", list("1", "10Gi"), list("1", "10500Mi"), true},
		{"measured where nothing was is not the same", nil, list("0", "0"), false},
		{"nothing where something was measured is not the same", list("0", "0"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := closeEnough(tc.was, tc.now); got != tc.same {
				t.Errorf("closeEnough(%v, %v) = %v, want %v", tc.was, tc.now, got, tc.same)
			}
		})
	}
}

func TestTheMetricsAPIsFiguresAreSummedByNamespaceAndRounded(t *testing.T) {
	container := func(cpu, memory string) metricsv1beta1.ContainerMetrics {
		return metricsv1beta1.ContainerMetrics{Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}
	}
	pod := func(ns, name string, containers ...metricsv1beta1.ContainerMetrics) *metricsv1beta1.PodMetrics {
		return &metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Containers: containers}
	}
	cs := metricsfake.NewSimpleClientset()
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &metricsv1beta1.PodMetricsList{Items: []metricsv1beta1.PodMetrics{
			// 149.6m + 150.3m + 0.2m = 300.1m; 100Mi + 100Mi + 300KiB (under half a MiB).
			*pod("tenant-a", "web-1", container("149600000n", "100Mi"), container("200000n", "300Ki")),
			*pod("tenant-a", "web-2", container("150300000n", "100Mi")),
			*pod("tenant-b", "db-0", container("1", "1Gi")),
		}}, nil
	})
	got, served, err := MetricsAPI{Client: cs}.Used(context.Background())
	if err != nil || !served {
		t.Fatalf("Used: served=%v, %v", served, err)
	}
	for ns, want := range map[string]corev1.ResourceList{"tenant-a": used(300_100_000, 200<<20), "tenant-b": used(1_000_000_000, 1<<30)} {
		if !equality.Semantic.DeepEqual(got[ns], want) {
			t.Errorf("%s uses %v, want %v", ns, got[ns], want)
		}
	}
	if cpu := got["tenant-a"][corev1.ResourceCPU]; cpu.String() != "300m" {
		t.Errorf("tenant-a's CPU is %s, want 300m (to the millicore)", cpu.String())
	}

	t.Run("a cluster that serves no metrics API is no error", func(t *testing.T) {
		cs := metricsfake.NewSimpleClientset()
		cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, "")
		})
		if _, served, err := (MetricsAPI{Client: cs}).Used(context.Background()); served || err != nil {
			t.Errorf("Used: served=%v, %v; want not served, no error", served, err)
		}
	})
	t.Run("a metrics API that does not answer is an error", func(t *testing.T) {
		cs := metricsfake.NewSimpleClientset()
		cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("the metrics API is unavailable")
		})
		if _, _, err := (MetricsAPI{Client: cs}).Used(context.Background()); err == nil {
			t.Error("Used: no error")
		}
	})
}

// notServed is a metrics API answering that the cluster serves none.
type notServed struct{}

func (notServed) Used(context.Context) (map[string]corev1.ResourceList, bool, error) {
	return nil, false, nil
}

func TestOneAnswerThatThereIsNoMetricsAPIDoesNotClearTheFleetsFigures(t *testing.T) {
	s := &Sampler{PodMetrics: notServed{}}
	if first := s.podsUsed(context.Background(), logr.Discard()); !first.gone {
		t.Errorf("the first sample without the API = %+v, want the figures kept (gone)", first)
	}
	if second := s.podsUsed(context.Background(), logr.Discard()); second.gone || second.served {
		t.Errorf("the second sample in a row without the API = %+v, want the figures cleared", second)
	}
}

// sizing is a provisioner whose Sizes alone is answered, by sizes.
type sizing struct {
	database.Provisioner
	sizes func(ctx context.Context) (map[string]int64, error)
}

func (s sizing) Sizes(ctx context.Context) (map[string]int64, error) { return s.sizes(ctx) }

type sizingServers map[string]sizing

func (s sizingServers) Provisioner(_ context.Context, name string) (database.Provisioner, error) {
	return s[name], nil
}

// A server that does not answer must not hold the others: they are asked beside it, each within
// its own timeout. The hung server here answers only once the other one has been asked, which
// servers asked one after the other never do before its timeout.
func TestAServerThatDoesNotAnswerHoldsNoOtherServer(t *testing.T) {
	asked := make(chan struct{})
	released := false
	servers := sizingServers{
		"a-hung": {sizes: func(ctx context.Context) (map[string]int64, error) {
			select {
			case <-asked:
				released = true
				return nil, errors.New("hung")
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}},
		"b-up": {sizes: func(context.Context) (map[string]int64, error) {
			close(asked)
			return map[string]int64{"t_acme_app": 42}, nil
		}},
	}
	s := &Sampler{Provisioners: servers, Timeout: 5 * time.Second}
	got := s.sizes(context.Background(), logr.Discard(), map[string]bool{"a-hung": true, "b-up": true})
	if !released {
		t.Error("the hung server was asked alone: the other server waited for its timeout")
	}
	if got.byServer["b-up"]["t_acme_app"] != 42 || !got.failed["a-hung"] {
		t.Errorf("sizes = %+v, want b-up's figures and a-hung failed", got)
	}
}

// A server that cannot be asked leaves its databases at what it last answered, even where the
// tenant's status, read from the operator's cache, does not show the last sample's write yet: the
// database used to drop out of the tenant's usage for one sample.
func TestAServerThatCannotBeAskedLeavesWhatItLastAnswered(t *testing.T) {
	up := true
	servers := sizingServers{"pg": {sizes: func(context.Context) (map[string]int64, error) {
		if up {
			return map[string]int64{"t_acme_app": 150}, nil
		}
		return nil, errors.New("connection refused")
	}}}
	s := &Sampler{Provisioners: servers, Timeout: time.Second}
	asked := map[string]bool{"pg": true}
	s.sizes(context.Background(), logr.Discard(), asked)
	up = false
	sizes := s.sizes(context.Background(), logr.Discard(), asked)
	tenant := &tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Databases: []tenancyv1alpha1.DatabaseStatus{
		{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg", Database: "t_acme_app"},
	}}}
	got, _ := databases(tenant, nil, sizes)
	if len(got) != 1 || got[0].Bytes != 150 {
		t.Errorf("databases = %+v, want app at the 150 bytes the server last answered", got)
	}
	if !sizes.failed["pg"] {
		t.Error("the server that could not be asked is not counted failed")
	}
}
