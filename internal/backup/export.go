package backup

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/secret"
)

// An export is a backup as any tool reads it: each database's dump decrypted, exactly as its
// engine's tool wrote it, and checked against the manifest, with the manifest beside them.
//
//   - PostgreSQL: NAME.dump, pg_dump's custom format: pg_restore --no-owner --no-acl -d DB NAME.dump
//   - MySQL and MariaDB: NAME.sql, mariadb-dump's SQL: mariadb DB < NAME.sql
//   - manifest.json: what the backup holds (docs/tenant-backups.md, The format).

// databaseName is a database's name in a Tenant's spec.
var databaseName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ExportSink receives an export's files, each of a size known before it is written.
type ExportSink interface {
	Create(name string, size int64) (io.WriteCloser, error)
}

// ExportName is the file a database's dump is exported as.
func ExportName(e DumpEntry) string {
	if e.Engine == database.Postgres {
		return e.Name + ".dump"
	}
	return e.Name + ".sql"
}

// Export writes the backup at location to out: its dumps, decrypted with its tenant's data key
// (read from the store, which must have been opened with the key-encryption key), each checked
// against the manifest's size and SHA-256, then the manifest. A dump that does not match fails
// the export; what was written of it stays, and says so by its wrong size.
func Export(ctx context.Context, s *Store, location string, out ExportSink) (*Manifest, error) {
	m, err := s.Manifest(ctx, location)
	if err != nil {
		return nil, err
	}
	opener := s
	if m.Format >= 2 {
		key, err := s.TenantKey(ctx, m.TenantUID, false)
		if err != nil {
			return nil, fmt.Errorf("the data key of tenant %s (%s): %w", m.Tenant, m.TenantUID, err)
		}
		if opener, err = s.forTenant(key); err != nil {
			return nil, err
		}
	}
	for _, e := range m.Databases {
		// The manifest is read from the store, which a Job could write: its names become file
		// names here, and only a database's name (a DNS label, as the Tenant's spec has it) may.
		if !databaseName.MatchString(e.Name) || e.Object != e.Name+dumpSuffix {
			return nil, fmt.Errorf("the manifest names a database %q (object %q), which no tenant's database is: refused", e.Name, e.Object)
		}
		if err := opener.export(ctx, location, e, out); err != nil {
			return nil, fmt.Errorf("database %s: %w", e.Name, err)
		}
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	w, err := out.Create(ManifestName, int64(len(body)))
	if err != nil {
		return nil, err
	}
	_, err = w.Write(body)
	return m, errors.Join(err, w.Close())
}

// export decrypts one dump into out, checking it on the way.
func (s *Store) export(ctx context.Context, location string, e DumpEntry, out ExportSink) error {
	key := location + e.Object
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return fmt.Errorf("reading %s: %w", key, err)
	}
	defer r.Close()
	plain, err := s.open(ctx, r, key)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	w, err := out.Create(ExportName(e), e.Size)
	if err != nil {
		return err
	}
	digest := sha256.New()
	// A tar entry takes exactly its size: never more than the manifest's is written.
	n, err := io.Copy(io.MultiWriter(w, digest), io.LimitReader(plain, e.Size))
	switch {
	case err != nil:
		err = fmt.Errorf("%s does not decrypt (corrupted, truncated, moved, or encrypted under another key): %w", key, err)
	case n != e.Size:
		err = fmt.Errorf("%s holds %d bytes, and the manifest says %d", key, n, e.Size)
	case hex.EncodeToString(digest.Sum(nil)) != e.SHA256:
		err = fmt.Errorf("%s does not match the manifest's SHA-256", key)
	default:
		// Nothing may follow the recorded size.
		if extra, _ := io.Copy(io.Discard, io.LimitReader(plain, 1)); extra > 0 {
			err = fmt.Errorf("%s holds more than the manifest's %d bytes", key, e.Size)
		}
	}
	if a, ok := w.(aborter); ok && err != nil {
		// A file that does not match is not kept where it can: a bucket's object is never
		// written.
		a.Abort()
		return err
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// aborter is a file of a sink that can be dropped rather than kept as written so far.
type aborter interface{ Abort() }

// DirSink writes an export's files into a directory, readable by their owner alone: they are a
// customer's data, in the clear.
type DirSink string

func (d DirSink) Create(name string, _ int64) (io.WriteCloser, error) {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(string(d), name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

// TarSink writes an export as a tar stream.
type TarSink struct {
	W   *tar.Writer
	Dir string
	// ModTime is every file's time: the backup's, so the same backup exports the same bytes.
	ModTime time.Time
}

func (t TarSink) Create(name string, size int64) (io.WriteCloser, error) {
	err := t.W.WriteHeader(&tar.Header{Name: path.Join(t.Dir, name), Mode: 0o600, Size: size, ModTime: t.ModTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX})
	if err != nil {
		return nil, err
	}
	return nopCloser{t.W}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// BucketSink writes an export's files into a bucket, under a folder of it. A file that does not
// match the manifest is never written: its upload is abandoned.
type BucketSink struct {
	// Ctx bounds each file's write: one cut short by it is not kept.
	Ctx    context.Context
	Bucket *blob.Bucket
	Folder string
}

func (b BucketSink) Create(name string, _ int64) (io.WriteCloser, error) {
	ctx, cancel := context.WithCancel(b.Ctx)
	w, err := b.Bucket.NewWriter(ctx, b.Folder+name, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		cancel()
		return nil, err
	}
	return &bucketFile{Writer: w, cancel: cancel}, nil
}

// bucketFile is one file of a BucketSink: a blob writer, which a cancelled context abandons.
type bucketFile struct {
	*blob.Writer
	cancel context.CancelFunc
}

func (f *bucketFile) Close() error {
	defer f.cancel()
	return f.Writer.Close()
}

// Abort abandons the file: the cancelled writer's Close writes nothing.
func (f *bucketFile) Abort() {
	f.cancel()
	_ = f.Writer.Close()
}

// Exporter writes the store's backups as exports into another bucket: a Purged tenant's final
// export, where the platform hands it over.
type Exporter struct {
	Store  *Store
	Bucket *blob.Bucket
}

// OpenExporter opens the bucket exportsURL names, to export the store's backups into.
func OpenExporter(ctx context.Context, store *Store, exportsURL string) (*Exporter, error) {
	bucket, err := secret.OpenBucket(ctx, exportsURL)
	if err != nil {
		return nil, fmt.Errorf("exports' bucket: %w", err)
	}
	return &Exporter{Store: store, Bucket: bucket}, nil
}

// Export writes the backup at location, of the tenant of that UID, into folder (relative, ending
// in /), and returns its manifest. A manifest already in the folder (an export cut short after
// it, or one of another backup) is deleted first, and the new one written last: the folder holds
// a manifest only once every dump it names is written whole. A backup whose manifest names
// another tenant is refused before anything is written.
func (e *Exporter) Export(ctx context.Context, location, folder, tenantUID string) (*Manifest, error) {
	if err := checkLocation(folder); err != nil {
		return nil, fmt.Errorf("export folder: %w", err)
	}
	m, err := e.Store.Manifest(ctx, location)
	if err != nil {
		return nil, err
	}
	if m.TenantUID != tenantUID {
		return nil, fmt.Errorf("the backup at %s is of tenant %s, not %s: refused", location, m.TenantUID, tenantUID)
	}
	if err := e.Bucket.Delete(ctx, folder+ManifestName); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return nil, fmt.Errorf("deleting the folder's earlier manifest: %w", err)
	}
	return Export(ctx, e.Store, location, BucketSink{Ctx: ctx, Bucket: e.Bucket, Folder: folder})
}

// Close releases the exports' bucket.
func (e *Exporter) Close() error { return e.Bucket.Close() }
