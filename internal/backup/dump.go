package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"gocloud.dev/blob"

	"github.com/landlord-dev/landlord/internal/database"
)

// cleanupTimeout bounds the removal of a failed backup's objects, which runs even when the
// Job's own context has ended (SIGTERM).
const cleanupTimeout = time.Minute

// Backup dumps every database of the plan into the store at plan.Location and writes the
// manifest last: its two steps (Dump, then Seal) in one process. On any error it removes what it
// wrote, as far as it can: a location without a manifest holds no backup. A location that
// already holds a manifest is a backup already taken (by an earlier run of the same Job), and
// is returned as it is.
func Backup(ctx context.Context, store *Store, tools Tools, plan Plan) (*Manifest, error) {
	if err := plan.check(); err != nil {
		return nil, err
	}
	plan.Operation = OpBackup
	dump, seal, err := plan.Steps()
	if err != nil {
		return nil, err
	}
	if m, err := existing(ctx, store, seal); m != nil || err != nil {
		return m, err
	}
	dir, err := newWorkDir("backup")
	if err != nil {
		return nil, err
	}
	defer dir.remove()
	if err := Dump(ctx, tools, dump, string(dir)); err != nil {
		return nil, err
	}
	return Seal(ctx, store, seal, string(dir))
}

// existing is the manifest of a backup already whole at the plan's location, or nil.
func existing(ctx context.Context, store *Store, plan Plan) (*Manifest, error) {
	s, err := store.forTenant(plan.TenantKey)
	if err != nil {
		return nil, err
	}
	m, err := s.Manifest(ctx, plan.Location)
	if errors.Is(err, ErrNoManifest) {
		return nil, nil
	}
	return m, err
}

// Dump is a backup's first step: it dumps each of the plan's databases, as its client tool
// writes it, into a file of dir, and writes the record of them last. It needs each database's
// login, and nothing of the store: the client tools that read a tenant's database hold no key
// and no credential but the tenant's own login. A server its client cannot dump fails it
// before anything is written.
func Dump(ctx context.Context, tools Tools, plan Plan, dir string) error {
	if err := plan.checkStep(OpDump); err != nil {
		return err
	}
	work, err := newWorkDir("dump")
	if err != nil {
		return err
	}
	defer work.remove()
	rec := record{Started: time.Now().UTC()}
	for _, db := range plan.Databases {
		e, err := dumpFile(ctx, tools, work, plan.MaxBytes, db, filepath.Join(dir, db.Name+dumpSuffix))
		if err != nil {
			return fmt.Errorf("database %s: %w", db.Name, err)
		}
		rec.Databases = append(rec.Databases, e)
	}
	return rec.write(dir)
}

// dumpFile dumps one database into file through a digest and the size limit.
func dumpFile(ctx context.Context, tools Tools, work workDir, maxBytes int64, db Database, file string) (DumpEntry, error) {
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
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return entry, err
	}
	plain := &limited{w: f, sum: sha256.New(), limit: maxBytes}
	err = cmd.run(ctx, nil, plain)
	// The tool then only died of a broken pipe; what broke it is the error.
	switch {
	case plain.exceeded:
		err = fmt.Errorf("the dump is larger than the limit of %d bytes (maxBytes): not stored", maxBytes)
	case plain.err != nil:
		err = fmt.Errorf("writing the dump: %w", plain.err)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing the dump: %w", cerr)
	}
	if err != nil {
		_ = os.Remove(file)
		return entry, err
	}
	entry.Size, entry.SHA256 = plain.n, hex.EncodeToString(plain.sum.Sum(nil))
	return entry, nil
}

// Seal is a backup's second step: it encrypts each dump Dump left in dir under the tenant's
// key into the store, checking it against Dump's record on the way, and writes the manifest
// last. It needs the store and the tenant's key, and no database's login. On any error it
// removes what it wrote; a location that already holds a manifest is returned as it is.
func Seal(ctx context.Context, store *Store, plan Plan, dir string) (*Manifest, error) {
	if err := plan.checkStep(OpSeal); err != nil {
		return nil, err
	}
	if m, err := existing(ctx, store, plan); m != nil || err != nil {
		return m, err
	}
	s, err := store.forTenant(plan.TenantKey)
	if err != nil {
		return nil, err
	}
	rec, err := readRecord(dir, plan)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Format: ManifestFormat, Tenant: plan.Tenant, TenantUID: plan.TenantUID, Backup: plan.Backup, Started: rec.Started}
	err = func() error {
		for _, e := range rec.Databases {
			stored, err := s.upload(ctx, plan.Location, e, dir)
			if err != nil {
				return fmt.Errorf("database %s: %w", e.Name, err)
			}
			// Sealed: the clear copy goes at once rather than with the pod.
			_ = os.Remove(filepath.Join(dir, e.Object))
			e.StoredSize = stored
			m.Databases = append(m.Databases, e)
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

// upload streams a dump file of dir, checked against its entry on the way, into the encrypting
// writer and on to the bucket; it returns the stored object's size. An upload that fails, or a
// file that does not match, is abandoned: the object is never made.
func (s *Store) upload(ctx context.Context, location string, e DumpEntry, dir string) (int64, error) {
	key := location + e.Object
	f, err := openDump(dir, e.Object)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// Cancelling the writer's context is how an upload is abandoned.
	upload, abandon := context.WithCancel(ctx)
	defer abandon()
	w, err := s.bucket.NewWriter(upload, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", key, err)
	}
	stored := &counter{w: w}
	enc, err := s.seal(ctx, stored, key)
	if err != nil {
		abandon()
		_ = w.Close()
		return 0, err
	}
	digest := sha256.New()
	n, err := io.Copy(io.MultiWriter(enc, digest), io.LimitReader(f, e.Size+1))
	switch {
	case err != nil:
		err = fmt.Errorf("writing %s: %w", key, err)
	case n != e.Size || hex.EncodeToString(digest.Sum(nil)) != e.SHA256:
		err = fmt.Errorf("the dump in the scratch volume no longer matches what was dumped (%d bytes, %d recorded): not stored", n, e.Size)
	}
	if err == nil {
		err = enc.Close()
	}
	if err != nil {
		abandon()
		_ = w.Close()
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", key, err)
	}
	return stored.n, nil
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
