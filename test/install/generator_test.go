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
	run(t, nil, "go", "run", "./hack/chart", "-root", dir, "-kubectl", kubectlPath(t))
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

	t.Run("a metrics Service in config/default and config/prometheus's objects land in the chart, monitoring switched by values", func(t *testing.T) {
		dir := chartSources(t)
		write := func(path, text string) {
			t.Helper()
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, path), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("config/default/metrics_service.yaml", `apiVersion: v1
kind: Service
metadata:
  name: landlord-controller-manager-metrics
  namespace: landlord-system
  labels: {app.kubernetes.io/name: landlord}
spec:
  ports: [{name: https, port: 8443, targetPort: metrics}]
  selector: {app.kubernetes.io/name: landlord, app.kubernetes.io/component: controller-manager}
`)
		kustomization, err := os.ReadFile(filepath.Join(dir, "config", "default", "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		write("config/default/kustomization.yaml", strings.Replace(string(kustomization), "resources:\n", "resources:\n  - metrics_service.yaml\n", 1))
		write("config/prometheus/kustomization.yaml", "resources: [monitor.yaml, rules.yaml]\n")
		write("config/prometheus/monitor.yaml", `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: landlord, namespace: landlord-system}
spec:
  endpoints: [{port: https, scheme: https}]
  selector: {matchLabels: {app.kubernetes.io/name: landlord}}
`)
		write("config/prometheus/rules.yaml", `apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: landlord, namespace: landlord-system}
spec:
  groups:
    - name: landlord
      rules:
        - alert: LandlordDatabaseErrors
          expr: rate(landlord_database_operations_total{result="error"}[5m]) > 0
          annotations:
            summary: 'Database operations fail on {{ $labels.server }}'
`)
		generateChart(t, dir)
		chart := filepath.Join(dir, "charts", "landlord")

		off := byKey(t, render(t, chart))
		if _, ok := off["Service/landlord-system/landlord-controller-manager-metrics"]; !ok {
			t.Error("the metrics Service is not rendered")
		}
		for _, k := range []string{"ServiceMonitor/landlord-system/landlord", "PrometheusRule/landlord-system/landlord"} {
			if _, ok := off[k]; ok {
				t.Errorf("%s is rendered though its value is off", k)
			}
		}

		on := byKey(t, render(t, chart, "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true", "metrics.prometheusRule.labels.release=prom"))
		if _, ok := on["ServiceMonitor/landlord-system/landlord"]; !ok {
			t.Error("the ServiceMonitor is not rendered when switched on")
		}
		rule, ok := on["PrometheusRule/landlord-system/landlord"]
		if !ok {
			t.Fatal("the PrometheusRule is not rendered when switched on")
		}
		if field(rule, "metadata", "labels", "release") != "prom" {
			t.Errorf("the PrometheusRule's labels %v lack metrics.prometheusRule.labels", field(rule, "metadata", "labels"))
		}
		// Prometheus's own template text reaches Prometheus as written, not run by Helm.
		alert := field(rule, "spec", "groups").([]any)[0].(map[string]any)["rules"].([]any)[0].(map[string]any)
		if summary := field(alert, "annotations", "summary"); summary != "Database operations fail on {{ $labels.server }}" {
			t.Errorf("the alert's summary is %q", summary)
		}
	})
}
