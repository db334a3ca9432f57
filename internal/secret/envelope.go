package secret

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/tink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// envelope encrypts each secret under a fresh AES-256-GCM data key that is itself encrypted by
// a key-encryption key (a cloud KMS, or a local key): Tink's KMS envelope format. The secret's
// namespace and name are the associated data, so a blob moved to another name fails to open.
type envelope struct {
	aead tink.AEADWithContext
}

// newEnvelope takes a key-encryption key that bounds its own calls (Cloud KMS through its own
// client, with its own deadline) or makes none (a local key).
func newEnvelope(kek tink.AEAD) *envelope {
	return newEnvelopeWithContext(contextFree{kek})
}

// newEnvelopeWithContext takes a key-encryption key whose calls end with the store call's
// context, so a key service that hangs holds no call past its deadline.
func newEnvelopeWithContext(kek tink.AEADWithContext) *envelope {
	a, err := aead.NewKMSEnvelopeAEADWithContext(aead.AES256GCMKeyTemplate(), kek)
	if err != nil {
		// Only an unsupported data key template fails, and the template is fixed.
		panic(err)
	}
	return &envelope{aead: a}
}

// contextFree is a key-encryption key that takes no context.
type contextFree struct{ tink.AEAD }

func (c contextFree) EncryptWithContext(_ context.Context, plaintext, associatedData []byte) ([]byte, error) {
	return c.Encrypt(plaintext, associatedData)
}

func (c contextFree) DecryptWithContext(_ context.Context, ciphertext, associatedData []byte) ([]byte, error) {
	return c.Decrypt(ciphertext, associatedData)
}

// stored is what is kept of a secret.
type stored struct {
	Namespace   string            `json:"namespace"`
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Type        corev1.SecretType `json:"type,omitempty"`
	Data        map[string][]byte `json:"data,omitempty"`
}

func associatedData(namespace, name string) []byte {
	return []byte("landlord.secret.v1/" + namespace + "/" + name)
}

func (e *envelope) seal(ctx context.Context, s *corev1.Secret) ([]byte, error) {
	plain, err := json.Marshal(stored{
		Namespace: s.Namespace, Name: s.Name, Labels: s.Labels, Annotations: s.Annotations,
		Type: s.Type, Data: s.Data,
	})
	if err != nil {
		return nil, err
	}
	return e.aead.EncryptWithContext(ctx, plain, associatedData(s.Namespace, s.Name))
}

func (e *envelope) open(ctx context.Context, namespace, name string, blob []byte) (*corev1.Secret, error) {
	plain, err := e.aead.DecryptWithContext(ctx, blob, associatedData(namespace, name))
	if err != nil {
		// Tink's message does not carry key material or plaintext.
		return nil, fmt.Errorf("decrypting secret %s/%s (tampered, moved, or encrypted under another key): %w", namespace, name, err)
	}
	var st stored
	if err := json.Unmarshal(plain, &st); err != nil {
		return nil, fmt.Errorf("decoding secret %s/%s: %w", namespace, name, err)
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: st.Namespace, Name: st.Name, Labels: st.Labels, Annotations: st.Annotations},
		Type:       st.Type,
		Data:       st.Data,
	}, nil
}
