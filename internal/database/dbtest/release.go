package dbtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/landlord-dev/landlord/internal/database"
)

// Release is where a set of servers and client tools comes from: the machine's own packages, or
// another Debian release that hack/install-databases.sh unpacked into bin/debian/<name> of the
// module, whose programs load that folder's libraries. Tests run each engine's clients against
// servers of every release the machine has, to prove what a client dumps and loads.
type Release struct {
	// Name is the release's, as a test names it: "machine", or the Debian release ("trixie").
	Name string
	// Root is the folder the release's /usr is in; empty for the machine's own.
	Root string
}

// Machine is the machine's own packages.
var Machine = Release{Name: "machine"}

// Releases lists the machine's own release first, then each whole one under bin/debian.
func Releases() ([]Release, error) {
	releases := []Release{Machine}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	ready, _ := filepath.Glob(filepath.Join(root, "bin", "debian", "*", ".landlord-ready"))
	sort.Strings(ready)
	for _, r := range ready {
		dir := filepath.Dir(r)
		releases = append(releases, Release{Name: filepath.Base(dir), Root: dir})
	}
	return releases, nil
}

// PostgresBin is the directory of the release's newest PostgreSQL programs (initdb, postgres,
// pg_dump, pg_restore, psql).
func (r Release) PostgresBin() (string, error) {
	initdb, _, err := postgresBinaries(r.Root)
	if err != nil {
		return "", err
	}
	return filepath.Dir(initdb), nil
}

// Program is the path of one of the release's programs in usr/bin ("mariadb-dump"); for the
// machine, the one on PATH.
func (r Release) Program(name string) string {
	if r.Root == "" {
		return lookPath(name, filepath.Join("/usr/bin", name))
	}
	if p := filepath.Join(r.Root, "usr", "bin", name); isExecutable(p) {
		return p
	}
	return ""
}

// moduleRoot is the nearest directory up from the working directory (a test's package) that
// holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Version is the server's version as it reports it: "15.18 (Debian 15.18-0+deb12u1)",
// "11.8.9-MariaDB-0+deb13u1".
func (i *Instance) Version(ctx context.Context) (string, error) {
	dbname, query := "postgres", "SHOW server_version"
	if i.Server.Engine == database.MySQL {
		dbname, query = "", "SELECT VERSION()"
	}
	db, err := OpenDB(i.Server, i.Server.AdminUser, i.Server.AdminPassword, dbname)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, query).Scan(&v); err != nil {
		return "", fmt.Errorf("reading the server's version: %w", err)
	}
	return v, nil
}
