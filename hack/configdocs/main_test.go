package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed configuration reference in docs/configuration.md is what the generator writes
// from internal/config's fields and defaults: a field added, renamed or given a new default
// without `make config-docs` fails here.
func TestTheConfigurationReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	table, err := reference(filepath.Join(root, "internal", "config"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := splice(committed, table)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatal("docs/configuration.md's reference is stale: run 'make config-docs' and commit it")
	}
	for _, want := range []string{
		"| `namespacePrefix` | string | `\"tenant-\"` |",
		"| `secrets.maxDeletionPercent` | int | `25` |",
		"| `secrets.store.timeout` | duration | `1m0s` |",
		"| `controller.identity` | string | `\"system:serviceaccount:landlord-system:landlord-controller-manager\"` |",
	} {
		if !strings.Contains(string(table), want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
}
