package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The exit codes `landlordctl --help` and docs/cli.md document: 0 when the command did what it
// says, 2 for a command line that cannot work (with the way to the help), 1 for everything else.
// None of these reaches a cluster.
func TestExitCodesTellAWrongCommandLineFromAFailure(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"help succeeds", []string{"--help"}, exitOK, ""},
		{"the client's version succeeds", []string{"version", "--client"}, exitOK, ""},
		{"an unknown command is a usage error", []string{"tenants"}, exitUsage, `unknown command "tenants" for "landlordctl"`},
		{"an unknown subcommand is a usage error, not the group's help", []string{"secrets", "show"}, exitUsage, `unknown command "show" for "landlordctl secrets"`},
		{"a misspelled command suggests the right one", []string{"staus"}, exitUsage, "did you mean status?"},
		{"an unknown flag is a usage error", []string{"get", "tenants", "--colour"}, exitUsage, "unknown flag: --colour"},
		{"a missing argument says what the command wants", []string{"describe"}, exitUsage, "describe wants KIND [NAME...]; got no arguments"},
		{"an extra argument says what it got", []string{"status", "acme", "globex"}, exitUsage, "status wants TENANT; got 2 arguments: acme globex"},
		{"an unknown kind is a usage error", []string{"get", "tenats"}, exitUsage, `unknown kind "tenats"`},
		{"an unknown output format is a usage error", []string{"get", "tenants", "-o", "xml"}, exitUsage, "xml"},
		{"a missing required flag is a usage error", []string{"claim", "--pool", "standard"}, exitUsage, `required flag(s) "email", "org" not set`},
		{"a command that fails exits 1", []string{"template", "render", "-f", missing}, exitError, "missing.yaml"},
		{"a kubeconfig that cannot be read exits 1", []string{"get", "tenants", "--kubeconfig", missing}, exitError, "missing.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(binaryName, tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if hint := "Run 'landlordctl "; (code == exitUsage) != strings.Contains(stderr.String(), hint) {
				t.Errorf("a usage error, and only a usage error, says where the help is; stderr:\n%s", stderr.String())
			}
		})
	}
}

func TestTheRootHelpEndsWithTheExitCodes(t *testing.T) {
	out, _, err := run(t, binaryName, "--help")
	if err != nil || !strings.HasSuffix(out, exitCodesHelp+"\n") {
		t.Errorf("err=%v help:\n%s", err, out)
	}
	out, _, err = run(t, binaryName, "get", "--help")
	if err != nil || strings.Contains(out, "Exit codes:") {
		t.Errorf("a command's help leaves the exit codes to the root's: err=%v\n%s", err, out)
	}
}
