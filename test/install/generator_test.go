package install_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// chartSources copies what hack/chart reads and writes into a fresh root.
func chartSources(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"config", filepath.Join("hack", "chart"), filepath.Join("charts", "landlord")} {
		if err := os.CopyFS(filepath.Join(dir, d), os.DirFS(filepath.Join(root, d))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func generateChart(t *testing.T, dir string) {
	t.Helper()
	run(t, nil, "go", "run", "./hack/chart", "-root", dir)
}

// files are a directory's files by relative path, with their content.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTheChartIsGeneratedFromConfig(t *testing.T) {
	t.Run("generating from config/ as it is reproduces the committed chart", func(t *testing.T) {
		dir := chartSources(t)
		generateChart(t, dir)
		if diff := cmp.Diff(files(t, filepath.Join(root, "charts", "landlord")), files(t, filepath.Join(dir, "charts", "landlord"))); diff != "" {
			t.Errorf("charts/landlord is stale: run 'make chart' (committed -, generated +):\n%s", diff)
		}
	})

	t.Run("the metrics Service is always in the chart and config/prometheus's objects only when switched on, as written", func(t *testing.T) {
		chart := filepath.Join(root, "charts", "landlord")
		off := byKey(t, render(t, chart))
		if _, ok := off["Service/landlord-system/landlord-controller-manager-metrics"]; !ok {
			t.Error("the metrics Service is not rendered")
		}
		shipped := map[string]object{}
		for _, file := range []string{"scraper.yaml", "monitor.yaml", "rules.yaml"} {
			data, err := os.ReadFile(filepath.Join(root, "config", "prometheus", file))
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range decode(t, string(data)) {
				shipped[key(obj)] = obj
			}
		}
		if len(shipped) != 5 {
			t.Fatalf("config/prometheus holds %d objects, want a ServiceMonitor, the ServiceAccount, token Secret and binding it scrapes with, and a PrometheusRule", len(shipped))
		}
		for k := range shipped {
			if _, ok := off[k]; ok {
				t.Errorf("%s is rendered though its value is off", k)
			}
		}

		on := byKey(t, render(t, chart, "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true", "metrics.prometheusRule.labels.release=prom"))
		for k, want := range shipped {
			got, ok := on[k]
			if !ok {
				t.Errorf("%s is not rendered when switched on", k)
				continue
			}
			// Prometheus's own template text ({{ $labels.server }}) reaches Prometheus as
			// written, not run by Helm nor split by the generator's line folding.
			for _, f := range []string{"roleRef", "subjects", "type"} {
				if diff := cmp.Diff(want[f], got[f]); diff != "" {
					t.Errorf("%s's %s differs from config/prometheus (shipped -, chart +):\n%s", k, f, diff)
				}
			}
			if diff := cmp.Diff(field(want, "spec"), field(got, "spec")); diff != "" {
				t.Errorf("%s's spec differs from config/prometheus (shipped -, chart +):\n%s", k, diff)
			}
		}
		for k, obj := range on {
			if strings.HasPrefix(k, "PrometheusRule/") && field(obj, "metadata", "labels", "release") != "prom" {
				t.Errorf("%s's labels %v lack metrics.prometheusRule.labels", k, field(obj, "metadata", "labels"))
			}
		}
	})
}
