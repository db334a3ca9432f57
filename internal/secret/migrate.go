package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	corev1 "k8s.io/api/core/v1"
)

// migratedFromName is where a store filled by a migration keeps the identity of the store it
// was filled from: like the identity, a name no namespace can take.
const migratedFromName = ".landlord-migrated-from"

// RecordKey names one record of a store.
type RecordKey struct {
	Namespace, Name string
}

func (k RecordKey) String() string { return k.Namespace + "/" + k.Name }

// Contents is everything a store holds, as a migration sees it.
type Contents struct {
	// Identity is the store's identity, "" while it has none.
	Identity string
	// MigratedFrom is the identity of the store a migration fills this one from, "" when none.
	MigratedFrom string
	// Records are the secrets it holds, sorted.
	Records []RecordKey
	// Foreign names, relative to the store's root, whatever it holds that is neither a record
	// nor the store's own: the data of another program, or a store of another layout.
	Foreign []string
}

// Empty is a store that holds nothing at all.
func (c Contents) Empty() bool {
	return c.Identity == "" && c.MigratedFrom == "" && len(c.Records) == 0 && len(c.Foreign) == 0
}

// Migratable is a store a migration can copy from and into: it lists whatever it holds, and
// notes the store it is being filled from.
type Migratable interface {
	Store
	Contents(ctx context.Context) (Contents, error)
	// MarkMigratedFrom notes, on a store that has no such note, the identity of the store a
	// migration is about to fill it from; it fails when the store has one already.
	MarkMigratedFrom(ctx context.Context, source string) error
}

// ErrMigrationNoted is MarkMigratedFrom's answer on a store that already notes a migration.
var ErrMigrationNoted = errors.New("the store already notes the store it was filled from")

type objectKind int

const (
	foreignObject objectKind = iota
	identityObject
	migratedFromObject
	recordObject
)

// kindOf sorts an object by its name relative to the store's root.
func kindOf(rel string) (objectKind, RecordKey) {
	switch rel {
	case identityName:
		return identityObject, RecordKey{}
	case migratedFromName:
		return migratedFromObject, RecordKey{}
	}
	namespace, name, ok := strings.Cut(rel, "/")
	if ok && validateKey(namespace, name) == nil {
		return recordObject, RecordKey{Namespace: namespace, Name: name}
	}
	return foreignObject, RecordKey{}
}

// add files one object of the store, reading the small ones it keeps of its own.
func (c *Contents) add(rel string, read func() ([]byte, error)) error {
	kind, key := kindOf(rel)
	switch kind {
	case identityObject, migratedFromObject:
		data, err := read()
		if err != nil {
			return err
		}
		if kind == identityObject {
			c.Identity = string(data)
		} else {
			c.MigratedFrom = string(data)
		}
	case recordObject:
		c.Records = append(c.Records, key)
	default:
		c.Foreign = append(c.Foreign, rel)
	}
	return nil
}

func (c *Contents) sort() {
	slices.SortFunc(c.Records, func(a, b RecordKey) int { return strings.Compare(a.String(), b.String()) })
	slices.Sort(c.Foreign)
}

// Contents lists the directory. The store's lock, its key file when it is kept in the directory,
// files a write has not finished, and a volume's lost+found are the store's own.
func (s *FileStore) Contents(context.Context) (Contents, error) {
	var c Contents
	top, err := os.ReadDir(s.dir)
	if err != nil {
		return c, fmt.Errorf("listing secret store directory %s: %w", s.dir, err)
	}
	for _, e := range top {
		name := e.Name()
		path := filepath.Join(s.dir, name)
		switch {
		case name == ".lock" || strings.HasPrefix(name, ".identity-") || path == filepath.Clean(s.keyFile) || name == "lost+found":
			continue
		case e.IsDir() && validateKey(name, "x") == nil:
			if err := s.addNamespace(&c, name); err != nil {
				return c, err
			}
			continue
		}
		if err := c.add(name, func() ([]byte, error) { return os.ReadFile(path) }); err != nil {
			return c, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	c.sort()
	return c, nil
}

func (s *FileStore) addNamespace(c *Contents, namespace string) error {
	entries, err := os.ReadDir(filepath.Join(s.dir, namespace))
	if err != nil {
		return fmt.Errorf("listing secret store directory %s: %w", s.dir, err)
	}
	for _, e := range entries {
		name, isRecord := strings.CutSuffix(e.Name(), fileSuffix)
		switch {
		case strings.HasPrefix(e.Name(), ".put-"):
		case isRecord && e.Type().IsRegular() && validateKey(namespace, name) == nil:
			c.Records = append(c.Records, RecordKey{Namespace: namespace, Name: name})
		default:
			c.Foreign = append(c.Foreign, namespace+"/"+e.Name())
		}
	}
	return nil
}

// MarkMigratedFrom writes the note once: of two writers, the second fails.
func (s *FileStore) MarkMigratedFrom(_ context.Context, source string) error {
	f, err := os.OpenFile(filepath.Join(s.dir, migratedFromName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ErrMigrationNoted
	}
	if err != nil {
		return fmt.Errorf("noting the store a migration fills %s from: %w", s.dir, err)
	}
	_, werr := f.WriteString(source)
	return errors.Join(werr, f.Close())
}

// Contents lists every object under the store's prefix.
func (s *GCSStore) Contents(ctx context.Context) (Contents, error) {
	var c Contents
	it := s.bucket.Objects(ctx, &storage.Query{Prefix: s.prefix})
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			c.sort()
			return c, nil
		}
		if err != nil {
			return c, s.explain(err, "listing")
		}
		rel := strings.TrimPrefix(attrs.Name, s.prefix)
		err = c.add(rel, func() ([]byte, error) {
			r, err := s.bucket.Object(attrs.Name).NewReader(ctx)
			if err != nil {
				return nil, err
			}
			defer r.Close()
			return io.ReadAll(r)
		})
		if err != nil {
			return c, s.explain(err, rel)
		}
	}
}

// MarkMigratedFrom writes the note only where there is none (ifGenerationMatch=0).
func (s *GCSStore) MarkMigratedFrom(ctx context.Context, source string) error {
	w := s.bucket.Object(s.prefix + migratedFromName).If(storage.Conditions{DoesNotExist: true}).NewWriter(ctx)
	w.ContentType = "text/plain"
	_, werr := w.Write([]byte(source))
	err := errors.Join(werr, w.Close())
	var gerr *googleapi.Error
	if errors.As(err, &gerr) && gerr.Code == 412 {
		return ErrMigrationNoted
	}
	return s.explain(err, migratedFromName)
}

// Contents lists every object under the store's prefix.
func (s *BucketStore) Contents(ctx context.Context) (Contents, error) {
	var c Contents
	it := s.bucket.List(nil)
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			c.sort()
			return c, nil
		}
		if err != nil {
			return c, s.explain(err, "listing")
		}
		if obj.IsDir {
			continue
		}
		if err := c.add(obj.Key, func() ([]byte, error) { return s.bucket.ReadAll(ctx, obj.Key) }); err != nil {
			return c, s.explain(err, obj.Key)
		}
	}
}

// MarkMigratedFrom writes the note only where there is none.
func (s *BucketStore) MarkMigratedFrom(ctx context.Context, source string) error {
	err := s.bucket.WriteAll(ctx, migratedFromName, []byte(source), &blob.WriterOptions{ContentType: "text/plain", IfNotExist: true})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return ErrMigrationNoted
	}
	return s.explain(err, migratedFromName)
}

// MigrationRefusedError is a migration refused before anything was written, because the target
// is not a store it may fill.
type MigrationRefusedError struct {
	Message string
}

func (e *MigrationRefusedError) Error() string { return e.Message }

// Migration copies one store into another.
type Migration struct {
	From, To Migratable
	// Timeout bounds each call to either store, as secrets.store.timeout does the operator's.
	Timeout time.Duration
	// Progress, when set, hears of each record as it is done: "copied", "unchanged" (the target
	// held an equal copy), "removed" (the target held a record the source no longer does).
	Progress func(key RecordKey, outcome string)
}

// MigrationReport is what a migration did.
type MigrationReport struct {
	// From and To are the two stores' identities.
	From, To string
	// Resumed is a migration that found the target already noting the source: an earlier run
	// was interrupted, or completed.
	Resumed                    bool
	Copied, Unchanged, Removed int
}

// Run copies every record of From into To, each re-encrypted under To's key-encryption key
// (To seals it) and read back through that key to check it equals the original. To must be
// empty, or note From as the store it is being filled from: then an earlier run is resumed, and
// what it copied is kept where it still equals the source, copied again where it does not, and
// removed where the source no longer holds it. Any other target — one with an identity of its
// own, records or objects of any other kind, or the note of another source — is refused with
// nothing written. Run changes nothing in From (but writes the identity of a store no cluster
// has used).
func (m Migration) Run(ctx context.Context) (MigrationReport, error) {
	var report MigrationReport
	from, to := WithTimeout(m.From, m.Timeout), WithTimeout(m.To, m.Timeout)
	// A store a cluster uses has its identity; one only ever written by landlordctl gets it now.
	if _, err := from.Identity(ctx); err != nil {
		return report, fmt.Errorf("reading the source store's identity: %w", err)
	}
	src, err := m.contents(ctx, m.From)
	if err != nil {
		return report, fmt.Errorf("listing the source store: %w", err)
	}
	dst, err := m.contents(ctx, m.To)
	if err != nil {
		return report, fmt.Errorf("listing the target store: %w", err)
	}
	if err := checkTarget(src, dst); err != nil {
		return report, err
	}
	report.From = src.Identity
	report.Resumed = dst.MigratedFrom == src.Identity
	if !report.Resumed {
		if err := m.bounded(ctx, func(ctx context.Context) error { return m.To.MarkMigratedFrom(ctx, src.Identity) }); err != nil {
			return report, fmt.Errorf("noting the migration on the target store: %w", err)
		}
	}
	if report.To, err = to.Identity(ctx); err != nil {
		return report, fmt.Errorf("reading the target store's identity: %w", err)
	}

	copied := make(map[RecordKey]bool, len(src.Records))
	for _, key := range src.Records {
		outcome, err := copyRecord(ctx, from, to, key)
		if err != nil {
			return report, err
		}
		switch outcome {
		case "":
			continue // deleted from the source since it was listed
		case "copied":
			report.Copied++
		case "unchanged":
			report.Unchanged++
		}
		copied[key] = true
		m.progress(key, outcome)
	}
	for _, key := range dst.Records {
		if copied[key] {
			continue
		}
		// Only an earlier run of this migration wrote records here (the target noted the
		// source before it held any), so this one left the source since.
		if err := to.Delete(ctx, key.Namespace, key.Name); err != nil && !errors.Is(err, ErrNotFound) {
			return report, fmt.Errorf("removing %s, which the source store no longer holds, from the target store: %w", key, err)
		}
		report.Removed++
		m.progress(key, "removed")
	}
	if err := verifyCopy(ctx, m, from, to); err != nil {
		return report, err
	}
	return report, nil
}

// ErrSourceChanged is Run's answer when the source store changed while it was copied: something
// (an operator still running) writes to it, and a switch now would lose what it wrote.
var ErrSourceChanged = errors.New("the source store changed while it was copied: is the operator still running? Scale it to zero replicas and run the migration again; nothing was switched")

// verifyCopy reads the source again, whole, once everything is copied, and holds the target to
// it: every record there, equal, and no other. Any difference is a write made to the source
// during the copy, by an operator still running.
func verifyCopy(ctx context.Context, m Migration, from, to Store) error {
	src, err := m.contents(ctx, m.From)
	if err != nil {
		return fmt.Errorf("listing the source store again: %w", err)
	}
	dst, err := m.contents(ctx, m.To)
	if err != nil {
		return fmt.Errorf("listing the target store again: %w", err)
	}
	if !slices.Equal(src.Records, dst.Records) {
		return ErrSourceChanged
	}
	for _, key := range src.Records {
		want, err := from.Get(ctx, key.Namespace, key.Name)
		if err != nil {
			return fmt.Errorf("reading %s from the source store again: %w", key, err)
		}
		have, err := to.Get(ctx, key.Namespace, key.Name)
		if err != nil {
			return fmt.Errorf("reading %s from the target store again: %w", key, err)
		}
		if !sameRecord(have, want) {
			return ErrSourceChanged
		}
	}
	return nil
}

// checkTarget refuses a target that holds anything but an earlier run's copy of src.
func checkTarget(src, dst Contents) error {
	refuse := func(format string, args ...any) error {
		return &MigrationRefusedError{Message: "the target store " + fmt.Sprintf(format, args...) + ": nothing was written"}
	}
	switch {
	case dst.Identity != "" && dst.Identity == src.Identity:
		return refuse("is the source store itself (identity %s)", src.Identity)
	case len(dst.Foreign) > 0:
		return refuse("holds %d objects that are not secret store records (%s): it holds other data", len(dst.Foreign), firstFew(dst.Foreign))
	case dst.MigratedFrom == src.Identity:
		return nil
	case dst.MigratedFrom != "":
		return refuse("was filled from another store (identity %s), not this one (identity %s)", dst.MigratedFrom, src.Identity)
	case dst.Identity != "":
		return refuse("is a store of its own (identity %s, %d records): a cluster may use it", dst.Identity, len(dst.Records))
	case len(dst.Records) > 0:
		return refuse("holds %d records of no known store", len(dst.Records))
	}
	return nil
}

func firstFew(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
}

// copyRecord copies one record and reads the copy back. It returns "" for a record the source
// no longer holds.
func copyRecord(ctx context.Context, from, to Store, key RecordKey) (string, error) {
	want, err := from.Get(ctx, key.Namespace, key.Name)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s from the source store: %w", key, err)
	}
	if have, err := to.Get(ctx, key.Namespace, key.Name); err == nil && sameRecord(have, want) {
		return "unchanged", nil
	}
	if err := to.Put(ctx, want); err != nil {
		return "", fmt.Errorf("writing %s to the target store: %w", key, err)
	}
	have, err := to.Get(ctx, key.Namespace, key.Name)
	if err != nil {
		return "", fmt.Errorf("reading back the copy of %s from the target store: %w", key, err)
	}
	if !sameRecord(have, want) {
		return "", fmt.Errorf("the copy of %s in the target store reads back different from the original", key)
	}
	return "copied", nil
}

// sameRecord compares what a store keeps of a secret.
func sameRecord(a, b *corev1.Secret) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.Type == b.Type &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		maps.EqualFunc(a.Data, b.Data, bytes.Equal)
}

func (m Migration) contents(ctx context.Context, s Migratable) (Contents, error) {
	var c Contents
	err := m.bounded(ctx, func(ctx context.Context) error {
		var err error
		c, err = s.Contents(ctx)
		return err
	})
	return c, err
}

// bounded gives a call the per-call deadline.
func (m Migration) bounded(ctx context.Context, call func(context.Context) error) error {
	if m.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Timeout)
		defer cancel()
	}
	return call(ctx)
}

func (m Migration) progress(key RecordKey, outcome string) {
	if m.Progress != nil {
		m.Progress(key, outcome)
	}
}
