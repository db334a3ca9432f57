package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// VersionFile is the one place the release is written: a line vX.Y.Z. A file rather than the
// newest CHANGELOG section, because make, shell scripts, the release workflow and Go tests all read
// a one-line file without a Markdown parser, and because the CHANGELOG's newest section is
// Unreleased between releases. The CHANGELOG, the chart and every install line name the same
// version, which Check enforces and Set rewrites (make set-version).
const VersionFile = "VERSION"

// semver is a release as the tag names it; mentions capture it with or without the v.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

const (
	tagged = `v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?` // v0.1.0
	bare   = `[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?`  // 0.1.0
)

// Mention is a place in a file that names the release.
type Mention struct {
	// File is relative to the repository root.
	File string
	// What the mention is, for a reader of the error.
	What string
	// Pattern's first group is the version: vX.Y.Z, or X.Y.Z when Bare.
	Pattern *regexp.Regexp
	Bare    bool
	// First: only the first match names the release (CHANGELOG.md's newest section; older
	// sections name older releases).
	First bool
}

func mention(file, what, pattern string, bareVersion bool) Mention {
	version := tagged
	if bareVersion {
		version = bare
	}
	return Mention{File: file, What: what, Pattern: regexp.MustCompile(strings.Replace(pattern, "VERSION", "("+version+")", 1)), Bare: bareVersion}
}

// Mentions are every place outside VERSION that names the release.
var Mentions = []Mention{
	mention("charts/landlord/Chart.yaml", "the chart's version", `(?m)^version: VERSION$`, true),
	mention("charts/landlord/Chart.yaml", "the chart's appVersion", `(?m)^appVersion: "VERSION"$`, true),
	mention("config/manager/manager.yaml", "the operator's image tag", `image: ghcr\.io/landlord-dev/landlord:VERSION\b`, false),
	mention("README.md", "the installer's download line", `releases/download/VERSION/install\.yaml`, false),
	mention("README.md", "the chart's install line", `oci://ghcr\.io/landlord-dev/charts/landlord --version VERSION\b`, true),
	mention("docs/getting-started.md", "the installer's download line", `releases/download/VERSION/install\.yaml`, false),
	mention("docs/getting-started.md", "the chart's install line", `oci://ghcr\.io/landlord-dev/charts/landlord --version VERSION\b`, true),
	mention("docs/upgrading.md", "the installer's download line", `releases/download/VERSION/install\.yaml`, false),
	mention("docs/upgrading.md", "the chart's upgrade line", `oci://ghcr\.io/landlord-dev/charts/landlord --version VERSION\b`, true),
	mention("examples/flux/clusters/production/sources.yaml", "the GitRepository's tag", `(?m)^    tag: VERSION$`, false),
	mention("examples/flux/infrastructure/landlord/kustomization.yaml", "the image tag", `(?m)^    newTag: VERSION$`, false),
	mention("examples/argocd/apps/landlord.yaml", "the Applications' targetRevision", `(?m)^    targetRevision: VERSION$`, false),
	mention("examples/argocd/infrastructure/landlord/kustomization.yaml", "the image tag", `(?m)^    newTag: VERSION$`, false),
	mention("docs/gitops-argocd.md", "the Argo CD health checks' ref", `examples/argocd/argocd-cm\?ref=VERSION\b`, false),
	func() Mention {
		m := mention("CHANGELOG.md", "the newest release's section", `(?m)^## \[VERSION\]`, true)
		m.First = true
		return m
	}(),
}

// ReadVersion is the file VERSION's release.
func ReadVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, VersionFile))
	if err != nil {
		return "", err
	}
	version := strings.TrimSpace(string(data))
	if !semver.MatchString(version) {
		return "", fmt.Errorf("%s holds %q, not a release vX.Y.Z", VersionFile, version)
	}
	return version, nil
}

// Check returns one error per mention that names another release than version, or none: each
// error names the file, the line and what the mention is.
func Check(root, version string) []error {
	var errs []error
	for _, m := range Mentions {
		data, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		text := string(data)
		matches := m.Pattern.FindAllStringSubmatchIndex(text, -1)
		if len(matches) == 0 {
			errs = append(errs, fmt.Errorf("%s: %s names no release (nothing matches %s): put the line back, make set-version rewrites it at each release", m.File, m.What, m.Pattern))
			continue
		}
		if m.First {
			matches = matches[:1]
		}
		want := version
		if m.Bare {
			want = strings.TrimPrefix(version, "v")
		}
		for _, loc := range matches {
			if got := text[loc[2]:loc[3]]; got != want {
				line := strings.Count(text[:loc[2]], "\n") + 1
				errs = append(errs, fmt.Errorf("%s:%d: %s is %s, but %s says %s: run 'make set-version VERSION=%s'", m.File, line, m.What, got, VersionFile, version, version))
			}
		}
	}
	return errs
}

// Set writes version into VERSION and every mention. CHANGELOG.md's newest section is renamed
// while it is still "Unreleased"; a released one gets a new section above it.
func Set(root, version string) error {
	if !semver.MatchString(version) {
		return fmt.Errorf("%q is not a release vX.Y.Z", version)
	}
	files := map[string]string{}
	for _, m := range Mentions {
		text, ok := files[m.File]
		if !ok {
			data, err := os.ReadFile(filepath.Join(root, m.File))
			if err != nil {
				return err
			}
			text = string(data)
		}
		want := version
		if m.Bare {
			want = strings.TrimPrefix(version, "v")
		}
		if m.First {
			text = setNewestSection(text, m.Pattern, want)
		} else {
			text = replaceGroup(text, m.Pattern, want)
		}
		files[m.File] = text
	}
	for file, text := range files {
		if err := os.WriteFile(filepath.Join(root, file), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(root, VersionFile), []byte(version+"\n"), 0o644)
}

// replaceGroup replaces the first group of every match of pattern with value.
func replaceGroup(text string, pattern *regexp.Regexp, value string) string {
	var b strings.Builder
	last := 0
	for _, loc := range pattern.FindAllStringSubmatchIndex(text, -1) {
		b.WriteString(text[last:loc[2]])
		b.WriteString(value)
		last = loc[3]
	}
	b.WriteString(text[last:])
	return b.String()
}

var unreleasedSection = regexp.MustCompile(`(?m)^## \[(` + bare + `)\] - Unreleased$`)

func setNewestSection(text string, pattern *regexp.Regexp, version string) string {
	loc := pattern.FindStringSubmatchIndex(text)
	if loc == nil {
		return text
	}
	if text[loc[2]:loc[3]] == version {
		return text
	}
	if head := unreleasedSection.FindStringSubmatchIndex(text); head != nil && head[0] == loc[0] {
		return text[:head[2]] + version + text[head[3]:]
	}
	return text[:loc[0]] + "## [" + version + "] - Unreleased\n\n" + text[loc[0]:]
}

// checkRelease refuses to release anything but the file VERSION's release, and a checkout whose
// files name another.
func checkRelease(root, version, digest string) error {
	want, err := ReadVersion(root)
	if err != nil {
		return err
	}
	if version != want {
		return fmt.Errorf("VERSION=%s, but the file %s says %s: release %s, or run 'make set-version VERSION=%s' and commit first", version, VersionFile, want, want, version)
	}
	if digest != "" && !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(digest) {
		return fmt.Errorf("DIGEST=%s is not an image digest sha256:<64 hex digits>", digest)
	}
	return errors.Join(Check(root, version)...)
}

// sourceDate is SOURCE_DATE_EPOCH as a time.
func sourceDate(epoch string) (time.Time, error) {
	var seconds int64
	if _, err := fmt.Sscan(epoch, &seconds); err != nil || seconds <= 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a positive number of seconds", epoch)
	}
	return time.Unix(seconds, 0).UTC(), nil
}
