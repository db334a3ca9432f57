//go:build release

// The reproducible-release test builds the release twice, which on a fresh machine first
// compiles landlordctl's dependencies with -trimpath (several minutes on 2 cores): it runs under
// `make test-release` (and CI, after make test) rather than in make test.
package install_test

import (
	"debug/buildinfo"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

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
