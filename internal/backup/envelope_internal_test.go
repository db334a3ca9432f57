package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/keyset"
	"github.com/tink-crypto/tink-go/v2/streamingaead"

	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

// kmsKeys returns stores (without a bucket: the envelope needs none) under two keys of AWS KMS's
// API, served by Local KMS, each with a tenant's data key of its own, as a Job's store has.
func kmsKeys(t *testing.T) (*Store, *Store) {
	t.Helper()
	for k, v := range secrettest.AWSEnvironment {
		t.Setenv(k, v)
	}
	kms := secrettest.StartAWSKMS(t.TempDir())
	t.Cleanup(kms.Close)
	var stores []*Store
	for range 2 {
		url, err := kms.CreateKey(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		key, err := secret.OpenKey(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = key.Close() })
		handle, err := keyset.NewHandle(aead.AES256GCMKeyTemplate())
		if err != nil {
			t.Fatal(err)
		}
		tenant, err := aead.New(handle)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, &Store{key: key, tenant: tenant})
	}
	return stores[0], stores[1]
}

func seal(ctx context.Context, s *Store, key string, plain []byte) ([]byte, error) {
	var out bytes.Buffer
	w, err := s.seal(ctx, &out, key)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func open(ctx context.Context, s *Store, key string, sealed []byte) ([]byte, error) {
	r, err := s.open(ctx, bytes.NewReader(sealed), key)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// A dump is sealed in segments of 1 MiB; one that spans several opens whole, at its own place
// and under its own key, and any change to it, anywhere, fails before the end of its reading.
func TestEnvelope(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	s, other := kmsKeys(t)
	plain := make([]byte, 2<<20+12345)
	_, _ = rand.Read(plain)
	const key = "tenant/backup/app.dump"
	sealed, err := seal(ctx, s, key, plain)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sealed[:len(magic)]).To(Equal([]byte(magic)))

	got, err := open(ctx, s, key, sealed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(plain))

	keysetLen := int(binary.BigEndian.Uint32(sealed[len(magic):]))
	body := len(magic) + 4 + keysetLen
	const segment = 1 << 20
	flipped := func(i int) func() []byte {
		return func() []byte {
			b := bytes.Clone(sealed)
			b[i] ^= 0x80
			return b
		}
	}
	for name, tc := range map[string]struct {
		sealed func() []byte
		key    string
		store  *Store
	}{
		"a byte of the magic flipped":                {sealed: flipped(0)},
		"a byte of the keyset's length flipped":      {sealed: flipped(len(magic) + 1)},
		"a byte of the wrapped keyset flipped":       {sealed: flipped(len(magic) + 4 + keysetLen/2)},
		"a byte of the first segment flipped":        {sealed: flipped(body + 100)},
		"a byte of the last segment flipped":         {sealed: flipped(len(sealed) - 1)},
		"cut in the middle of a segment":             {sealed: func() []byte { return sealed[:body+segment+100] }},
		"cut at the end of a segment":                {sealed: func() []byte { return sealed[:len(sealed)-(len(sealed)-body)%segment] }},
		"cut before the data":                        {sealed: func() []byte { return sealed[:body] }},
		"cut in the header":                          {sealed: func() []byte { return sealed[:10] }},
		"moved to another name":                      {key: "tenant/backup/other.dump"},
		"moved to another backup":                    {key: "tenant/another/app.dump"},
		"opened under another tenant's data key":     {store: other},
		"opened with no tenant's data key":           {store: &Store{key: s.key}},
		"a whole segment dropped from the middle":    {sealed: func() []byte { return append(bytes.Clone(sealed[:body+segment]), sealed[body+2*segment:]...) }},
		"the first segment written over the second":  {sealed: func() []byte { b := bytes.Clone(sealed); copy(b[body+segment:], sealed[body:body+segment]); return b }},
		"a wrapped keyset claiming to be very large": {sealed: func() []byte { b := bytes.Clone(sealed); b[len(magic)] = 0xff; return b }},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			data, k, st := sealed, key, s
			if tc.sealed != nil {
				data = tc.sealed()
			}
			if tc.key != "" {
				k = tc.key
			}
			if tc.store != nil {
				st = tc.store
			}
			// Segments read before the failure are authentic, and download discards them with
			// the rest: only the error matters.
			_, err := open(ctx, st, k, data)
			g.Expect(err).To(HaveOccurred())
		})
	}
}

// sealV1 seals as Landlord did before tenants had data keys of their own: the dump's keyset
// wrapped by the store's key-encryption key.
func sealV1(ctx context.Context, s *Store, key string, plain []byte) ([]byte, error) {
	handle, err := keyset.NewHandle(streamingaead.AES256GCMHKDF1MBKeyTemplate())
	if err != nil {
		return nil, err
	}
	var wrapped bytes.Buffer
	if err := handle.WriteWithContext(ctx, keyset.NewBinaryWriter(&wrapped), s.key, nil); err != nil {
		return nil, err
	}
	out := bytes.NewBufferString(magicV1)
	out.Write(binary.BigEndian.AppendUint32(nil, uint32(wrapped.Len())))
	out.Write(wrapped.Bytes())
	a, err := streamingaead.New(handle)
	if err != nil {
		return nil, err
	}
	w, err := a.NewEncryptingWriter(out, associatedData(key))
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// A dump sealed before tenants had keys of their own still opens with the store's key, which a
// Job is given only to restore such a backup; without it, it does not open.
func TestADumpOfFormatOneOpensWithTheStoresKeyAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	s, other := kmsKeys(t)
	plain := []byte("-- a dump taken before tenants had keys of their own\n")
	const key = "tenant/backup/app.dump"
	sealed, err := sealV1(ctx, s, key, plain)
	g.Expect(err).NotTo(HaveOccurred())

	got, err := open(ctx, &Store{key: s.key}, key, sealed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(plain))

	_, err = open(ctx, &Store{tenant: s.tenant}, key, sealed)
	g.Expect(err).To(MatchError(ContainSubstring("names no key-encryption key")), "a Job with a tenant's key alone")
	_, err = open(ctx, other, key, sealed)
	g.Expect(err).To(HaveOccurred(), "under another key-encryption key")
}
