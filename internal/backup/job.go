package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/landlord-dev/landlord/internal/database"
)

// RunJob is what a backup or restore Job's container does: a whole backup or restore (the
// plans of Jobs made before they had steps), or one of their steps, which meet in dir. Only the
// store's steps open the store. It writes one line per database to log; nothing it writes holds
// a password.
func RunJob(ctx context.Context, plan Plan, tools Tools, dir string, log io.Writer) (err error) {
	switch plan.Operation {
	case OpDump, OpLoad, OpSeal, OpFetch, OpCopy:
		if dir == "" {
			return fmt.Errorf("the %s step needs the steps' directory", plan.Operation)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	case OpBackup, OpRestore:
		if err := plan.check(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("plan operation %q is none of %s, %s, %s, %s, %s, %s, %s", plan.Operation, OpBackup, OpRestore, OpDump, OpSeal, OpFetch, OpLoad, OpCopy)
	}
	switch plan.Operation {
	case OpCopy:
		if err := plan.checkStep(OpCopy); err != nil {
			return err
		}
		for i, db := range plan.Databases {
			to := plan.CopyTo[i].Target
			rep, err := Copy(ctx, tools, db.Target, to, dir)
			if err != nil {
				return fmt.Errorf("database %s: %w", db.Name, err)
			}
			fmt.Fprintf(log, "copied database %s from %s on %s (%s) to %s on %s (%s): %d bytes, %d tables checked equal; dumped in %s, loaded in %s, checked in %s\n",
				db.Name, db.Target.Database, db.Target.Host, rep.SourceVersion, to.Database, to.Host, rep.TargetVersion, rep.Bytes, len(rep.Tables),
				rep.Dumped.Round(time.Millisecond), rep.Loaded.Round(time.Millisecond), rep.Verified.Round(time.Millisecond))
		}
		return nil
	case OpDump:
		if err := Dump(ctx, tools, plan, dir); err != nil {
			return err
		}
		rec, err := readRecord(dir, plan)
		if err != nil {
			return err
		}
		for _, e := range rec.Databases {
			fmt.Fprintf(log, "dumped database %s (%s %s): %d bytes\n", e.Name, e.Engine, e.ServerVersion, e.Size)
		}
		return nil
	case OpLoad:
		if err := Load(ctx, tools, plan, dir); err != nil {
			return err
		}
		logLoaded(log, plan, dir)
		return nil
	}

	// The Job's store has the key-encryption key only to restore a backup of format 1.
	s, err := OpenStore(ctx, plan.Objects, plan.Key, "")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	switch plan.Operation {
	case OpBackup, OpSeal:
		var m *Manifest
		if plan.Operation == OpBackup {
			m, err = Backup(ctx, s, tools, plan)
		} else {
			m, err = Seal(ctx, s, plan, dir)
		}
		if err != nil {
			return err
		}
		for _, e := range m.Databases {
			fmt.Fprintf(log, "backed up database %s (%s %s): %d bytes, stored as %s%s (%d bytes, encrypted)\n",
				e.Name, e.Engine, e.ServerVersion, e.Size, plan.Location, e.Object, e.StoredSize)
		}
	case OpFetch:
		if err := Fetch(ctx, s, plan, dir); err != nil {
			return err
		}
		rec, err := readRecord(dir, plan)
		if err != nil {
			return err
		}
		for _, e := range rec.Databases {
			fmt.Fprintf(log, "fetched database %s from %s%s (%d bytes), checked against the manifest\n", e.Name, plan.Location, e.Object, e.Size)
		}
	case OpRestore:
		if err := Restore(ctx, s, tools, plan); err != nil {
			return err
		}
		for _, db := range plan.Databases {
			fmt.Fprintf(log, "restored database %s from %s into %s on %s\n", db.Name, plan.Location, db.Target.Database, db.Target.Host)
		}
	}
	return nil
}

// logLoaded says what Load wrote, from the record it read.
func logLoaded(log io.Writer, plan Plan, dir string) {
	rec, err := readRecord(dir, plan)
	if err != nil {
		return
	}
	for i, db := range plan.Databases {
		fmt.Fprintf(log, "restored database %s (%d bytes) into %s on %s\n", db.Name, rec.Databases[i].Size, db.Target.Database, db.Target.Host)
	}
}

// check refuses a plan that could not be carried out, before anything is read or written.
func (p Plan) check() error {
	if err := checkLocation(p.Location); err != nil {
		return err
	}
	return p.checkDatabases(true)
}

// checkDatabases refuses a plan whose databases could not be named in the store, and, with
// targets, one whose targets could not be reached.
func (p Plan) checkDatabases(targets bool) error {
	if len(p.Databases) == 0 {
		return errors.New("the plan names no database")
	}
	seen := map[string]bool{}
	for _, db := range p.Databases {
		// The name is part of an object's name in the store, and of a file's in the steps'
		// directory.
		if db.Name == "" || strings.ContainsAny(db.Name, "/\\") || strings.HasPrefix(db.Name, ".") {
			return fmt.Errorf("database name %q cannot name an object: it is empty, starts with . or holds a slash", db.Name)
		}
		if seen[db.Name] {
			return fmt.Errorf("the plan names database %s twice", db.Name)
		}
		seen[db.Name] = true
		t := db.Target
		if t.Engine != database.Postgres && t.Engine != database.MySQL {
			return fmt.Errorf("database %s: unknown engine %q", db.Name, t.Engine)
		}
		if !targets {
			continue
		}
		switch t.TLS {
		case "", database.TLSDisable, database.TLSRequire, database.TLSVerifyFull:
		default:
			return fmt.Errorf("database %s: unknown TLS mode %q", db.Name, t.TLS)
		}
		if t.Host == "" || t.Port <= 0 || t.Database == "" || t.Username == "" {
			return fmt.Errorf("database %s: the target needs a host, a port, a database and a login", db.Name)
		}
	}
	return nil
}
