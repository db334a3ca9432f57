// Package alerts runs unit tests of Landlord's alerting rules the way promtool's `test rules`
// does, with Prometheus's own rule manager and PromQL engine: series in, alerts out, evaluated at
// every step of the evaluation interval so that `for` and staleness behave as in a Prometheus
// server. The tests are files in promtool's format (testdata/*.yaml); the rules are the groups of
// a PrometheusRule (config/prometheus/rules.yaml, or the chart's as Helm renders it).
//
// Two differences from promtool: the rules come from a PrometheusRule's spec.groups rather than
// from rule_files, and an expected alert's annotations are compared only for the keys it lists
// (a description is prose; its summary, when listed, is checked).
package alerts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"sigs.k8s.io/yaml"
)

// File is a unit test file in promtool's format.
type File struct {
	// EvaluationInterval is how often the rules are evaluated; 1m when unset.
	EvaluationInterval model.Duration `json:"evaluation_interval,omitempty"`
	Tests              []Group        `json:"tests"`
}

// Group is one scenario: series, and the alerts expected at given times.
type Group struct {
	// Name says what the scenario proves; it names the subtest.
	Name string `json:"name"`
	// Interval is the step between the input series' samples; the evaluation interval when
	// unset.
	Interval    model.Duration `json:"interval,omitempty"`
	InputSeries []Series       `json:"input_series"`
	AlertTests  []AlertTest    `json:"alert_rule_test"`
}

// Series is one input series in promtool's expanding notation ("0+1x30", "1x60 _x10 stale").
type Series struct {
	Series string `json:"series"`
	Values string `json:"values"`
}

// AlertTest is the firing alerts of one name expected at one time; none when ExpAlerts is empty.
type AlertTest struct {
	EvalTime  model.Duration `json:"eval_time"`
	Alertname string         `json:"alertname"`
	ExpAlerts []Alert        `json:"exp_alerts"`
}

// Alert is one expected firing alert: all its labels but alertname, and the annotations to check.
type Alert struct {
	ExpLabels      map[string]string `json:"exp_labels"`
	ExpAnnotations map[string]string `json:"exp_annotations"`
}

// ReadFile reads a test file.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f := &File{}
	if err := yaml.UnmarshalStrict(data, f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.EvaluationInterval == 0 {
		f.EvaluationInterval = model.Duration(time.Minute)
	}
	return f, nil
}

// RuleGroups returns the rule groups of a PrometheusRule manifest as a Prometheus rule file.
func RuleGroups(prometheusRule []byte) ([]byte, error) {
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(prometheusRule, &rule); err != nil {
		return nil, err
	}
	if rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		return nil, fmt.Errorf("not a PrometheusRule with groups (kind %q, %d groups)", rule.Kind, len(rule.Spec.Groups))
	}
	return yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
}

// AlertNames are the names of the alerting rules of a rule file, in order.
func AlertNames(ruleFile []byte) ([]string, error) {
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(ruleFile, &file); err != nil {
		return nil, err
	}
	var names []string
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	return names, nil
}

// Namespace is the operator's namespace in config/, which the scenarios' series are scraped from.
const Namespace = "landlord-system"

// Run runs every scenario of f against the rules of ruleFile, each as a subtest named by its
// Name. With namespace other than Namespace, the scenarios' series are scraped from namespace
// instead, and alerts expected to carry Namespace carry it (a chart rendered into another
// namespace is tested so).
func Run(t *testing.T, ruleFile []byte, f *File, namespace string) {
	t.Helper()
	var rewrite *strings.Replacer
	if namespace != Namespace {
		rewrite = strings.NewReplacer(`namespace="`+Namespace+`"`, `namespace="`+namespace+`"`)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, ruleFile, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, g := range f.Tests {
		t.Run(g.Name, func(t *testing.T) {
			for _, err := range g.run(path, time.Duration(f.EvaluationInterval), rewrite, namespace) {
				t.Error(err)
			}
		})
	}
}

// loadString is the input series in PromQL test notation.
func (g *Group) loadString(interval time.Duration, rewrite *strings.Replacer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "load %s\n", model.Duration(interval))
	for _, s := range g.InputSeries {
		selector := s.Series
		if rewrite != nil {
			selector = rewrite.Replace(selector)
		}
		fmt.Fprintf(&b, "  %s %s\n", selector, s.Values)
	}
	return b.String()
}

// run evaluates the rules from time 0 to the last eval_time, one evaluation interval at a time
// as a Prometheus server does, and compares the firing alerts at each eval_time.
func (g *Group) run(ruleFile string, evalInterval time.Duration, rewrite *strings.Replacer, namespace string) []error {
	interval := time.Duration(g.Interval)
	if interval == 0 {
		interval = evalInterval
	}
	promql := parser.NewParser(parser.Options{})
	suite, err := promqltest.NewLazyLoader(g.loadString(interval, rewrite), promqltest.LazyLoaderOpts{
		EnableAtModifier: true, EnableNegativeOffset: true, Parser: promql,
	})
	if err != nil {
		return []error{err}
	}
	defer suite.Close()
	suite.SubqueryInterval = evalInterval
	manager := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(suite.QueryEngine(), suite.Storage()),
		AppendableV2: suite.Storage(),
		Context:      context.Background(),
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       promslog.NewNopLogger(),
		Parser:       promql,
	})
	groups, errs := manager.LoadGroups(evalInterval, labels.EmptyLabels(), "", nil, false, ruleFile)
	if errs != nil {
		return errs
	}
	byName := map[string][]*rules.AlertingRule{}
	for _, group := range groups {
		for _, r := range group.Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok {
				// As after a restart's restore, so that `for` counts from the first evaluation.
				ar.SetRestored(true)
				byName[ar.Name()] = append(byName[ar.Name()], ar)
			}
		}
	}
	tests := slices.Clone(g.AlertTests)
	slices.SortStableFunc(tests, func(a, b AlertTest) int { return int(a.EvalTime - b.EvalTime) })
	var failures []error
	for _, tc := range tests {
		if len(byName[tc.Alertname]) == 0 {
			failures = append(failures, fmt.Errorf("no alerting rule is named %s", tc.Alertname))
		}
	}
	if len(failures) > 0 || len(tests) == 0 {
		return append(failures, fmt.Errorf("%d alert tests", len(tests)))
	}
	start := time.Unix(0, 0).UTC()
	end := start.Add(time.Duration(tests[len(tests)-1].EvalTime))
	next := 0
	for ts := start; !ts.After(end); ts = ts.Add(evalInterval) {
		var evalErrs []error
		suite.WithSamplesTill(ts, func(err error) {
			if err != nil {
				evalErrs = append(evalErrs, err)
				return
			}
			for _, group := range groups {
				group.Eval(suite.Context(), ts)
				for _, r := range group.Rules() {
					if err := r.LastError(); err != nil {
						evalErrs = append(evalErrs, fmt.Errorf("rule %s at %s: %w", r.Name(), ts.Sub(start), err))
					}
				}
			}
		})
		if len(evalErrs) > 0 {
			return evalErrs
		}
		// An eval_time between two evaluations is judged by the earlier one, as in promtool.
		for next < len(tests) && time.Duration(tests[next].EvalTime) < ts.Add(evalInterval).Sub(start) {
			failures = append(failures, compare(tests[next], byName[tests[next].Alertname], namespace)...)
			next++
		}
	}
	return failures
}

// compare checks the firing alerts of the rules named tc.Alertname against tc's.
func compare(tc AlertTest, named []*rules.AlertingRule, namespace string) []error {
	var got []*rules.Alert
	for _, r := range named {
		for _, a := range r.ActiveAlerts() {
			if a.State == rules.StateFiring {
				got = append(got, a)
			}
		}
	}
	at := time.Duration(tc.EvalTime)
	var errs []error
	matched := make([]bool, len(got))
	for _, want := range tc.ExpAlerts {
		wantLabels := map[string]string{labels.AlertName: tc.Alertname}
		for k, v := range want.ExpLabels {
			if k == "namespace" && v == Namespace {
				v = namespace
			}
			wantLabels[k] = v
		}
		found := -1
		for i, a := range got {
			if !matched[i] && labels.Equal(a.Labels, labels.FromMap(wantLabels)) {
				found = i
				break
			}
		}
		if found < 0 {
			errs = append(errs, fmt.Errorf("at %s: %s%v is not firing; firing: %s", at, tc.Alertname, want.ExpLabels, describe(got)))
			continue
		}
		matched[found] = true
		for k, v := range want.ExpAnnotations {
			if a := got[found].Annotations.Get(k); a != v {
				errs = append(errs, fmt.Errorf("at %s: %s%v annotation %s is %q, want %q", at, tc.Alertname, want.ExpLabels, k, a, v))
			}
		}
	}
	for i, a := range got {
		if !matched[i] {
			errs = append(errs, fmt.Errorf("at %s: %s fires, unexpected: %s", at, tc.Alertname, a.Labels))
		}
	}
	return errs
}

// describe lists alerts by their labels.
func describe(alerts []*rules.Alert) string {
	if len(alerts) == 0 {
		return "none"
	}
	var s []string
	for _, a := range alerts {
		s = append(s, a.Labels.String())
	}
	return strings.Join(s, ", ")
}
