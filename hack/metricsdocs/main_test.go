package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed metrics reference in docs/metrics.md is what the generator writes from the
// collectors the operator registers: a metric added, renamed, relabelled or re-described without
// `make metrics-docs` fails here.
func TestTheMetricsReferenceIsCurrent(t *testing.T) {
	table, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join("..", "..", "docs", "metrics.md")
	committed, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	got, err := splice(committed, table)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatal("docs/metrics.md's reference is stale: run 'make metrics-docs' and commit it")
	}
	// One metric of each way of registering: in an init, at the operator's package's
	// initialization, and computed at scrape time (which only describes itself).
	for _, want := range []string{
		"| `landlord_drift_repairs_total` | counter | `kind` |",
		"| `landlord_build_info` | gauge | `version`, `commit`, `go_version` |",
		"| `landlord_database_operation_duration_seconds` | histogram | `server`, `engine`, `operation` |",
		"| `landlord_tenants` | gauge | `state`, `ready`, `reason`, `stalled`, `suspended`, `shard` |",
		"| `landlord_rollout_max_failures` | gauge | `rollout`, `component`, `version` |",
	} {
		if !strings.Contains(string(table), want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
}
