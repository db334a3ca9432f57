package secret

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gocloud.dev/gcerrors"
	"gocloud.dev/secrets"
)

// keeperAEAD is a key-encryption key that never leaves its key service (AWS KMS, Azure Key
// Vault, Cloud KMS, Vault's transit engine), reached through the Go CDK: it wraps and unwraps the
// data keys of the envelope. Each call ends with the store call that made it, and within
// DefaultKMSTimeout when that call has no deadline of its own.
type keeperAEAD struct {
	keeper  *secrets.Keeper
	url     string
	timeout time.Duration
}

// Key is a key-encryption key reached by URL, for envelopes of Landlord's own (a tenant's
// backups): it encrypts and decrypts data keys, never the data itself.
type Key struct{ keeperAEAD }

// Close releases the key service's client.
func (k *Key) Close() error { return k.keeper.Close() }

// errAssociatedData is never returned in practice: the envelope wraps data keys without
// associated data, and a key service reached through the Go CDK takes none.
var errAssociatedData = errors.New("a key-encryption key reached by URL takes no associated data")

func (k *keeperAEAD) EncryptWithContext(ctx context.Context, plaintext, associatedData []byte) ([]byte, error) {
	if len(associatedData) > 0 {
		return nil, errAssociatedData
	}
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	out, err := k.keeper.Encrypt(ctx, plaintext)
	if err != nil {
		return nil, k.explain("encrypt", err)
	}
	return out, nil
}

func (k *keeperAEAD) DecryptWithContext(ctx context.Context, ciphertext, associatedData []byte) ([]byte, error) {
	if len(associatedData) > 0 {
		return nil, errAssociatedData
	}
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	out, err := k.keeper.Decrypt(ctx, ciphertext)
	if err != nil {
		return nil, k.explain("decrypt", err)
	}
	return out, nil
}

// explain names the key and what the operator's identity lacks. The key service's messages
// carry neither plaintexts nor key material.
func (k *keeperAEAD) explain(op string, err error) error {
	switch gcerrors.Code(err) {
	case gcerrors.PermissionDenied:
		return fmt.Errorf("permission denied to %s with key %s (grant the operator's identity encrypt and decrypt on it): %w", op, k.url, err)
	case gcerrors.NotFound:
		return fmt.Errorf("key %s does not exist: %w", k.url, err)
	}
	return fmt.Errorf("%s with key %s: %w", op, k.url, err)
}
