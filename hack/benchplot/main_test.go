package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two made-up reports, one with a soak, give a growth plot with its four panels and a soak
// plot, both SVG an XML parser reads to the end.
func TestPlotsAreSVGWithTheirTitles(t *testing.T) {
	dir := t.TempDir()
	small := writeReport(t, dir, "bench-100.json", `{"tenants": 100, "shards": 1, "phases": [
		{"name": "create N tenants until all Ready", "seconds": 9.5},
		{"name": "operator restart until idle", "seconds": 0.4, "operatorRSSMiB": 80, "operatorLiveHeapMiB": 20},
		{"name": "one shared secret change until in all N namespaces", "seconds": 0.3}]}`)
	large := writeReport(t, dir, "bench-1000.json", `{"tenants": 1000, "shards": 1, "phases": [
		{"name": "create N tenants until all Ready", "seconds": 82},
		{"name": "operator restart until idle", "seconds": 1.6, "operatorRSSMiB": 170, "operatorLiveHeapMiB": 39},
		{"name": "one shared secret change until in all N namespaces", "seconds": 2.7}],
		"soak": {"seconds": 180, "operationsPerSecond": 2, "liveHeapSlopeMiBPerHour": 0.5, "samples": [
			{"seconds": 0, "rssMiB": 170, "liveHeapMiB": 39},
			{"seconds": 90, "rssMiB": 175, "liveHeapMiB": 40},
			{"seconds": 180, "rssMiB": 172, "liveHeapMiB": 39.5}]}}`)
	// A sharded run's figures are not plotted against N.
	sharded := writeReport(t, dir, "bench-1000-2-shards.json", `{"tenants": 1000, "shards": 2, "phases": [
		{"name": "create N tenants until all Ready", "seconds": 114}]}`)

	out := filepath.Join(dir, "img")
	written, err := run(out, []string{small, large, sharded}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	growth, soak := filepath.Join(out, "bench-growth.svg"), filepath.Join(out, "bench-soak-1000.svg")
	if strings.Join(written, " ") != growth+" "+soak {
		t.Fatalf("wrote %v, want %s and %s", written, growth, soak)
	}
	for file, titles := range map[string][]string{
		growth: {"Create N tenants until all Ready", "Operator memory at the end of the restart", "Operator restart until idle",
			"One shared secret change until in all N namespaces", "tenants (N)", "linear from N = 100", "live heap, linear from N = 100"},
		soak: {"Operator memory under churn", "1,000 tenants, 2.0 operations/s; live heap trend +0.50 MiB per hour", "minutes", "RSS", "live heap"},
	} {
		svg := wellFormedSVG(t, file)
		for _, title := range titles {
			if !strings.Contains(svg, ">"+title+"<") {
				t.Errorf("%s: no text %q", filepath.Base(file), title)
			}
		}
	}
}

func TestNoGrowthPlotFromOneSize(t *testing.T) {
	dir := t.TempDir()
	only := writeReport(t, dir, "bench-100.json", `{"tenants": 100, "shards": 1, "phases": [
		{"name": "create N tenants until all Ready", "seconds": 9.5},
		{"name": "operator restart until idle", "seconds": 0.4},
		{"name": "one shared secret change until in all N namespaces", "seconds": 0.3}]}`)
	written, err := run(filepath.Join(dir, "img"), []string{only}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 0 {
		t.Errorf("wrote %v from one report without a soak", written)
	}
}

func TestWithCommas(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 100: "100", 1000: "1,000", 2500.4: "2,500", 10000: "10,000", 1234567: "1,234,567", -3000: "-3,000"} {
		if got := withCommas(v); got != want {
			t.Errorf("withCommas(%v) = %q, want %q", v, got, want)
		}
	}
}

func writeReport(t *testing.T, dir, name, content string) string {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// wellFormedSVG reads file to its end as XML, checks its root is an svg element, and returns it.
func wellFormedSVG(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", file, err)
		}
		if start, ok := tok.(xml.StartElement); ok && root == "" {
			root = start.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", file, root)
	}
	return string(data)
}
