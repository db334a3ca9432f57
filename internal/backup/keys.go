package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/insecurecleartextkeyset"
	"github.com/tink-crypto/tink-go/v2/keyset"
	"github.com/tink-crypto/tink-go/v2/tink"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Each tenant's backups are sealed under a data key of the tenant's own: an AEAD keyset, kept
// wrapped by the store's key-encryption key at keys/<tenant UID> (in the store's bucket, or in
// a bucket of its own). Every dump's streaming key is wrapped by it. So one tenant's backups can
// be made unreadable alone, wherever copies of them are (a replica, an object version, an
// export): destroying the tenant's key at its purge is enough. And a Job is handed its tenant's
// key alone, never the key-encryption key: it can open no other tenant's dumps.

// ErrKeyDestroyed means a tenant has no data key: it was destroyed when the tenant was purged
// (or its backups expired after), or none was ever made, and no backup sealed under one can be
// read.
var ErrKeyDestroyed = errors.New("the tenant's data key does not exist (destroyed at its purge, or never made)")

// keysPrefix is where the tenants' keys are kept in the store's own bucket.
const keysPrefix = "keys/"

// keyObject is the name of a tenant's wrapped key in the keys' bucket.
func (s *Store) keyObject(tenantUID string) (string, error) {
	if tenantUID == "" || bytes.ContainsAny([]byte(tenantUID), "/\\") || tenantUID[0] == '.' {
		return "", fmt.Errorf("tenant UID %q cannot name a key", tenantUID)
	}
	return s.keysPrefix + tenantUID, nil
}

// TenantKey returns the tenant's data key in clear, as a Job's plan carries it; with create, one
// is made and kept first if the tenant has none. errors.Is(err, ErrKeyDestroyed) when it has none
// and create is false.
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
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	handle, err := s.readKey(ctx, name)
	if errors.Is(err, ErrKeyDestroyed) && create {
		handle, err = s.makeKey(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	var clear bytes.Buffer
	if err := insecurecleartextkeyset.Write(handle, keyset.NewBinaryWriter(&clear)); err != nil {
		return nil, err
	}
	return clear.Bytes(), nil
}

func (s *Store) readKey(ctx context.Context, name string) (*keyset.Handle, error) {
	wrapped, err := s.keys.ReadAll(ctx, name)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, ErrKeyDestroyed
	}
	if err != nil {
		return nil, fmt.Errorf("reading the tenant's data key %s: %w", name, err)
	}
	handle, err := keyset.ReadWithContext(ctx, keyset.NewBinaryReader(bytes.NewReader(wrapped)), s.key, nil)
	if err != nil {
		return nil, fmt.Errorf("unwrapping the tenant's data key %s: %w", name, err)
	}
	return handle, nil
}

// makeKey makes a tenant's key and keeps it, wrapped, unless one appeared meanwhile (a store
// that honours conditional writes says so), which is then the tenant's.
func (s *Store) makeKey(ctx context.Context, name string) (*keyset.Handle, error) {
	handle, err := keyset.NewHandle(aead.AES256GCMKeyTemplate())
	if err != nil {
		return nil, fmt.Errorf("making a data key: %w", err)
	}
	var wrapped bytes.Buffer
	if err := handle.WriteWithContext(ctx, keyset.NewBinaryWriter(&wrapped), s.key, nil); err != nil {
		return nil, fmt.Errorf("wrapping the tenant's data key: %w", err)
	}
	err = s.keys.WriteAll(ctx, name, wrapped.Bytes(), &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return s.readKey(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("keeping the tenant's data key %s: %w", name, err)
	}
	return handle, nil
}

// DestroyTenantKey deletes the tenant's key: every backup sealed under it, and every copy of
// one, is unreadable from then on. It reports success only once the store no longer has it.
func (s *Store) DestroyTenantKey(ctx context.Context, tenantUID string) error {
	if s.keys == nil {
		return errors.New("this store keeps no tenants' keys")
	}
	name, err := s.keyObject(tenantUID)
	if err != nil {
		return err
	}
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if err := s.keys.Delete(ctx, name); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("destroying the tenant's data key %s: %w", name, err)
	}
	if ok, err := s.keys.Exists(ctx, name); err != nil || ok {
		return fmt.Errorf("the tenant's data key %s is still in the store after its deletion (%v)", name, err)
	}
	return nil
}

// tenantAEAD reads a tenant's key as a plan carries it.
func tenantAEAD(clear []byte) (tink.AEAD, error) {
	if len(clear) == 0 {
		return nil, errors.New("the plan holds no tenant data key")
	}
	handle, err := insecurecleartextkeyset.Read(keyset.NewBinaryReader(bytes.NewReader(clear)))
	if err != nil {
		return nil, fmt.Errorf("reading the plan's tenant data key: %w", err)
	}
	return aead.New(handle)
}
