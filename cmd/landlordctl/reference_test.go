package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/landlord-dev/landlord/test/testenv"
)

// docs/cli.md is every command's help, written from the commands themselves: a flag or command
// added, or help changed, fails here until the reference is regenerated (make cli-docs, which
// runs this test with -update).
func TestTheCLIReferenceIsWhatTheCommandsSay(t *testing.T) {
	// The configuration flag's default is the environment's; the reference says what it is without.
	t.Setenv("LANDLORD_CONFIG", "")
	var out bytes.Buffer
	if err := writeReference(&out, newRootCommand(&bytes.Buffer{})); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, out.String(), filepath.Join(testenv.RepoRoot(), referencePath))
}
