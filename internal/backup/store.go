package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tink-crypto/tink-go/v2/tink"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/landlord-dev/landlord/internal/secret"
)

// Store is a bucket of backups and the key-encryption key their data keys are wrapped with.
type Store struct {
	bucket *blob.Bucket
	key    tink.AEADWithContext
}

// ErrNoManifest means a location holds no whole backup: none was taken there, or it failed, or
// it is being deleted.
var ErrNoManifest = errors.New("no backup manifest")

// manifestFormat is the Format of the manifests this release writes and reads.
const manifestFormat = 1

// NewStore returns a store of bucket under key. The store owns both: Close closes the bucket,
// and the key when it has a Close method.
func NewStore(bucket *blob.Bucket, key tink.AEADWithContext) *Store {
	return &Store{bucket: bucket, key: key}
}

// OpenStore opens the bucket objectsURL names and the key-encryption key keyURL names, as the
// secret store's are.
func OpenStore(ctx context.Context, objectsURL, keyURL string) (*Store, error) {
	bucket, err := secret.OpenBucket(ctx, objectsURL)
	if err != nil {
		return nil, fmt.Errorf("backup store: %w", err)
	}
	key, err := secret.OpenKey(ctx, keyURL)
	if err != nil {
		_ = bucket.Close()
		return nil, fmt.Errorf("backup store: %w", err)
	}
	return NewStore(bucket, key), nil
}

// Close releases the bucket's and the key's clients.
func (s *Store) Close() error {
	err := s.bucket.Close()
	if c, ok := s.key.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// checkLocation refuses a location that is not a folder of its own: Delete removes everything
// under it, and "" or "abc" would reach other backups.
func checkLocation(location string) error {
	switch {
	case location == "" || !strings.HasSuffix(location, "/"):
		return fmt.Errorf("backup location %q must be a folder, ending in /", location)
	case strings.HasPrefix(location, "/"):
		return fmt.Errorf("backup location %q must be relative to the store", location)
	}
	for _, part := range strings.Split(strings.TrimSuffix(location, "/"), "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("backup location %q has an empty, . or .. part", location)
		}
	}
	return nil
}

// Manifest reads the manifest of the backup at location; errors.Is(err, ErrNoManifest) when it
// has none.
func (s *Store) Manifest(ctx context.Context, location string) (*Manifest, error) {
	if err := checkLocation(location); err != nil {
		return nil, err
	}
	data, err := s.bucket.ReadAll(ctx, location+ManifestName)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%w at %s", ErrNoManifest, location)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", location, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("the manifest of %s is not valid JSON: %w", location, err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("the manifest of %s has format %d; this release reads format %d", location, m.Format, manifestFormat)
	}
	return &m, nil
}

func (s *Store) writeManifest(ctx context.Context, location string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := s.bucket.WriteAll(ctx, location+ManifestName, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("writing the manifest of %s: %w", location, err)
	}
	return nil
}

// Delete removes every object under location. The manifest goes first, so a backup whose
// deletion stops half-way is never counted whole.
func (s *Store) Delete(ctx context.Context, location string) error {
	if err := checkLocation(location); err != nil {
		return err
	}
	if err := s.deleteObject(ctx, location+ManifestName); err != nil {
		return err
	}
	var errs []error
	it := s.bucket.List(&blob.ListOptions{Prefix: location})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("listing %s: %w", location, err))...)
		}
		errs = append(errs, s.deleteObject(ctx, obj.Key))
	}
	return errors.Join(errs...)
}

func (s *Store) deleteObject(ctx context.Context, key string) error {
	err := s.bucket.Delete(ctx, key)
	if err == nil || gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	return fmt.Errorf("deleting %s: %w", key, err)
}
