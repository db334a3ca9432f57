package install_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The release tools the Makefile builds into bin/ (GORELEASER_VERSION, CYCLONEDX_GOMOD_VERSION,
// ACTIONLINT_VERSION).
const (
	goreleaserVersion     = "v2.15.1"
	cyclonedxGomodVersion = "v1.10.0"
	actionlintVersion     = "v1.7.12"
)

func goreleaserPath(t *testing.T) string {
	return tool(t, filepath.Join(root, "bin", "goreleaser-"+goreleaserVersion), "make goreleaser")
}

func cyclonedxGomodPath(t *testing.T) string {
	return tool(t, filepath.Join(root, "bin", "cyclonedx-gomod-"+cyclonedxGomodVersion), "make cyclonedx-gomod")
}

func actionlintPath(t *testing.T) string {
	return tool(t, filepath.Join(root, "bin", "actionlint-"+actionlintVersion), "make actionlint")
}

func TestTheReleaseConfigurationPassesItsLinters(t *testing.T) {
	cases := []struct {
		name string
		tool func(*testing.T) string
		args []string
	}{
		{"goreleaser check accepts .goreleaser.yaml", goreleaserPath, []string{"check", "--config", ".goreleaser.yaml"}},
		// shellcheck and pyflakes are left out: neither is built here, and each would make the
		// result depend on what the machine has installed.
		{"actionlint accepts the release workflow, its expressions, permissions and the actions' inputs", actionlintPath,
			[]string{"-no-color", "-shellcheck=", "-pyflakes=", filepath.Join(".github", "workflows", "release.yaml")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if out, err := runErr(nil, c.tool(t), c.args...); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
}

// releaseCopy copies the checkout (its tracked files and new ones, not what .gitignore leaves
// out) to dir, with .goreleaser.yaml narrowed to linux/amd64, as a fresh git repository.
func releaseCopy(t *testing.T, dir string) {
	t.Helper()
	files := strings.Fields(run(t, nil, "git", "ls-files", "--cached", "--others", "--exclude-standard"))
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		} else if err != nil {
			t.Fatal(err)
		}
		info, _ := os.Stat(filepath.Join(root, f))
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, ".goreleaser.yaml")
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "goos: [linux, darwin]") || !strings.Contains(string(data), "goarch: [amd64, arm64]") {
		t.Fatal(".goreleaser.yaml no longer names its platforms as goos: [linux, darwin] and goarch: [amd64, arm64]")
	}
	narrowed := strings.Replace(strings.Replace(string(data), "goos: [linux, darwin]", "goos: [linux]", 1), "goarch: [amd64, arm64]", "goarch: [amd64]", 1)
	if err := os.WriteFile(config, []byte(narrowed), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := append([]string{"-C", dir, "-c", "user.name=release", "-c", "user.email=release@example.com", "-c", "commit.gpgsign=false"}, args...)
		run(t, nil, "git", cmd...)
	}
	git("init", "--quiet")
	git("add", "--all")
	git("commit", "--quiet", "--message", "release")
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
