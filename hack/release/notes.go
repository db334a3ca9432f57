package main

import (
	"fmt"
	"regexp"
	"strings"
)

// Notes are CHANGELOG.md's section for version (vX.Y.Z), without its heading: the release's
// notes. With released, a section still headed "Unreleased" is refused: a release is dated in
// the CHANGELOG before it is tagged.
func Notes(changelog, version string, released bool) (string, error) {
	heading := regexp.MustCompile(`^## \[` + regexp.QuoteMeta(strings.TrimPrefix(version, "v")) + `\](.*)$`)
	lines := strings.Split(changelog, "\n")
	start := -1
	for i, line := range lines {
		if m := heading.FindStringSubmatch(line); m != nil {
			if released && strings.Contains(m[1], "Unreleased") {
				return "", fmt.Errorf("CHANGELOG.md's section for %s is headed %q: date it (## [%s] - YYYY-MM-DD) before the release", version, line, strings.TrimPrefix(version, "v"))
			}
			start = i + 1
			break
		}
	}
	if start < 0 {
		return "", fmt.Errorf("CHANGELOG.md has no section '## [%s]'", strings.TrimPrefix(version, "v"))
	}
	end := len(lines)
	for i := start; i < len(lines); i++ {
		// The next release's section, or the link definitions that close the file.
		if strings.HasPrefix(lines[i], "## ") || linkDefinition.MatchString(lines[i]) {
			end = i
			break
		}
	}
	body := strings.Trim(strings.Join(lines[start:end], "\n"), "\n")
	if body == "" {
		return "", fmt.Errorf("CHANGELOG.md's section for %s is empty", version)
	}
	return body + "\n", nil
}

var linkDefinition = regexp.MustCompile(`^\[[^\]]+\]: `)
