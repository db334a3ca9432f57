package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/localcluster"
)

// `landlord job` refuses a plan it cannot carry out with exit code 1 and a message that says
// why and holds none of the plan's passwords; a mistyped flag is a usage error (2). A plan that
// runs is tested with the backup package's, through backup.RunJob.
func TestJobRefusesAPlanItCannotCarryOut(t *testing.T) {
	const password = "s3cr3t-tenant-password"
	plan := func(t *testing.T, body string) string {
		path := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	target := `{"engine": "postgres", "host": "db", "port": 5432, "database": "d", "username": "u", "password": "` + password + `"}`
	for name, tc := range map[string]struct {
		args     func(t *testing.T) []string
		code     int
		messages []string
	}{
		"a job without a plan is refused": {
			args: func(*testing.T) []string { return nil },
			code: 1, messages: []string{"--plan FILE is required"},
		},
		"a plan that cannot be read is refused": {
			args: func(t *testing.T) []string { return []string{"--plan", filepath.Join(t.TempDir(), "missing.json")} },
			code: 1, messages: []string{"reading the plan", "missing.json"},
		},
		"a plan with a field this release does not know is refused": {
			args: func(t *testing.T) []string {
				return []string{"--plan", plan(t, `{"operation": "backup", "compression": "zstd", "databases": [{"name": "app", "target": `+target+`}]}`)}
			},
			code: 1, messages: []string{"is not valid", `unknown field "compression"`},
		},
		"a plan of an unknown operation is refused": {
			args: func(t *testing.T) []string {
				return []string{"--plan", plan(t, `{"operation": "verify", "location": "t/b/", "databases": [{"name": "app", "target": `+target+`}]}`)}
			},
			code: 1, messages: []string{`operation "verify" is none of backup, restore, dump, seal, fetch, load, copy`},
		},
		"a step without the steps' directory is refused": {
			args: func(t *testing.T) []string {
				return []string{"--plan", plan(t, `{"operation": "dump", "databases": [{"name": "app", "target": `+target+`}]}`)}
			},
			code: 1, messages: []string{"the dump step needs the steps' directory"},
		},
		"a databases' step handed the store's key is refused": {
			args: func(t *testing.T) []string {
				return []string{"--plan", plan(t, `{"operation": "load", "tenantKey": "a2V5", "databases": [{"name": "app", "target": `+target+`}]}`), "--dir", t.TempDir()}
			},
			code: 1, messages: []string{"the load step's plan names a store or a key, which this step must not hold"},
		},
		"a plan whose store cannot be opened is refused": {
			args: func(t *testing.T) []string {
				return []string{"--plan", plan(t, `{"operation": "backup", "objects": "ftp://backups", "key": "awskms:///alias/landlord", "location": "t/b/", "databases": [{"name": "app", "target": `+target+`}]}`)}
			},
			code: 1, messages: []string{"backup store", "objects URL"},
		},
		"a mistyped flag is a usage error": {
			args: func(*testing.T) []string { return []string{"--plans", "plan.json"} },
			code: 2, messages: []string{"flag provided but not defined: -plans"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			g.Expect(runJob(tc.args(t), &stdout, &stderr)).To(Equal(tc.code))
			for _, m := range tc.messages {
				g.Expect(stderr.String()).To(ContainSubstring(m))
			}
			g.Expect(stdout.String() + stderr.String()).NotTo(ContainSubstring(password))
		})
	}
}

// make run's embedded cluster runs the configured backup image's Jobs as this binary's
// `landlord job`, and nothing else of it, with the database client tools of this machine on
// their PATH.
func TestTheEmbeddedClusterRunsTheBackupImageAsThisBinary(t *testing.T) {
	none, err := backupImages(config.Backups{})
	if err != nil || none != nil {
		t.Errorf("with no backups.image: %v, %v; want nothing to run", none, err)
	}
	images, err := backupImages(config.Backups{Image: "ghcr.io/landlord-dev/landlord-backup:v1"})
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	prog, ok := images["ghcr.io/landlord-dev/landlord-backup:v1"]
	if !ok || len(images) != 1 || prog.Entrypoint != self {
		t.Fatalf("images %+v, want the backup image run as %s", images, self)
	}
	if !slices.Equal(prog.Args, []string{"job"}) {
		t.Errorf("the backup image runs with args beginning %q, want [job]: this binary is the operator too", prog.Args)
	}
	path := filepath.SplitList(prog.Env["PATH"])
	for _, dir := range filepath.SplitList(localcluster.DefaultPath) {
		if !slices.Contains(path, dir) {
			t.Errorf("PATH %q lacks %s", prog.Env["PATH"], dir)
		}
	}
}
