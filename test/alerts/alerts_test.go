package alerts_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/test/alerts"
	"github.com/landlord-dev/landlord/test/shipped"
)

// shippedRules are the rule groups of config/prometheus/rules.yaml.
func shippedRules(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(shipped.Path("config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	groups, err := alerts.RuleGroups(data)
	if err != nil {
		t.Fatal(err)
	}
	return groups
}

// testFiles are the scenario files of testdata, by name.
func testFiles(t *testing.T) map[string]*alerts.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test files in testdata (%v)", err)
	}
	files := map[string]*alerts.File{}
	for _, p := range paths {
		f, err := alerts.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(filepath.Base(p), ".yaml")] = f
	}
	return files
}

// TestTheShippedAlerts runs every scenario of testdata against config/prometheus/rules.yaml:
// series in, the alerts that fire (or none) out.
func TestTheShippedAlerts(t *testing.T) {
	rules := shippedRules(t)
	for name, f := range testFiles(t) {
		t.Run(name, func(t *testing.T) { alerts.Run(t, rules, f, alerts.Namespace) })
	}
}

// TestEveryAlertIsTestedFiringAndQuiet holds every alert to at least one scenario where it fires
// and one where it must not: an alert whose quiet case is untested may page for a working fleet.
func TestEveryAlertIsTestedFiringAndQuiet(t *testing.T) {
	names, err := alerts.AlertNames(shippedRules(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 14 {
		t.Fatalf("read %d alerts from config/prometheus/rules.yaml, want at least 14", len(names))
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, f := range testFiles(t) {
		for _, g := range f.Tests {
			for _, tc := range g.AlertTests {
				if len(tc.ExpAlerts) > 0 {
					fires[tc.Alertname] = true
				} else {
					quiet[tc.Alertname] = true
				}
			}
		}
	}
	for _, name := range names {
		t.Run(name+" is tested firing and quiet", func(t *testing.T) {
			if !fires[name] {
				t.Errorf("no scenario in testdata expects %s to fire", name)
			}
			if !quiet[name] {
				t.Errorf("no scenario in testdata expects %s to stay quiet", name)
			}
		})
	}
	for name := range fires {
		if !slices.Contains(names, name) {
			t.Errorf("testdata expects %s, which config/prometheus/rules.yaml does not define", name)
		}
	}
}
