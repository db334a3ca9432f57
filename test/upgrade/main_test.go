// Package upgrade upgrades a running Landlord with live tenants, as a platform team does: the
// previous release, built from this repository's own history, is installed into the whole local
// cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok nodes) and runs a
// fleet on real PostgreSQL and MariaDB servers; then this checkout is installed over it, with
// `kubectl apply --server-side -f install.yaml` and with `helm upgrade`. The operator is the
// landlord binary of each version, run as the installed ServiceAccount (impersonated, so it holds
// exactly the RBAC its installer grants); kwok runs the Deployment's pod without its image.
//
// What the new operator writes is counted from the API server's own audit log.
package upgrade_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/test/testenv"
)

// previousReleaseFile names the commit of the previous release and what it is called: the
// commit is built from this repository's history.
const previousReleaseFile = "testdata/previous-release"

var (
	root = testenv.RepoRoot()
	// work holds both releases' binaries, kept when a test fails (the previous release's tree is
	// under bin/upgrade, extractRelease).
	work string
	// previous and current are the two releases.
	previous, current release
)

// release is one version of Landlord: its tree (the installers and samples) and its binary.
type release struct {
	name   string
	tree   string
	binary string
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if testenv.Short("the upgrade test") {
		return 0
	}
	var err error
	if work, err = os.MkdirTemp("", "landlord-upgrade-"); err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		return 1
	}
	code := 1
	defer func() {
		if code == 0 {
			_ = os.RemoveAll(work)
		} else {
			fmt.Fprintln(os.Stderr, "upgrade: both releases' binaries, the clusters' logs and every operator's log are kept in", work)
		}
	}()
	if err := prepareReleases(); err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		return code
	}
	code = m.Run()
	return code
}

// prepareReleases extracts the previous release's tree from git and builds both binaries at
// once: the previous one compiles only Landlord's own packages, once (extractRelease).
func prepareReleases() error {
	data, err := os.ReadFile(filepath.Join(root, "test", "upgrade", previousReleaseFile))
	if err != nil {
		return err
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return fmt.Errorf("%s: want a commit and a name", previousReleaseFile)
	}
	commit, name := fields[0], strings.Join(fields[1:], " ")
	if out, err := git("cat-file", "-e", commit+"^{commit}"); err != nil {
		return fmt.Errorf("the previous release (%s, commit %s) is not in this clone's history, so there is nothing to upgrade from: "+
			"fetch the whole history (git fetch --unshallow) and run the tests again: %v %s", name, commit, err, out)
	}
	tree, err := extractRelease(commit)
	if err != nil {
		return err
	}
	previous = release{name: name, tree: tree, binary: filepath.Join(work, "bin", "landlord-previous")}
	current = release{name: "this checkout", tree: root, binary: filepath.Join(work, "bin", "landlord")}
	errs := make(chan error, 2)
	for _, r := range []release{previous, current} {
		go func() { errs <- buildBinary(r) }()
	}
	return errors.Join(<-errs, <-errs)
}

// extractRelease extracts the tree of a release's commit from git, once: into bin/, under the
// commit, where later runs find it. The build cache keys Landlord's own packages by their
// directory, so a tree at the same place each run is compiled once, not on every run (and its
// dependencies are the ones the tests compiled already). It is extracted beside and renamed
// into place, so that two runs at once never build from half a tree.
func extractRelease(commit string) (string, error) {
	tree := filepath.Join(root, "bin", "upgrade", commit)
	if _, err := os.Stat(tree); err == nil {
		return tree, nil
	}
	if err := os.MkdirAll(filepath.Dir(tree), 0o755); err != nil {
		return "", err
	}
	partial, err := os.MkdirTemp(filepath.Dir(tree), commit+".partial-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(partial)
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive --format=tar %s | tar -x -C %q", root, commit, partial))
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("extracting the previous release (%s) from git: %w\n%s", commit, err, out)
	}
	if err := os.Rename(partial, tree); err != nil {
		if _, statErr := os.Stat(tree); statErr == nil {
			return tree, nil // another run put it there first
		}
		return "", err
	}
	return tree, nil
}

// buildBinary builds a release's operator.
func buildBinary(r release) error {
	cmd := exec.Command("go", "build", "-o", r.binary, "./cmd/landlord")
	cmd.Dir = r.tree
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building landlord of %s: %w\n%s", r.name, err, out)
	}
	return nil
}

func git(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
