package secret

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/gcerrors"
	"gocloud.dev/secrets"
	"gocloud.dev/secrets/awskms"
)

// openKeeper opens the key-encryption key at keyURL. An AWS KMS key is opened here rather than
// by the Go CDK's own awskms keeper, which decrypts with whatever key a ciphertext names: AWS
// KMS then unwraps a data key wrapped under any key the operator may use, so a record written
// under another key — another environment's, or one an attacker with write access to the bucket
// lets the operator use — would open. This keeper names its key on every decrypt, and AWS KMS
// refuses a ciphertext of another key (IncorrectKeyException), as Cloud KMS does by design.
func openKeeper(ctx context.Context, keyURL string) (*secrets.Keeper, error) {
	u, err := url.Parse(keyURL)
	if err != nil || u.Scheme != awskms.Scheme {
		return secrets.OpenKeeper(ctx, keyURL)
	}
	// As the Go CDK reads the URL: awskms://ID or awskms:///ARN, with the AWS SDK's query
	// parameters and an encryption context in context_KEY=VALUE ones.
	keyID := strings.TrimPrefix(path.Join(u.Host, u.Path), "/")
	q := u.Query()
	encryptionContext := map[string]string{}
	for k, vs := range q {
		if name, ok := strings.CutPrefix(k, "context_"); ok {
			if len(vs) != 1 {
				return nil, fmt.Errorf("the query parameter %q must have exactly one value", k)
			}
			encryptionContext[name] = vs[0]
			q.Del(k)
		}
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, err
	}
	client, err := awskms.Dial(cfg)
	if err != nil {
		return nil, err
	}
	if len(encryptionContext) == 0 {
		encryptionContext = nil
	}
	return secrets.NewKeeper(&awsKMSKeeper{client: client, keyID: keyID, encryptionContext: encryptionContext}), nil
}

// awsKMSKeeper is a Go CDK keeper of one AWS KMS key.
type awsKMSKeeper struct {
	client            *kms.Client
	keyID             string
	encryptionContext map[string]string
}

func (k *awsKMSKeeper) Encrypt(ctx context.Context, plaintext []byte) ([]byte, error) {
	out, err := k.client.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(k.keyID), Plaintext: plaintext, EncryptionContext: k.encryptionContext})
	if err != nil {
		return nil, err
	}
	return out.CiphertextBlob, nil
}

func (k *awsKMSKeeper) Decrypt(ctx context.Context, ciphertext []byte) ([]byte, error) {
	out, err := k.client.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(k.keyID), CiphertextBlob: ciphertext, EncryptionContext: k.encryptionContext})
	if err != nil {
		return nil, err
	}
	return out.Plaintext, nil
}

func (k *awsKMSKeeper) Close() error { return nil }

func (k *awsKMSKeeper) ErrorAs(err error, i any) bool { return errors.As(err, i) }

func (k *awsKMSKeeper) ErrorCode(err error) gcerrors.ErrorCode {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return gcerrors.Unknown
	}
	switch ae.ErrorCode() {
	case "NotFoundException":
		return gcerrors.NotFound
	case "AccessDeniedException", "DisabledException", "InvalidGrantTokenException":
		return gcerrors.PermissionDenied
	case "InvalidCiphertextException", "IncorrectKeyException", "InvalidKeyUsageException":
		return gcerrors.InvalidArgument
	case "KMSInvalidStateException":
		return gcerrors.FailedPrecondition
	case "KeyUnavailableException":
		return gcerrors.ResourceExhausted
	case "DependencyTimeoutException":
		return gcerrors.DeadlineExceeded
	}
	return gcerrors.Unknown
}
