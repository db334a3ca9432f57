package backup

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/tink-crypto/tink-go/v2/keyset"
	"github.com/tink-crypto/tink-go/v2/streamingaead"
)

// A dump object is an envelope: a fresh streaming keyset per object, wrapped by the tenant's data
// key (keys.go), ahead of the dump encrypted under it.
//
//	magic | uint32 big-endian length of the wrapped keyset | wrapped keyset | ciphertext
//
// Both the wrapped keyset and the ciphertext take the object's place in the store as associated
// data: an object moved to another backup or another name fails to decrypt, as does one
// truncated or changed anywhere. Format 1 (magicV1), written before tenants had keys of their
// own, wrapped the keyset with the store's key-encryption key; it is still read, with that key.
const (
	magic   = "landlord-backup-v2\n"
	magicV1 = "landlord-backup-v1\n"
)

// maxWrappedKeyset bounds what a reader allocates for the keyset of an object it cannot trust
// yet; a wrapped keyset of one key is a few hundred bytes.
const maxWrappedKeyset = 64 << 10

func associatedData(key string) []byte { return []byte("landlord.backup.v1/" + key) }

// seal writes the envelope's header to w and returns the writer that encrypts into w; Close
// writes the last segment.
func (s *Store) seal(ctx context.Context, w io.Writer, key string) (io.WriteCloser, error) {
	if s.tenant == nil {
		return nil, errors.New("no tenant data key to seal a dump with")
	}
	handle, err := keyset.NewHandle(streamingaead.AES256GCMHKDF1MBKeyTemplate())
	if err != nil {
		return nil, fmt.Errorf("creating a data key: %w", err)
	}
	var wrapped bytes.Buffer
	if err := handle.WriteWithAssociatedData(keyset.NewBinaryWriter(&wrapped), s.tenant, associatedData(key)); err != nil {
		return nil, fmt.Errorf("wrapping the data key: %w", err)
	}
	header := make([]byte, 0, len(magic)+4+wrapped.Len())
	header = append(header, magic...)
	header = binary.BigEndian.AppendUint32(header, uint32(wrapped.Len()))
	header = append(header, wrapped.Bytes()...)
	if _, err := w.Write(header); err != nil {
		return nil, err
	}
	aead, err := streamingaead.New(handle)
	if err != nil {
		return nil, err
	}
	return aead.NewEncryptingWriter(w, associatedData(key))
}

// errNotABackup is an object that does not start as a dump of Landlord's does.
var errNotABackup = errors.New("not a Landlord backup object")

// open reads the envelope's header from r and returns the reader of the plaintext, which fails
// on anything that was not written by seal for this key.
func (s *Store) open(ctx context.Context, r io.Reader, key string) (io.Reader, error) {
	head := make([]byte, len(magic)+4)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotABackup, err)
	}
	version := string(head[:len(magic)])
	if version != magic && version != magicV1 {
		return nil, errNotABackup
	}
	n := binary.BigEndian.Uint32(head[len(magic):])
	if n == 0 || n > maxWrappedKeyset {
		return nil, fmt.Errorf("%w: a data key of %d bytes", errNotABackup, n)
	}
	wrapped := make([]byte, n)
	if _, err := io.ReadFull(r, wrapped); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotABackup, err)
	}
	var handle *keyset.Handle
	var err error
	switch {
	case version == magicV1 && s.key == nil:
		return nil, errors.New("the dump was sealed before tenants had keys of their own, and the plan names no key-encryption key to open it")
	case version == magicV1:
		// No associated data: a key-encryption key reached through a key service takes none.
		handle, err = keyset.ReadWithContext(ctx, keyset.NewBinaryReader(bytes.NewReader(wrapped)), s.key, nil)
	case s.tenant == nil:
		return nil, errors.New("no tenant data key to open the dump with")
	default:
		handle, err = keyset.ReadWithAssociatedData(keyset.NewBinaryReader(bytes.NewReader(wrapped)), s.tenant, associatedData(key))
	}
	if err != nil {
		return nil, fmt.Errorf("unwrapping the data key (the dump is not this tenant's, or was changed): %w", err)
	}
	aead, err := streamingaead.New(handle)
	if err != nil {
		return nil, err
	}
	return aead.NewDecryptingReader(r, associatedData(key))
}
