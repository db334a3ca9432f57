package install_test

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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

// TestTheReleaseIsReproducible runs hack/release.sh (what make release runs) twice, from copies
// of the checkout at two paths and at two times, for linux/amd64 only: the other three platforms
// go through the same pipeline with other GOOS and GOARCH. With the build cache warm (as after
// one make release) it takes about 40 s on 2 cores; the second build reuses the first's compiled
// packages, as Go's compiler is reproducible by itself, so what the test proves is everything
// else: the checkout's path, the clock, archive times and ordering, SBOM serials and timestamps,
// the chart's packaging time. The first build on a machine compiles landlordctl's dependencies
// with -trimpath once, several minutes on 2 cores.
func TestTheReleaseIsReproducible(t *testing.T) {
	version := releaseVersion(t)
	bare := strings.TrimPrefix(version, "v")
	digest := "sha256:" + strings.Repeat("0f", 32)
	env := []string{
		"GORELEASER=" + goreleaserPath(t), "CYCLONEDX_GOMOD=" + cyclonedxGomodPath(t), "HELM=" + helmPath(t),
		"COMMIT=0123456789abcdef0123456789abcdef01234567", "SOURCE_DATE_EPOCH=1767225600",
	}
	var dists []string
	for _, name := range []string{"first", "second"} {
		dir := filepath.Join(t.TempDir(), name, "landlord")
		releaseCopy(t, dir)
		if out, err := runErrIn(dir, env, filepath.Join(dir, "hack", "release.sh"), version, digest); err != nil {
			t.Fatalf("%s release: %v\n%s", name, err, out)
		}
		dists = append(dists, filepath.Join(dir, "dist"))
	}
	first, second := dists[0], dists[1]
	checksums, err := os.ReadFile(filepath.Join(first, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(checksums)), "\n") {
		sum, file, _ := strings.Cut(line, "  ")
		listed[file] = sum
	}

	t.Run("the two releases' checksums are the same, file for file", func(t *testing.T) {
		again, err := os.ReadFile(filepath.Join(second, "checksums.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(checksums) {
			t.Errorf("checksums differ:\nfirst:\n%s\nsecond:\n%s", checksums, again)
		}
	})
	t.Run("the krew manifest and the release notes are the same too", func(t *testing.T) {
		for _, f := range []string{filepath.Join("krew", "landlord.yaml"), "release-notes.md"} {
			if a, b := sha256File(t, filepath.Join(first, f)), sha256File(t, filepath.Join(second, f)); a != b {
				t.Errorf("%s differs", f)
			}
		}
	})
	t.Run("the checksums name the installer, the CRDs, the chart, each binary's archive and SBOM, and match the files", func(t *testing.T) {
		want := []string{"install.yaml", "crds.yaml", "landlord-" + bare + ".tgz",
			"landlordctl_" + bare + "_linux_amd64.tar.gz", "kubectl-landlord_" + bare + "_linux_amd64.tar.gz",
			"landlordctl_" + bare + "_linux_amd64.cdx.json", "kubectl-landlord_" + bare + "_linux_amd64.cdx.json"}
		for _, f := range want {
			sum, ok := listed[f]
			if !ok {
				t.Errorf("checksums.txt does not list %s: %v", f, listed)
				continue
			}
			if got := sha256File(t, filepath.Join(first, f)); got != sum {
				t.Errorf("%s has SHA-256 %s, checksums.txt says %s", f, got, sum)
			}
		}
		if len(listed) != len(want) {
			t.Errorf("checksums.txt lists %d files, want %d: %v", len(listed), len(want), listed)
		}
	})
	t.Run("the installer runs the release's image by tag and digest", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(first, "install.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var images []string
		for _, obj := range decode(t, string(data)) {
			if obj["kind"] == "Deployment" {
				images = append(images, str(field(obj, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["image"]))
			}
		}
		if want := "ghcr.io/landlord-dev/landlord:" + version + "@" + digest; !slices.Equal(images, []string{want}) {
			t.Errorf("the installer's Deployments run %v, want %s", images, want)
		}
	})
	t.Run("the binary carries the release and commit, and neither the checkout's path nor its VCS state", func(t *testing.T) {
		bin := filepath.Join(first, "landlordctl_linux_amd64_v1", "landlordctl")
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		// -trimpath leaves -ldflags out of the build information: the binary says what they set.
		if settings["-trimpath"] != "true" || settings["vcs.revision"] != "" || settings["CGO_ENABLED"] != "0" {
			t.Errorf("build settings %v: want -trimpath, CGO_ENABLED=0 and no VCS stamp", settings)
		}
		out := run(t, nil, bin, "version", "--client", "-o", "json")
		var got struct {
			Client struct{ Version, Commit string } `json:"client"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Client.Version != version || got.Client.Commit != "0123456789abcdef0123456789abcdef01234567" {
			t.Errorf("landlordctl version --client: %s (%v); want version %s and the commit", out, err, version)
		}
	})
	t.Run("the SBOM lists the modules linked into the binary and no serial or timestamp", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(first, "landlordctl_"+bare+"_linux_amd64.cdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		var bom struct {
			BOMFormat    string `json:"bomFormat"`
			SerialNumber string `json:"serialNumber"`
			Metadata     struct {
				Timestamp string                   `json:"timestamp"`
				Component struct{ Version string } `json:"component"`
			} `json:"metadata"`
			Components []struct{ Name string } `json:"components"`
		}
		if err := json.Unmarshal(data, &bom); err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, c := range bom.Components {
			names[c.Name] = true
		}
		if bom.BOMFormat != "CycloneDX" || bom.SerialNumber != "" || bom.Metadata.Timestamp != "" || bom.Metadata.Component.Version != version ||
			!names["sigs.k8s.io/controller-runtime"] {
			t.Errorf("SBOM: format %q, serial %q, timestamp %q, version %q, %d components (controller-runtime among them: %v)",
				bom.BOMFormat, bom.SerialNumber, bom.Metadata.Timestamp, bom.Metadata.Component.Version, len(bom.Components), names["sigs.k8s.io/controller-runtime"])
		}
	})
	t.Run("the release notes are CHANGELOG.md's section for the release", func(t *testing.T) {
		notes, err := os.ReadFile(filepath.Join(first, "release-notes.md"))
		if err != nil {
			t.Fatal(err)
		}
		changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
		if err != nil {
			t.Fatal(err)
		}
		if len(notes) < 100 || !strings.Contains(string(changelog), "## ["+bare+"]") || !strings.Contains(string(changelog), strings.TrimSpace(string(notes))) {
			t.Errorf("release-notes.md (%d bytes) is not CHANGELOG.md's section for %s", len(notes), version)
		}
	})
}
