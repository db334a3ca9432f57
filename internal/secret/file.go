package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/insecurecleartextkeyset"
	"github.com/tink-crypto/tink-go/v2/keyset"
	corev1 "k8s.io/api/core/v1"
)

const fileSuffix = ".secret"

// FileStore keeps secrets in a local directory, one file per secret, in the same envelope format
// as the GCS store, with a local AES-256-GCM key as the key-encryption key. The key file is
// created on first use with mode 0600; whoever can read it can read every secret, so keep it
// apart from backups of the data directory.
type FileStore struct {
	dir     string
	keyFile string
	env     *envelope
}

// NewFileStore opens (creating when missing) a store in dir with its key in keyFile.
func NewFileStore(dir, keyFile string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating secret store directory: %w", err)
	}
	handle, err := loadOrCreateKey(keyFile)
	if err != nil {
		return nil, err
	}
	kek, err := aead.New(handle)
	if err != nil {
		return nil, err
	}
	return &FileStore{dir: dir, keyFile: keyFile, env: newEnvelope(kek)}, nil
}

func loadOrCreateKey(path string) (*keyset.Handle, error) {
	f, err := os.Open(path)
	if err == nil {
		defer f.Close()
		handle, err := insecurecleartextkeyset.Read(keyset.NewJSONReader(f))
		if err != nil {
			return nil, fmt.Errorf("reading secret store key %s: %w", path, err)
		}
		return handle, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("opening secret store key: %w", err)
	}
	handle, err := keyset.NewHandle(aead.AES256GCMKeyTemplate())
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	// O_EXCL: two processes starting at once must not each write a different key.
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadOrCreateKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("creating secret store key: %w", err)
	}
	if err := insecurecleartextkeyset.Write(handle, keyset.NewJSONWriter(out)); err != nil {
		out.Close()
		return nil, fmt.Errorf("writing secret store key: %w", err)
	}
	return handle, out.Close()
}

// Identity returns the store's identity, creating it on first use.
func (s *FileStore) Identity(context.Context) (string, error) {
	path := filepath.Join(s.dir, identityName)
	// Twice at most: the second read finds what this process or another wrote. A name that
	// exists and still reads as missing (a dangling link) is an error, not a loop.
	for attempt := 0; ; attempt++ {
		id, err := os.ReadFile(path)
		if err == nil {
			if len(id) == 0 {
				return "", fmt.Errorf("secret store identity %s is empty", path)
			}
			return string(id), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt > 0 {
			return "", fmt.Errorf("reading secret store identity: %w", err)
		}
		// O_EXCL: of two processes starting on an empty store, one writes the identity and the
		// other reads it. The identity is written whole before the file appears.
		tmp, err := os.CreateTemp(s.dir, ".identity-*")
		if err != nil {
			return "", fmt.Errorf("creating secret store identity: %w", err)
		}
		_, werr := tmp.WriteString(newIdentity())
		if err := errors.Join(werr, tmp.Close()); err != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("writing secret store identity: %w", err)
		}
		err = os.Link(tmp.Name(), path)
		os.Remove(tmp.Name())
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("writing secret store identity: %w", err)
		}
	}
}

func (s *FileStore) path(namespace, name string) string {
	return filepath.Join(s.dir, namespace, name+fileSuffix)
}

// Get returns a secret, or ErrNotFound.
func (s *FileStore) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := validateKey(namespace, name); err != nil {
		return nil, err
	}
	blob, err := os.ReadFile(s.path(namespace, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s/%s: %w", namespace, name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return s.env.open(ctx, namespace, name, blob)
}

// List returns the namespace's secrets, by name.
func (s *FileStore) List(ctx context.Context, namespace string) ([]*corev1.Secret, error) {
	if err := validateKey(namespace, "x"); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(s.dir, namespace))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), fileSuffix); ok && e.Type().IsRegular() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]*corev1.Secret, 0, len(names))
	for _, n := range names {
		sec, err := s.Get(ctx, namespace, n)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	return out, nil
}

// Put writes a secret atomically (a reader never sees half a file).
func (s *FileStore) Put(ctx context.Context, sec *corev1.Secret) error {
	if err := validateKey(sec.Namespace, sec.Name); err != nil {
		return err
	}
	blob, err := s.env.seal(ctx, sec)
	if err != nil {
		return err
	}
	dir := filepath.Join(s.dir, sec.Namespace)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(blob); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Under the store's lock: a conditional delete compares and removes with no write between.
	return s.locked(func() error { return os.Rename(tmp.Name(), s.path(sec.Namespace, sec.Name)) })
}

// Delete removes a secret, or returns ErrNotFound.
func (s *FileStore) Delete(_ context.Context, namespace, name string) error {
	if err := validateKey(namespace, name); err != nil {
		return err
	}
	err := os.Remove(s.path(namespace, name))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s/%s: %w", namespace, name, ErrNotFound)
	}
	return err
}

// DeleteIf removes a secret only while the stored copy passes match. The copy is tested outside
// the store's lock (match may be slow) and removed under it only if the file still holds the very
// bytes tested: every Put seals with a fresh key, so a rewrite of the same values differs too.
// A copy rewritten in between is tested again.
func (s *FileStore) DeleteIf(ctx context.Context, namespace, name string, match func(*corev1.Secret) bool) error {
	if err := validateKey(namespace, name); err != nil {
		return err
	}
	path := s.path(namespace, name)
	for range conditionalDeleteAttempts {
		blob, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s/%s: %w", namespace, name, ErrNotFound)
		}
		if err != nil {
			return err
		}
		sec, err := s.env.open(ctx, namespace, name, blob)
		if err != nil {
			return err
		}
		if !match(sec) {
			return fmt.Errorf("%s/%s: %w", namespace, name, ErrPreconditionFailed)
		}
		removed := false
		err = s.locked(func() error {
			now, err := os.ReadFile(path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("%s/%s: %w", namespace, name, ErrNotFound)
			case err != nil:
				return err
			case !bytes.Equal(now, blob):
				return nil
			}
			removed = true
			return os.Remove(path)
		})
		if err != nil || removed {
			return err
		}
	}
	return fmt.Errorf("%s/%s: rewritten each time it was about to be deleted; not deleted", namespace, name)
}
