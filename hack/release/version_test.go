package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var root = filepath.Join("..", "..")

// copyMentioned copies VERSION and every file a mention names into a fresh root.
func copyMentioned(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, file := range append([]string{VersionFile}, mentionedFiles()...) {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mentionedFiles() []string {
	var files []string
	seen := map[string]bool{}
	for _, m := range Mentions {
		if !seen[m.File] {
			seen[m.File] = true
			files = append(files, m.File)
		}
	}
	return files
}

func edit(t *testing.T, dir, file, old, replacement string) {
	t.Helper()
	path := filepath.Join(dir, file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, replacement, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEveryFileNamesTheReleaseOfVERSION(t *testing.T) {
	version, err := ReadVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	errs := Check(root, version)
	for _, m := range Mentions {
		t.Run(m.File+" names "+version+" in "+m.What, func(t *testing.T) {
			for _, err := range errs {
				if strings.HasPrefix(err.Error(), m.File+":") && strings.Contains(err.Error(), m.What) {
					t.Error(err)
				}
			}
		})
	}
	if len(errs) > 0 {
		t.Errorf("drift:\n%v", errors.Join(errs...))
	}
}

func TestAFileThatDriftsIsNamed(t *testing.T) {
	version, err := ReadVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	bare := strings.TrimPrefix(version, "v")
	cases := []struct {
		name, file, old, replacement, want string
	}{
		{"a chart whose appVersion is another release is named with its line", "charts/landlord/Chart.yaml",
			`appVersion: "` + bare + `"`, `appVersion: "0.0.9"`, "charts/landlord/Chart.yaml:"},
		{"config/ running another image tag is named", "config/manager/manager.yaml",
			"landlord:" + version, "landlord:v0.0.9", "config/manager/manager.yaml:"},
		{"a README that lost its chart install line is named", "README.md",
			"charts/landlord --version " + bare, "charts/landlord", "README.md: the chart's install line names no release"},
		{"a Flux example pinned to another tag is named", "examples/flux/clusters/production/sources.yaml",
			"tag: " + version, "tag: v0.0.9", "examples/flux/clusters/production/sources.yaml:"},
		{"a CHANGELOG whose newest section is another release is named", "CHANGELOG.md",
			"## [" + bare + "]", "## [9.9.9] - Unreleased\n\n## [" + bare + "]", "CHANGELOG.md:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyMentioned(t)
			edit(t, dir, c.file, c.old, c.replacement)
			errs := Check(dir, version)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
				t.Fatalf("Check: %v; want one error naming %q", errs, c.want)
			}
		})
	}
	t.Run("a release of another version than VERSION's is refused", func(t *testing.T) {
		if err := checkRelease(root, "v99.0.0", ""); err == nil || !strings.Contains(err.Error(), "the file VERSION says "+version) {
			t.Fatalf("checkRelease: %v", err)
		}
	})
	t.Run("a digest that is not sha256 is refused", func(t *testing.T) {
		if err := checkRelease(root, version, "latest"); err == nil || !strings.Contains(err.Error(), "not an image digest") {
			t.Fatalf("checkRelease: %v", err)
		}
	})
}

func TestSetVersionRewritesEveryFileThatNamesTheRelease(t *testing.T) {
	cases := []struct {
		name      string
		changelog string // the newest section's heading before
		want      []string
		notWant   []string
	}{
		{
			name:      "a newest section still Unreleased is renamed",
			changelog: "## [0.1.0] - Unreleased",
			want:      []string{"## [9.8.7] - Unreleased\n"},
			notWant:   []string{"## [0.1.0]"},
		},
		{
			name:      "a dated newest section stays, under a new Unreleased one",
			changelog: "## [0.1.0] - 2026-01-02",
			want:      []string{"## [9.8.7] - Unreleased\n\n## [0.1.0] - 2026-01-02\n"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyMentioned(t)
			data, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
			if err != nil {
				t.Fatal(err)
			}
			changelog := unreleasedSection.ReplaceAllString(string(data), c.changelog)
			if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(changelog), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := Set(dir, "v9.8.7"); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadVersion(dir); err != nil || got != "v9.8.7" {
				t.Fatalf("VERSION is %q, %v", got, err)
			}
			if errs := Check(dir, "v9.8.7"); len(errs) > 0 {
				t.Fatalf("after set-version: %v", errors.Join(errs...))
			}
			data, _ = os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
			for _, w := range c.want {
				if !strings.Contains(string(data), w) {
					t.Errorf("CHANGELOG.md lacks %q", w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(string(data), w) {
					t.Errorf("CHANGELOG.md still has %q", w)
				}
			}
		})
	}
}
