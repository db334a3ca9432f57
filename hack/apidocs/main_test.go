package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed docs/api.md is what the generator writes from the committed CRDs, and names
// every kind and every field the reader may meet.
func TestTheAPIReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	got, err := generate(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatal("docs/api.md is stale: run 'make api-docs' and commit it")
	}
	for _, want := range []string{
		"## Tenant\n", "## TenantPool\n", "## TenantClaim\n", "## DatabaseServer\n", "## ComponentTemplate\n",
		"| `spec.components[].version` | string, required |",
		"spec.purgeConfirmation must equal the tenant's name to purge it",
		"| `spec.state` | string | `\"Active\"` | one of `\"Active\"`, `\"Frozen\"`, `\"Archived\"`, `\"Purged\"`",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
}
