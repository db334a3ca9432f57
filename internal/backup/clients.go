package backup

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/landlord-dev/landlord/internal/database"
)

// What a Job's client tools dump, checked against the server's version before a dump starts:
//   - pg_dump refuses a server of a newer major version than its own, after connecting; the
//     check says so first, naming both, and what to do;
//   - mariadb-dump dumps MariaDB servers up to its own release (major.minor); a newer MariaDB
//     server is refused, as its dump may hold what the client does not know. MySQL servers are
//     dumped by MariaDB's client as MySQL's own clients would, for the SQL both speak; none is
//     refused, and the documentation says which were tested.

var (
	postgresClientVersion = regexp.MustCompile(`\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?`)
	mariadbClientVersion  = regexp.MustCompile(`(?:Distrib|from)\s+(\d+)\.(\d+)(?:\.\d+)?-MariaDB`)
)

// clientVersion runs the tool with --version and reads the release of the engine it comes from:
// PostgreSQL's major ("15"), MariaDB's major.minor ("10.11").
func clientVersion(ctx context.Context, tool string, engine database.Engine) (string, error) {
	cmd := exec.CommandContext(ctx, tool, "--version")
	// Nothing of the Job's environment: the tool reads no file and no server to say its version.
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", filepath.Base(tool), err)
	}
	return parseClientVersion(engine, string(bytes.TrimSpace(out)))
}

// parseClientVersion reads a client's --version line.
func parseClientVersion(engine database.Engine, line string) (string, error) {
	switch engine {
	case database.Postgres:
		if m := postgresClientVersion.FindStringSubmatch(line); m != nil {
			return m[1], nil
		}
	case database.MySQL:
		if m := mariadbClientVersion.FindStringSubmatch(line); m != nil {
			return m[1] + "." + m[2], nil
		}
	}
	return "", fmt.Errorf("cannot read the client's version from %q", line)
}

// checkClient refuses a server its client cannot dump; the error names both versions and what
// to do.
func checkClient(engine database.Engine, tool, client, server string) error {
	switch engine {
	case database.Postgres:
		major, err := majorVersion(engine, server)
		if err != nil {
			return err
		}
		if newer(major, client) {
			return fmt.Errorf("the server is PostgreSQL %s, newer than this image's %s (PostgreSQL %s), which dumps servers up to its own major version only: use a backup image whose PostgreSQL client is %s or newer (docs/tenant-backups.md, Supported servers)",
				server, filepath.Base(tool), client, major)
		}
	case database.MySQL:
		if !strings.Contains(strings.ToLower(server), "mariadb") {
			return nil
		}
		major, err := majorVersion(engine, server)
		if err != nil {
			return err
		}
		release := strings.TrimPrefix(major, "MariaDB ")
		if newer(release, client) {
			return fmt.Errorf("the server is MariaDB %s, newer than this image's %s (MariaDB %s), which dumps MariaDB servers up to its own release: use a backup image whose MariaDB client is %s or newer (docs/tenant-backups.md, Supported servers)",
				server, filepath.Base(tool), client, release)
		}
	}
	return nil
}

// newer reports whether version a ("17", "11.4") is after b, number by number.
func newer(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x > y
		}
	}
	return false
}
