package secret

import (
	"context"
	"testing"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/keyset"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Records written before the envelope passed the call's context to the key-encryption key are
// the same format: either envelope opens what the other sealed.
func TestTheEnvelopeFormatIsUnchanged(t *testing.T) {
	handle, err := keyset.NewHandle(aead.AES256GCMKeyTemplate())
	if err != nil {
		t.Fatal(err)
	}
	kek, err := aead.New(handle)
	if err != nil {
		t.Fatal(err)
	}
	before := aead.NewKMSEnvelopeAEAD2(aead.AES256GCMKeyTemplate(), kek)
	now := newEnvelope(kek)
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}

	t.Run("a record sealed the earlier way opens", func(t *testing.T) {
		plain := []byte(`{"namespace":"ns","name":"s","data":{"k":"dg=="}}`)
		sealed, err := before.Encrypt(plain, associatedData("ns", "s"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := now.open(ctx, "ns", "s", sealed)
		if err != nil || string(got.Data["k"]) != "v" {
			t.Fatalf("opened %v, %v", got, err)
		}
	})
	t.Run("a record sealed now opens the earlier way", func(t *testing.T) {
		sealed, err := now.seal(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := before.Decrypt(sealed, associatedData("ns", "s")); err != nil {
			t.Fatal(err)
		}
	})
}
