package main

import (
	"strings"
	"testing"
)

const changelog = `# Changelog

## [0.2.0] - Unreleased

### Added

- Shards.

## [0.1.0] - 2026-01-02

### Added

- Tenants.

[0.1.0]: https://github.com/landlord-dev/landlord/releases/tag/v0.1.0
`

func TestReleaseNotesAreTheVersionsSectionOfTheChangelog(t *testing.T) {
	cases := []struct {
		name, version string
		released      bool
		want, err     string
	}{
		{name: "the newest section stops at the next release's", version: "v0.2.0", want: "### Added\n\n- Shards.\n"},
		{name: "the last section stops at the link definitions", version: "v0.1.0", released: true, want: "### Added\n\n- Tenants.\n"},
		{name: "a release still headed Unreleased is refused for publishing", version: "v0.2.0", released: true, err: "date it"},
		{name: "a release the changelog does not name is refused", version: "v0.3.0", err: "no section '## [0.3.0]'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Notes(changelog, c.version, c.released)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Notes: %v; want an error saying %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Notes: %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
