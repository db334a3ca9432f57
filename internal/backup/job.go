package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/landlord-dev/landlord/internal/database"
)

// RunJob is what a backup or restore Job does: it opens the plan's store, runs the plan's
// operation, and writes one line per database to log. Nothing it writes holds a password.
func RunJob(ctx context.Context, plan Plan, tools Tools, log io.Writer) (err error) {
	if plan.Operation != OpBackup && plan.Operation != OpRestore {
		return fmt.Errorf("plan operation %q is neither %s nor %s", plan.Operation, OpBackup, OpRestore)
	}
	if err := plan.check(); err != nil {
		return err
	}
	// The Job's store has the key-encryption key only to restore a backup of format 1.
	s, err := OpenStore(ctx, plan.Objects, plan.Key, "")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	if plan.Operation == OpBackup {
		m, err := Backup(ctx, s, tools, plan)
		if err != nil {
			return err
		}
		for _, e := range m.Databases {
			fmt.Fprintf(log, "backed up database %s (%s %s): %d bytes, stored as %s%s (%d bytes, encrypted)\n",
				e.Name, e.Engine, e.ServerVersion, e.Size, plan.Location, e.Object, e.StoredSize)
		}
		return nil
	}
	if err := Restore(ctx, s, tools, plan); err != nil {
		return err
	}
	m, err := s.Manifest(ctx, plan.Location)
	if err != nil {
		return err
	}
	for _, db := range plan.Databases {
		for _, e := range m.Databases {
			if e.Name == db.Name {
				fmt.Fprintf(log, "restored database %s from %s%s (%d bytes) into %s on %s\n",
					e.Name, plan.Location, e.Object, e.Size, db.Target.Database, db.Target.Host)
			}
		}
	}
	return nil
}

// check refuses a plan that could not be carried out, before anything is read or written.
func (p Plan) check() error {
	if err := checkLocation(p.Location); err != nil {
		return err
	}
	if len(p.Databases) == 0 {
		return errors.New("the plan names no database")
	}
	seen := map[string]bool{}
	for _, db := range p.Databases {
		// The name is part of an object's name in the store.
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
