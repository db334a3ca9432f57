package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/tink-crypto/tink-go/v2/tink"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/landlord-dev/landlord/internal/secret"
)

// Store is a bucket of backups. The operator's holds the key-encryption key and the tenants'
// keys (keys.go); a Job's holds neither, only the data key of the tenant it serves.
type Store struct {
	bucket *blob.Bucket
	// key is the key-encryption key: nil in a Job, unless it restores a dump sealed before
	// tenants had keys of their own.
	key tink.AEADWithContext
	// keys holds the tenants' wrapped keys, under keysPrefix; nil in a Job.
	keys       *blob.Bucket
	keysPrefix string
	// keyLocks holds a mutex per tenant UID.
	keyLocks sync.Map
	// tenant is the data key of the tenant a Job serves.
	tenant tink.AEAD
}

// ErrNoManifest means a location holds no whole backup: none was taken there, or it failed, or
// it is being deleted.
var ErrNoManifest = errors.New("no backup manifest")

// ManifestFormat is the Format of the manifests this release writes: 2, whose dumps are sealed
// under the tenant's data key. It reads 1 too, whose dumps were sealed under the store's key.
const (
	ManifestFormat   = 2
	manifestFormatV1 = 1
)

// OpenStore opens the bucket objectsURL names and the key-encryption key keyURL names, as the
// secret store's are, and keeps the tenants' keys in the bucket keysURL names, or under keys/ in
// the store's bucket when it is empty. A Job's store names neither key nor keys: keyURL empty
// opens the bucket alone.
func OpenStore(ctx context.Context, objectsURL, keyURL, keysURL string) (*Store, error) {
	bucket, err := secret.OpenBucket(ctx, objectsURL)
	if err != nil {
		return nil, fmt.Errorf("backup store: %w", err)
	}
	s := &Store{bucket: bucket}
	if keyURL == "" {
		return s, nil
	}
	key, err := secret.OpenKey(ctx, keyURL)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("backup store: %w", err)
	}
	s.key = key
	s.keys, s.keysPrefix = bucket, keysPrefix
	if keysURL != "" {
		if s.keys, err = secret.OpenBucket(ctx, keysURL); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("backup store's keys: %w", err)
		}
		s.keysPrefix = ""
	}
	return s, nil
}

// Close releases the buckets' and the key's clients.
func (s *Store) Close() error {
	err := s.bucket.Close()
	if s.keys != nil && s.keys != s.bucket {
		err = errors.Join(err, s.keys.Close())
	}
	if c, ok := s.key.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// forTenant is the store a Job seals and opens one tenant's dumps with: its data key, as the
// plan carries it.
func (s *Store) forTenant(plain []byte) (*Store, error) {
	a, err := tenantAEAD(plain)
	if err != nil {
		return nil, err
	}
	return &Store{bucket: s.bucket, key: s.key, tenant: a}, nil
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
	if m.Format != ManifestFormat && m.Format != manifestFormatV1 {
		return nil, fmt.Errorf("the manifest of %s has format %d; this release reads formats %d and %d", location, m.Format, manifestFormatV1, ManifestFormat)
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
