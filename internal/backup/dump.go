package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"gocloud.dev/blob"

	"github.com/landlord-dev/landlord/internal/database"
)

// cleanupTimeout bounds the removal of a failed backup's objects, which runs even when the
// Job's own context has ended (SIGTERM).
const cleanupTimeout = time.Minute

// Backup dumps every database of the plan into the store at plan.Location and writes the
// manifest last. On any error it removes what it wrote, as far as it can: a location without
// a manifest holds no backup. A location that already holds a manifest is a backup already
// taken (by an earlier run of the same Job), and is returned as it is.
func Backup(ctx context.Context, store *Store, tools Tools, plan Plan) (*Manifest, error) {
	if err := plan.check(); err != nil {
		return nil, err
	}
	s, err := store.forTenant(plan.TenantKey)
	if err != nil {
		return nil, err
	}
	if m, err := s.Manifest(ctx, plan.Location); err == nil {
		return m, nil
	} else if !errors.Is(err, ErrNoManifest) {
		return nil, err
	}
	work, err := newWorkDir("backup")
	if err != nil {
		return nil, err
	}
	defer work.remove()

	m := &Manifest{Format: ManifestFormat, Tenant: plan.Tenant, TenantUID: plan.TenantUID, Backup: plan.Backup, Started: time.Now().UTC()}
	err = func() error {
		for _, db := range plan.Databases {
			entry, err := s.dump(ctx, tools, work, plan, db)
			if err != nil {
				return fmt.Errorf("database %s: %w", db.Name, err)
			}
			m.Databases = append(m.Databases, entry)
		}
		m.Finished = time.Now().UTC()
		return s.writeManifest(ctx, plan.Location, m)
	}()
	if err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := s.Delete(cleanup, plan.Location); derr != nil {
			return nil, fmt.Errorf("%w (and removing what was written failed: %v)", err, derr)
		}
		return nil, err
	}
	return m, nil
}

// dump streams one database's dump, as the tool writes it, through a digest and the size limit
// into the encrypting writer and on to the bucket: nothing of it is kept on disk or in memory.
func (s *Store) dump(ctx context.Context, tools Tools, work workDir, plan Plan, db Database) (DumpEntry, error) {
	entry := DumpEntry{Name: db.Name, Engine: db.Target.Engine, Object: db.Name + dumpSuffix}
	tool, err := tools.dumper(db.Target.Engine)
	if err != nil {
		return entry, err
	}
	if entry.ServerVersion, err = serverVersion(ctx, db.Target); err != nil {
		return entry, err
	}
	// A server the client cannot dump fails here, saying why, before anything is written.
	client, err := clientVersion(ctx, tool, db.Target.Engine)
	if err != nil {
		return entry, err
	}
	if err := checkClient(db.Target.Engine, tool, client, entry.ServerVersion); err != nil {
		return entry, err
	}
	cmd, err := dumpCommand(tool, work, db.Target)
	if err != nil {
		return entry, err
	}

	key := plan.Location + entry.Object
	// Cancelling the writer's context is how an upload is abandoned: the object is never made.
	upload, abandon := context.WithCancel(ctx)
	defer abandon()
	w, err := s.bucket.NewWriter(upload, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return entry, fmt.Errorf("writing %s: %w", key, err)
	}
	stored := &counter{w: w}
	enc, err := s.seal(ctx, stored, key)
	if err != nil {
		abandon()
		_ = w.Close()
		return entry, err
	}
	plain := &limited{w: enc, sum: sha256.New(), limit: plan.MaxBytes}

	err = cmd.run(ctx, nil, plain)
	// The tool then only died of a broken pipe; what broke it is the error.
	switch {
	case plain.exceeded:
		err = fmt.Errorf("the dump is larger than the limit of %d bytes (maxBytes): not stored", plan.MaxBytes)
	case plain.err != nil:
		err = fmt.Errorf("writing %s: %w", key, plain.err)
	}
	if err == nil {
		err = enc.Close()
	}
	if err != nil {
		abandon()
		_ = w.Close()
		return entry, err
	}
	if err := w.Close(); err != nil {
		return entry, fmt.Errorf("writing %s: %w", key, err)
	}
	entry.Size, entry.SHA256, entry.StoredSize = plain.n, hex.EncodeToString(plain.sum.Sum(nil)), stored.n
	return entry, nil
}

// dumpSuffix ends every dump's object name.
const dumpSuffix = ".dump"

func dumpCommand(tool string, work workDir, t Target) (command, error) {
	if t.Engine == database.Postgres {
		env, err := work.postgresEnv(t)
		if err != nil {
			return command{}, err
		}
		// The custom format is compressed, and pg_restore reads it selectively: a clone drops
		// owners and privileges at restore time, from the same dump.
		// A table the tenant holds locked fails the dump in a minute rather than holding the
		// Job, and its place on the server, until the Job's timeout.
		return command{path: tool, args: []string{"--format=custom", "--no-password", "--lock-wait-timeout=60s"}, env: env}, nil
	}
	args, env, err := work.mysqlArgs(t)
	if err != nil {
		return command{}, err
	}
	// One consistent snapshot without locking the tenant's tables; binary columns as hex, so
	// the dump stays text that a definer can be rewritten in; no CREATE DATABASE, so the dump
	// restores into any database. --no-tablespaces needs no PROCESS privilege, which the
	// tenant's login does not have.
	args = append(args, "--single-transaction", "--routines", "--triggers", "--events",
		"--hex-blob", "--no-tablespaces", "--no-create-db", "--", t.Database)
	return command{path: tool, args: args, env: env}, nil
}

// limited digests and counts what passes to w, and refuses a write that would take it past
// limit (0: no limit). It keeps why it failed: the tool writing into it only sees its pipe
// close.
type limited struct {
	w        io.Writer
	sum      hash.Hash
	n, limit int64
	exceeded bool
	err      error
}

func (l *limited) Write(p []byte) (int, error) {
	if l.limit > 0 && l.n+int64(len(p)) > l.limit {
		l.exceeded = true
		return 0, errors.New("over the size limit")
	}
	l.sum.Write(p)
	n, err := l.w.Write(p)
	l.n += int64(n)
	if err != nil && l.err == nil {
		l.err = err
	}
	return n, err
}

// counter counts what passes to w.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
