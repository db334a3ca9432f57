package shipped_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/landlord-dev/landlord/test/shipped"
)

func TestMetricNames(t *testing.T) {
	cases := map[string]struct {
		expr string
		want []string
	}{
		"a bare selector names its metric": {
			expr: `landlord_tenants`, want: []string{"landlord_tenants"},
		},
		"both sides of a binary operation are found, once each": {
			expr: `sum(landlord_tenants{ready="True"}) / sum(landlord_tenants)`, want: []string{"landlord_tenants"},
		},
		"a histogram quantile names the bucket series, and Grafana's variables parse": {
			expr: `histogram_quantile(0.99, sum by (le) (rate(landlord_database_operation_duration_seconds_bucket{cluster=~"$cluster", namespace=~"$namespace"}[$__rate_interval])))`,
			want: []string{"landlord_database_operation_duration_seconds_bucket"},
		},
		"label names, label values and function names are not metrics": {
			expr: `max by (pool) (landlord_pool_spares_ready{pool="rate"}) < max by (pool) (landlord_pool_spares_desired)`,
			want: []string{"landlord_pool_spares_desired", "landlord_pool_spares_ready"},
		},
		"absent() of a comparison names the compared metric": {
			expr: `absent(up{namespace="landlord-system"} == 1)`, want: []string{"up"},
		},
		"a metric named by the __name__ matcher is found": {
			expr: `{__name__="go_goroutines"}`, want: []string{"go_goroutines"},
		},
		"time() and numbers name nothing beside the metric": {
			expr: `time() - max(landlord_secret_store_last_sync_success_timestamp_seconds) > 3600`,
			want: []string{"landlord_secret_store_last_sync_success_timestamp_seconds"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := shipped.MetricNames(tc.expr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
	t.Run("an expression that is not PromQL is an error", func(t *testing.T) {
		_, err := shipped.MetricNames(`sum(landlord_tenants`)
		NewWithT(t).Expect(err).To(HaveOccurred())
	})
}

func TestExported(t *testing.T) {
	families := []*dto.MetricFamily{
		{Name: proto.String("landlord_tenants"), Type: dto.MetricType_GAUGE.Enum()},
		{Name: proto.String("landlord_claim_bind_seconds"), Type: dto.MetricType_HISTOGRAM.Enum()},
	}
	cases := map[string]bool{
		"landlord_tenants":                   true,
		"landlord_claim_bind_seconds_bucket": true,
		"landlord_claim_bind_seconds_sum":    true,
		"landlord_claim_bind_seconds_count":  true,
		"up":                                 true,
		// A histogram's base name is no series of its own, nor a gauge's _count.
		"landlord_claim_bind_seconds": false,
		"landlord_tenants_count":      false,
		"landlord_tenant":             false,
	}
	for name, want := range cases {
		verdict := map[bool]string{true: "is", false: "is not"}[want]
		t.Run(name+" "+verdict+" exported", func(t *testing.T) {
			NewWithT(t).Expect(shipped.Exported(name, families)).To(Equal(want))
		})
	}
}

func TestShippedExpressionsParse(t *testing.T) {
	g := NewWithT(t)
	dashboard, err := shipped.DashboardExpressions()
	g.Expect(err).NotTo(HaveOccurred())
	rules, err := shipped.RuleExpressions()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(dashboard)).To(BeNumerically(">=", 30), "the dashboard's queries were not all read")
	g.Expect(rules).To(HaveKey("LandlordOperatorDown"))
	g.Expect(rules).To(HaveLen(18))
	for _, expr := range dashboard {
		names, err := shipped.MetricNames(expr)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(names).NotTo(BeEmpty(), "query %q names no metric", expr)
	}
	for alert, expr := range rules {
		names, err := shipped.MetricNames(expr)
		g.Expect(err).NotTo(HaveOccurred(), alert)
		g.Expect(names).NotTo(BeEmpty(), "alert %s names no metric", alert)
	}
}

// The dashboard is read per cluster and per operator namespace, as a fleet of clusters feeding
// one Prometheus (or Thanos, Mimir) needs: every query selects both variables, and none the
// name of a scrape job, which each Prometheus setup names its own way.
func TestEveryDashboardQuerySelectsTheClusterAndNamespace(t *testing.T) {
	exprs, err := shipped.DashboardExpressions()
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range exprs {
		if strings.HasPrefix(expr, "landlord_build_info") {
			continue // the variables' own queries
		}
		t.Run(expr, func(t *testing.T) {
			names, err := shipped.MetricNames(expr)
			if err != nil {
				t.Fatal(err)
			}
			want := len(names)
			if n := strings.Count(expr, `cluster=~"$cluster", namespace=~"$namespace"`); n < want {
				t.Errorf("%d selectors of %d select cluster and namespace", n, want)
			}
			if strings.Contains(expr, "job") {
				t.Error("selects a scrape job")
			}
		})
	}
}
