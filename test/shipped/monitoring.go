package shipped

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// DashboardExpressions are the PromQL queries of the Grafana dashboard
// (config/grafana/landlord.json), its variables' included.
func DashboardExpressions() ([]string, error) {
	data, err := os.ReadFile(Path("config", "grafana", "landlord.json"))
	if err != nil {
		return nil, err
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		return nil, err
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			exprs = append(exprs, t.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		// label_values(metric, label) is Grafana's, not PromQL: its metric is what counts.
		if rest, ok := strings.CutPrefix(v.Definition, "label_values("); ok {
			metric, _, _ := strings.Cut(rest, ",")
			exprs = append(exprs, strings.TrimSpace(metric))
		}
	}
	return exprs, nil
}

// RuleExpressions are the expressions of the alerting rules (config/prometheus/rules.yaml), by
// alert name.
func RuleExpressions() (map[string]string, error) {
	data, err := os.ReadFile(Path("config", "prometheus", "rules.yaml"))
	if err != nil {
		return nil, err
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	// Only the fields above are read: the CRD test checks the rest.
	if err := yaml.Unmarshal(data, &rule); err != nil {
		return nil, err
	}
	exprs := map[string]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			exprs[r.Alert] = r.Expr
		}
	}
	return exprs, nil
}

// grafanaVariables stand in for the dashboard's variables, so its queries parse as PromQL.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "5m",
	"$__interval", "1m",
	"$__range", "1h",
	"$cluster", ".*",
	"$namespace", ".*",
)

// MetricNames returns the metric names a PromQL expression selects, sorted and without
// duplicates. Grafana's variables are replaced first.
func MetricNames(expr string) ([]string, error) {
	parsed, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariables.Replace(expr))
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", expr, err)
	}
	var names []string
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			name := vs.Name
			if name == "" {
				// {__name__="x"} names its metric by matcher.
				for _, m := range vs.LabelMatchers {
					if m.Name == "__name__" {
						name = m.Value
					}
				}
			}
			names = append(names, name)
		}
		return nil
	})
	slices.Sort(names)
	return slices.Compact(names), nil
}

// ScrapeSeries are the series Prometheus makes itself for every target, which no exporter
// exports.
var ScrapeSeries = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// Exported reports whether a metric name is one of the gathered families, a histogram's or a
// summary's series (_bucket, _sum, _count) included.
func Exported(name string, families []*dto.MetricFamily) bool {
	if slices.Contains(ScrapeSeries, name) {
		return true
	}
	for _, f := range families {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			if name == f.GetName()+"_bucket" || name == f.GetName()+"_sum" || name == f.GetName()+"_count" {
				return true
			}
		case dto.MetricType_SUMMARY:
			if name == f.GetName()+"_sum" || name == f.GetName()+"_count" {
				return true
			}
		default:
			if name == f.GetName() {
				return true
			}
		}
	}
	return false
}
