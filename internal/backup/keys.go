package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/insecurecleartextkeyset"
	"github.com/tink-crypto/tink-go/v2/keyset"
	"github.com/tink-crypto/tink-go/v2/tink"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Each tenant's backups are sealed under a data key of the tenant's own: an AEAD keyset, kept
// wrapped by the store's key-encryption key at keys/<tenant UID> (in the store's bucket, or in
// a bucket of its own), together with the tenant's UID, so that a key copied over another
// tenant's is refused rather than used. Every dump's streaming key is wrapped by it. So one tenant's backups can
// be made unreadable alone, wherever copies of them are (a replica, an object version, an
// export): destroying the tenant's key at its purge is enough. And a Job is handed its tenant's
// key alone, never the key-encryption key: it can open no other tenant's dumps.

// ErrKeyDestroyed means a tenant's data key was destroyed when the tenant was purged: no backup
// sealed under it can be read, and no new one is made for the tenant.
var ErrKeyDestroyed = errors.New("the tenant's data key was destroyed when the tenant was purged")

// ErrNoKey means a tenant has no data key, and none was destroyed: none was ever made (its
// backups are older than tenants' keys), or it was deleted from the keys' store by hand.
var ErrNoKey = errors.New("the tenant has no data key in the keys' store")

// keysPrefix is where the tenants' keys are kept in the store's own bucket.
const keysPrefix = "keys/"

// A kept key is the key-encryption key's ciphertext of keyHeader, the tenant's UID, a newline
// and the keyset in clear; a destroyed key leaves tombstone in its place, which holds no key and
// keeps a key from ever being made again for the purged tenant (a backup started from a stale
// view of it fails instead).
const (
	keyHeader = "landlord-tenant-key-v1\n"
	tombstone = "landlord-tenant-key-destroyed\n"
)

// keyObject is the name of a tenant's wrapped key in the keys' bucket.
func (s *Store) keyObject(tenantUID string) (string, error) {
	if tenantUID == "" || bytes.ContainsAny([]byte(tenantUID), "/\\") || tenantUID[0] == '.' {
		return "", fmt.Errorf("tenant UID %q cannot name a key", tenantUID)
	}
	return s.keysPrefix + tenantUID, nil
}

// TenantKey returns the tenant's data key in clear, as a Job's plan carries it; with create, one
// is made and kept first if the tenant has none. errors.Is(err, ErrKeyDestroyed) once the
// tenant's key was destroyed (create or not), ErrNoKey when it has none and create is false.
func (s *Store) TenantKey(ctx context.Context, tenantUID string, create bool) ([]byte, error) {
	if s.keys == nil || s.key == nil {
		return nil, errors.New("this store keeps no tenants' keys: it was opened with no key-encryption key")
	}
	name, err := s.keyObject(tenantUID)
	if err != nil {
		return nil, err
	}
	// One key per tenant: two backups started at once must not each make one, the second's
	// replacing the first's under the first's dumps.
	unlock := s.lockKey(tenantUID)
	defer unlock()
	plain, err := s.readKey(ctx, name, tenantUID)
	if errors.Is(err, ErrNoKey) && create {
		plain, err = s.makeKey(ctx, name, tenantUID)
	}
	return plain, err
}

// lockKey serialises the calls about one tenant's key in this process.
func (s *Store) lockKey(tenantUID string) func() {
	mu, _ := s.keyLocks.LoadOrStore(tenantUID, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

func (s *Store) readKey(ctx context.Context, name, tenantUID string) ([]byte, error) {
	wrapped, err := s.keys.ReadAll(ctx, name)
	switch {
	case gcerrors.Code(err) == gcerrors.NotFound:
		return nil, ErrNoKey
	case err != nil:
		return nil, fmt.Errorf("reading the tenant's data key %s: %w", name, err)
	case string(wrapped) == tombstone:
		return nil, ErrKeyDestroyed
	}
	payload, err := s.key.DecryptWithContext(ctx, wrapped, nil)
	if err != nil {
		return nil, fmt.Errorf("unwrapping the tenant's data key %s: %w", name, err)
	}
	plain, ok := bytes.CutPrefix(payload, []byte(keyHeader+tenantUID+"\n"))
	if !ok {
		// Another tenant's key copied over this one's, or something else: never used.
		return nil, fmt.Errorf("the data key kept at %s is not tenant %s's", name, tenantUID)
	}
	if _, err := tenantAEAD(plain); err != nil {
		return nil, fmt.Errorf("the data key kept at %s: %w", name, err)
	}
	return plain, nil
}

// makeKey makes a tenant's key and keeps it, wrapped, unless one appeared meanwhile (a store
// that honours conditional writes says so), which is then the tenant's.
func (s *Store) makeKey(ctx context.Context, name, tenantUID string) ([]byte, error) {
	handle, err := keyset.NewHandle(aead.AES256GCMKeyTemplate())
	if err != nil {
		return nil, fmt.Errorf("making a data key: %w", err)
	}
	var plain bytes.Buffer
	if err := insecurecleartextkeyset.Write(handle, keyset.NewBinaryWriter(&plain)); err != nil {
		return nil, err
	}
	wrapped, err := s.key.EncryptWithContext(ctx, append([]byte(keyHeader+tenantUID+"\n"), plain.Bytes()...), nil)
	if err != nil {
		return nil, fmt.Errorf("wrapping the tenant's data key: %w", err)
	}
	err = s.keys.WriteAll(ctx, name, wrapped, &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return s.readKey(ctx, name, tenantUID)
	}
	if err != nil {
		return nil, fmt.Errorf("keeping the tenant's data key %s: %w", name, err)
	}
	return plain.Bytes(), nil
}

// DestroyTenantKey destroys the tenant's key: every backup sealed under it, and every copy of
// one, is unreadable from then on, and no key is made for the tenant again. The key's object is
// overwritten with a tombstone, then read back: it reports success only once the store holds no
// key there. (A store that keeps earlier versions of objects keeps the key too: the keys' store
// must not.)
func (s *Store) DestroyTenantKey(ctx context.Context, tenantUID string) error {
	if s.keys == nil {
		return errors.New("this store keeps no tenants' keys")
	}
	name, err := s.keyObject(tenantUID)
	if err != nil {
		return err
	}
	unlock := s.lockKey(tenantUID)
	defer unlock()
	if err := s.keys.WriteAll(ctx, name, []byte(tombstone), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
		return fmt.Errorf("destroying the tenant's data key %s: %w", name, err)
	}
	if got, err := s.keys.ReadAll(ctx, name); err != nil || string(got) != tombstone {
		return fmt.Errorf("the tenant's data key %s is not destroyed after its deletion (%v)", name, err)
	}
	return nil
}

// tenantAEAD reads a tenant's key as a plan carries it.
func tenantAEAD(plain []byte) (tink.AEAD, error) {
	if len(plain) == 0 {
		return nil, errors.New("the plan holds no tenant data key")
	}
	handle, err := insecurecleartextkeyset.Read(keyset.NewBinaryReader(bytes.NewReader(plain)))
	if err != nil {
		return nil, fmt.Errorf("reading the plan's tenant data key: %w", err)
	}
	return aead.New(handle)
}
