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

// A dump object is an envelope: a fresh streaming keyset per object, wrapped by the store's
// key-encryption key, ahead of the dump encrypted under it.
//
//	magic | uint32 big-endian length of the wrapped keyset | wrapped keyset | ciphertext
//
// The key-encryption key is only called once per object, so a dump of any size costs one call to
// the key service. The ciphertext's associated data is the object's place in the store: an
// object moved to another backup or another name fails to decrypt, as does one truncated or
// changed anywhere.
const magic = "landlord-backup-v1\n"

// maxWrappedKeyset bounds what a reader allocates for the keyset of an object it cannot trust
// yet; a wrapped keyset of one key is a few hundred bytes.
const maxWrappedKeyset = 64 << 10

func associatedData(key string) []byte { return []byte("landlord.backup.v1/" + key) }

// seal writes the envelope's header to w and returns the writer that encrypts into w; Close
// writes the last segment.
func (s *Store) seal(ctx context.Context, w io.Writer, key string) (io.WriteCloser, error) {
	handle, err := keyset.NewHandle(streamingaead.AES256GCMHKDF1MBKeyTemplate())
	if err != nil {
		return nil, fmt.Errorf("creating a data key: %w", err)
	}
	var wrapped bytes.Buffer
	// No associated data here: a key-encryption key reached through a key service takes none.
	// The keyset needs none either: another keyset in its place decrypts nothing.
	if err := handle.WriteWithContext(ctx, keyset.NewBinaryWriter(&wrapped), s.key, nil); err != nil {
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
	if string(head[:len(magic)]) != magic {
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
	handle, err := keyset.ReadWithContext(ctx, keyset.NewBinaryReader(bytes.NewReader(wrapped)), s.key, nil)
	if err != nil {
		return nil, fmt.Errorf("unwrapping the data key: %w", err)
	}
	aead, err := streamingaead.New(handle)
	if err != nil {
		return nil, err
	}
	return aead.NewDecryptingReader(r, associatedData(key))
}
