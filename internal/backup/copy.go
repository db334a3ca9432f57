package backup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/landlord-dev/landlord/internal/database"
)

// CopyReport says what Copy did.
type CopyReport struct {
	// Bytes is the dump's size.
	Bytes int64
	// SourceVersion and TargetVersion are the two servers'.
	SourceVersion, TargetVersion string
	// Tables is what both databases hold, table by table, once the copy was checked.
	Tables []TableDigest
	// Dumped, Loaded and Verified are how long each part took.
	Dumped, Loaded, Verified time.Duration
}

// Copy copies a database to another server of the same engine, as a move between servers
// does: dumped with the source's login, loaded into the target (its login's database, emptied
// first), then both read table by table (Contents) and compared. The source must not be written
// meanwhile (its writers fenced): the comparison is the proof that the target holds what the
// source does, and a copy that differs fails, leaving the source as it was. The target's server
// may be of a newer major version than the source's, never an older one. The source's grants
// to other logins are not carried over (on the target they would name logins of other tenants
// or none); every object is the target login's, and MySQL's definers are the target's login.
// dir is where the dump waits between the two.
func Copy(ctx context.Context, tools Tools, source, target Target, dir string) (*CopyReport, error) {
	for _, t := range []Target{source, target} {
		if err := (Plan{Databases: []Database{{Name: "copy", Target: t}}}).checkDatabases(true); err != nil {
			return nil, err
		}
	}
	if source.Engine != target.Engine {
		return nil, fmt.Errorf("a %s database cannot be copied to a %s server", source.Engine, target.Engine)
	}
	if err := tools.restorers(target.Engine); err != nil {
		return nil, err
	}
	rep := &CopyReport{}
	start := time.Now()
	dump := Plan{Operation: OpDump, Databases: []Database{{Name: "copy", Target: source}}}
	if err := Dump(ctx, tools, dump, dir); err != nil {
		return nil, fmt.Errorf("dumping %s: %w", source.Database, err)
	}
	rec, err := readRecord(dir, dump)
	if err != nil {
		return nil, err
	}
	e := rec.Databases[0]
	rep.Bytes, rep.SourceVersion = e.Size, e.ServerVersion
	if rep.TargetVersion, err = checkCopyTarget(ctx, e, target); err != nil {
		return nil, err
	}
	rep.Dumped = time.Since(start)

	start = time.Now()
	file := filepath.Join(dir, e.Object)
	defer os.Remove(file)
	work, err := newWorkDir("copy")
	if err != nil {
		return nil, err
	}
	defer work.remove()
	if target.Engine == database.Postgres {
		// --no-acl: the source's grants name logins the target's server may not have.
		err = restorePostgres(ctx, tools, work, target, file, true, e.ServerVersion)
	} else {
		err = loadMySQLCopy(ctx, tools, work, target, file)
	}
	if err != nil {
		return nil, fmt.Errorf("loading into %s on %s: %w", target.Database, target.Host, err)
	}
	rep.Loaded = time.Since(start)

	start = time.Now()
	want, err := Contents(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("reading the source: %w", err)
	}
	got, err := Contents(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("reading the copy: %w", err)
	}
	if diff := contentsDiff(want, got); diff != "" {
		return nil, fmt.Errorf("the copy in %s on %s does not hold what %s on %s does: %s", target.Database, target.Host, source.Database, source.Host, diff)
	}
	rep.Tables, rep.Verified = got, time.Since(start)
	return rep, nil
}

// checkCopyTarget refuses a target server older than the source's, or of another product
// (MariaDB and MySQL), and returns the target's version.
func checkCopyTarget(ctx context.Context, e DumpEntry, target Target) (string, error) {
	version, err := serverVersion(ctx, target)
	if err != nil {
		return "", err
	}
	from, err := majorVersion(e.Engine, e.ServerVersion)
	if err != nil {
		return "", err
	}
	to, err := majorVersion(target.Engine, version)
	if err != nil {
		return "", err
	}
	fromProduct, fromRelease := splitProduct(from)
	toProduct, toRelease := splitProduct(to)
	if fromProduct != toProduct || newer(fromRelease, toRelease) {
		return "", fmt.Errorf("the source runs %s and the target %s: a copy goes to a server of the same product and the same or a newer version", e.ServerVersion, version)
	}
	return version, nil
}

// splitProduct splits majorVersion's "MariaDB 10.11" into product and release; PostgreSQL's
// "15" has no product.
func splitProduct(major string) (product, release string) {
	if p, r, ok := strings.Cut(major, " "); ok {
		return p, r
	}
	return "", major
}

// loadMySQLCopy loads a mariadb-dump script into the target with every definer made the
// target's login, events kept as they were (a move, unlike a clone, keeps the tenant's
// schedule running).
func loadMySQLCopy(ctx context.Context, tools Tools, work workDir, target Target, file string) error {
	in, err := os.Open(file)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(string(work), "*.sql")
	if err != nil {
		return err
	}
	err = rewriteDefiners(out, in, false)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return restoreMySQL(ctx, tools, work, target, out.Name(), false)
}

// contentsDiff says how two databases' contents differ, or "" when they do not.
func contentsDiff(want, got []TableDigest) string {
	var diffs []string
	for _, w := range want {
		i := slices.IndexFunc(got, func(g TableDigest) bool { return g.Table == w.Table })
		switch {
		case i < 0:
			diffs = append(diffs, "table "+w.Table+" is missing")
		case got[i].Rows != w.Rows:
			diffs = append(diffs, fmt.Sprintf("table %s has %d rows, not %d", w.Table, got[i].Rows, w.Rows))
		case got[i].Digest != w.Digest:
			diffs = append(diffs, fmt.Sprintf("table %s's rows differ", w.Table))
		}
	}
	for _, g := range got {
		if !slices.ContainsFunc(want, func(w TableDigest) bool { return w.Table == g.Table }) {
			diffs = append(diffs, "table "+g.Table+" is extra")
		}
	}
	return strings.Join(diffs, "; ")
}
