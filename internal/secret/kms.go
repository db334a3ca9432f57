package secret

import (
	"context"
	"fmt"
	"hash/crc32"
	"time"

	kms "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/kms/apiv1/kmspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// DefaultKMSTimeout bounds one Cloud KMS call, retries included; Tink's AEAD interface carries
// no context.
const DefaultKMSTimeout = 30 * time.Second

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) *wrapperspb.Int64Value {
	return wrapperspb.Int64(int64(crc32.Checksum(b, castagnoli)))
}

// kmsAEAD is a Tink AEAD whose key never leaves Cloud KMS: it wraps and unwraps the data keys of
// the envelope. Every call carries CRC32C checksums both ways, as Google recommends, so a
// corruption in transit is an error rather than a wrong key.
type kmsAEAD struct {
	client  *kms.KeyManagementClient
	keyName string
	timeout time.Duration
}

func (k *kmsAEAD) Encrypt(plaintext, associatedData []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	defer cancel()
	resp, err := k.client.Encrypt(ctx, &kmspb.EncryptRequest{
		Name:                              k.keyName,
		Plaintext:                         plaintext,
		PlaintextCrc32C:                   crc32c(plaintext),
		AdditionalAuthenticatedData:       associatedData,
		AdditionalAuthenticatedDataCrc32C: crc32c(associatedData),
	})
	if err != nil {
		return nil, k.explain("encrypt", err)
	}
	if !resp.GetVerifiedPlaintextCrc32C() || !resp.GetVerifiedAdditionalAuthenticatedDataCrc32C() {
		return nil, fmt.Errorf("Cloud KMS encrypt with %s: request corrupted in transit", k.keyName)
	}
	if resp.GetCiphertextCrc32C().GetValue() != crc32c(resp.GetCiphertext()).GetValue() {
		return nil, fmt.Errorf("Cloud KMS encrypt with %s: response corrupted in transit", k.keyName)
	}
	return resp.GetCiphertext(), nil
}

func (k *kmsAEAD) Decrypt(ciphertext, associatedData []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	defer cancel()
	resp, err := k.client.Decrypt(ctx, &kmspb.DecryptRequest{
		Name:                              k.keyName,
		Ciphertext:                        ciphertext,
		CiphertextCrc32C:                  crc32c(ciphertext),
		AdditionalAuthenticatedData:       associatedData,
		AdditionalAuthenticatedDataCrc32C: crc32c(associatedData),
	})
	if err != nil {
		return nil, k.explain("decrypt", err)
	}
	if resp.GetPlaintextCrc32C().GetValue() != crc32c(resp.GetPlaintext()).GetValue() {
		return nil, fmt.Errorf("Cloud KMS decrypt with %s: response corrupted in transit", k.keyName)
	}
	return resp.GetPlaintext(), nil
}

func (k *kmsAEAD) explain(op string, err error) error {
	switch status.Code(err) {
	case codes.PermissionDenied:
		return fmt.Errorf("permission denied to %s with Cloud KMS key %s (grant the operator's identity roles/cloudkms.cryptoKeyEncrypterDecrypter on it): %w", op, k.keyName, err)
	case codes.NotFound:
		return fmt.Errorf("Cloud KMS key %s does not exist: %w", k.keyName, err)
	}
	return fmt.Errorf("Cloud KMS %s with %s: %w", op, k.keyName, err)
}
