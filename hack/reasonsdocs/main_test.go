package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed reasons reference in docs/reasons.md is what the generator writes from the
// constants of api/v1alpha1 and the event recorders' calls under internal/: a reason added,
// renamed or re-described without `make reasons-docs` fails here, as does an event recorded with
// a literal reason, which no comment explains.
func TestTheReasonsReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	table, err := reference(root)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, "docs", "reasons.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := splice(committed, table)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatal("docs/reasons.md's reference is stale: run 'make reasons-docs' and commit it")
	}
	// A condition type, a condition reason, an event reason named by a constant of another
	// package, one of the recording package's own, and one only the refusal a call passes on
	// names.
	for _, want := range []string{
		"| `Stalled` | `v1alpha1.StalledCondition` | Present only while true;",
		"| `OwnershipConflict` | `v1alpha1.ReasonOwnershipConflict` |",
		"| `DomainHandover` | Normal | `internal/controller/tenant/domains` |",
		"| `DriftRepaired` | Warning | `internal/controller/writes` |",
		"| `ForeignSecret` | Warning | `internal/templatesync` |",
		"[ForeignSecret](troubleshooting.md#foreignsecret)",
	} {
		if !strings.Contains(string(table), want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
}

// A literal reason fails the generator, naming where it is.
func TestALiteralEventReasonIsRefused(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "internal", "thing")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	src := `package thing

func record(r recorder) { r.Eventf(nil, nil, "Normal", "Done", "Do", "%s", "it") }
`
	if err := os.WriteFile(filepath.Join(pkg, "thing.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &scan{root: dir, consts: map[string]map[string]constant{}}
	_, _, err := s.events()
	if err == nil || !strings.Contains(err.Error(), `"Done" is a literal`) || !strings.Contains(err.Error(), "thing.go:3") {
		t.Fatalf("got %v, want the literal reason refused at thing.go:3", err)
	}
}
