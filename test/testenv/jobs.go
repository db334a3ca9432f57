package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/localcluster"
)

// The images whose Jobs the local cluster really runs under Options.RunJobs (localcluster's
// Options.Images): their programs are built from this tree once per test process.
const (
	// BackupImage is Landlord's backup image (backups.image): its entrypoint is the landlord
	// binary, so a container with args [job, --plan, FILE] runs `landlord job --plan FILE`,
	// with this machine's PostgreSQL and MariaDB client tools on its PATH. Args that do not
	// begin with job fail the pod.
	BackupImage = "registry.invalid/landlord/backup:test"
	// MigratorImage runs test/migrator: a container with args [PREFIX, STATEMENT...] runs
	// the statements against the database of its environment's PREFIX_URL.
	MigratorImage = "registry.invalid/landlord/migrator:test"
)

// jobPrograms are the built programs, shared by the environments of the process that run Jobs,
// and removed when the last of them stops.
var jobPrograms struct {
	sync.Mutex
	dir    string
	users  int
	images map[string]localcluster.Program
}

// JobImages builds the programs of BackupImage and MigratorImage (go build, from the build
// cache when the tests built the same packages), once for the environments of the process
// that run Jobs; release removes them when the last such environment stops.
func JobImages() (images map[string]localcluster.Program, release func() error, err error) {
	p := &jobPrograms
	p.Lock()
	defer p.Unlock()
	if p.users == 0 {
		dir, err := os.MkdirTemp("", "landlord-job-programs-")
		if err != nil {
			return nil, nil, err
		}
		built := map[string]string{"landlord": "./cmd/landlord", "migrator": "./test/migrator"}
		errs := make(chan error, len(built))
		for name, pkg := range built {
			go func() { errs <- goBuild(filepath.Join(dir, name), pkg) }()
		}
		var all []error
		for range built {
			all = append(all, <-errs)
		}
		if err := errors.Join(all...); err != nil {
			_ = os.RemoveAll(dir)
			return nil, nil, err
		}
		p.dir = dir
		p.images = map[string]localcluster.Program{
			BackupImage: {
				Entrypoint: filepath.Join(dir, "landlord"),
				// The binary is the operator too: its Jobs run `landlord job` alone.
				Args: []string{"job"},
				// The image holds the client tools; here they are this machine's.
				Env: map[string]string{"PATH": localcluster.HostPath(backup.ToolNames...)},
			},
			MigratorImage: {Entrypoint: filepath.Join(dir, "migrator")},
		}
	}
	p.users++
	var once sync.Once
	release = func() error {
		var err error
		once.Do(func() {
			p.Lock()
			defer p.Unlock()
			if p.users--; p.users == 0 {
				err = os.RemoveAll(p.dir)
				p.dir, p.images = "", nil
			}
		})
		return err
	}
	return p.images, release, nil
}

// goBuild builds a package of this tree with the go command's default flags, which the tests'
// own builds share in the build cache.
func goBuild(out, pkg string) error {
	build := exec.Command("go", "build", "-o", out, pkg)
	build.Dir = RepoRoot()
	if output, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, output)
	}
	return nil
}
