package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/fileblob"  // file://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/s3blob"    // s3://
	"gocloud.dev/gcerrors"
	"gocloud.dev/secrets"
	_ "gocloud.dev/secrets/awskms"        // awskms://
	_ "gocloud.dev/secrets/azurekeyvault" // azurekeyvault://
	_ "gocloud.dev/secrets/gcpkms"        // gcpkms://
	_ "gocloud.dev/secrets/hashivault"    // hashivault://
	corev1 "k8s.io/api/core/v1"

	"github.com/landlord-dev/landlord/internal/config"
)

// BucketStore keeps one object per secret at <namespace>/<name> in a bucket named by URL —
// Amazon S3 or an S3-compatible server (s3://), Azure Blob Storage (azblob://), Cloud Storage
// (gs://) or a directory (file://), under the URL's prefix= — envelope-encrypted, in the same
// format as the other stores, under a key-encryption key named by URL: AWS KMS (awskms://),
// Azure Key Vault (azurekeyvault://), Cloud KMS (gcpkms://) or Vault's transit engine
// (hashivault://). The Go CDK (gocloud.dev) opens both; credentials come from each cloud's
// environment.
type BucketStore struct {
	bucket *blob.Bucket
	keeper *secrets.Keeper
	// url is the objects URL, for messages.
	url string
	env *envelope
}

// OpenBucketStore opens the bucket at objectsURL and the key-encryption key at keyURL. Nothing
// is read or written until the store is used.
func OpenBucketStore(ctx context.Context, objectsURL, keyURL string) (*BucketStore, error) {
	bucket, err := OpenBucket(ctx, objectsURL)
	if err != nil {
		return nil, fmt.Errorf("secret store: %w", err)
	}
	key, err := OpenKey(ctx, keyURL)
	if err != nil {
		_ = bucket.Close()
		return nil, fmt.Errorf("secret store: %w", err)
	}
	return &BucketStore{bucket: bucket, keeper: key.keeper, url: displayURL(objectsURL), env: newEnvelopeWithContext(key)}, nil
}

// OpenBucket opens the bucket objectsURL names (s3://, azblob://, gs://, file://), checked as
// the secret store's objects URL is. Nothing is read or written until it is used.
func OpenBucket(ctx context.Context, objectsURL string) (*blob.Bucket, error) {
	if err := config.CheckObjectsURL(objectsURL); err != nil {
		return nil, fmt.Errorf("objects URL: %w", err)
	}
	bucket, err := blob.OpenBucket(ctx, objectsURL)
	if err != nil {
		return nil, fmt.Errorf("opening the bucket %s: %w", displayURL(objectsURL), err)
	}
	return bucket, nil
}

// OpenKey opens the key-encryption key keyURL names (awskms://, azurekeyvault://, gcpkms://,
// hashivault://), checked as the secret store's key URL is.
func OpenKey(ctx context.Context, keyURL string) (*Key, error) {
	if err := config.CheckKeyURL(keyURL); err != nil {
		return nil, fmt.Errorf("key URL: %w", err)
	}
	keeper, err := openKeeper(ctx, keyURL)
	if err != nil {
		return nil, fmt.Errorf("opening the key %s: %w", displayURL(keyURL), err)
	}
	return &Key{keeperAEAD{keeper: keeper, url: displayURL(keyURL), timeout: DefaultKMSTimeout}}, nil
}

// displayURL is a URL as messages show it: without credentials, which configuration refuses
// anyway.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an invalid URL)"
	}
	u.User = nil
	return u.String()
}

// Close releases the bucket's and the key's clients.
func (s *BucketStore) Close() error {
	return errors.Join(s.bucket.Close(), s.keeper.Close())
}

func (s *BucketStore) object(namespace, name string) string {
	return namespace + "/" + name
}

// Identity returns the store's identity, an object at <prefix>.landlord-store-id, creating it
// on first use. The write is conditional on the object not existing, so of two writers only
// the first creates it and the other reads it.
func (s *BucketStore) Identity(ctx context.Context) (string, error) {
	for attempt := 0; ; attempt++ {
		id, err := s.bucket.ReadAll(ctx, identityName)
		if err == nil {
			if len(id) == 0 {
				// An empty identity would match a namespace that records none.
				return "", fmt.Errorf("secret store identity %s in %s is empty", identityName, s.url)
			}
			return string(id), nil
		}
		if gcerrors.Code(err) != gcerrors.NotFound || attempt > 0 {
			return "", s.explain(err, identityName)
		}
		err = s.bucket.WriteAll(ctx, identityName, []byte(newIdentity()), &blob.WriterOptions{ContentType: "text/plain", IfNotExist: true})
		if err != nil && gcerrors.Code(err) != gcerrors.FailedPrecondition {
			return "", s.explain(err, identityName)
		}
	}
}

// Get returns a secret, or ErrNotFound.
func (s *BucketStore) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := validateKey(namespace, name); err != nil {
		return nil, err
	}
	sealed, err := s.bucket.ReadAll(ctx, s.object(namespace, name))
	if err != nil {
		return nil, s.explain(err, namespace+"/"+name)
	}
	return s.env.open(ctx, namespace, name, sealed)
}

// List returns the namespace's secrets, by name.
func (s *BucketStore) List(ctx context.Context, namespace string) ([]*corev1.Secret, error) {
	if err := validateKey(namespace, "x"); err != nil {
		return nil, err
	}
	dir := s.object(namespace, "")
	it := s.bucket.List(&blob.ListOptions{Prefix: dir, Delimiter: "/"})
	var out []*corev1.Secret
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, s.explain(err, namespace)
		}
		if obj.IsDir {
			continue
		}
		sec, err := s.Get(ctx, namespace, strings.TrimPrefix(obj.Key, dir))
		if errors.Is(err, ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
}

// Put writes a secret.
func (s *BucketStore) Put(ctx context.Context, sec *corev1.Secret) error {
	if err := validateKey(sec.Namespace, sec.Name); err != nil {
		return err
	}
	sealed, err := s.env.seal(ctx, sec)
	if err != nil {
		return err
	}
	err = s.bucket.WriteAll(ctx, s.object(sec.Namespace, sec.Name), sealed, &blob.WriterOptions{ContentType: "application/octet-stream"})
	return s.explain(err, sec.Namespace+"/"+sec.Name)
}

// Delete removes a secret, or returns ErrNotFound.
func (s *BucketStore) Delete(ctx context.Context, namespace, name string) error {
	if err := validateKey(namespace, name); err != nil {
		return err
	}
	return s.explain(s.bucket.Delete(ctx, s.object(namespace, name)), namespace+"/"+name)
}

// DeleteIf removes a secret only while the stored copy passes match. The delete carries the
// version of the copy that was read and tested — If-Match with its ETag on S3 and Azure, its
// generation on Cloud Storage — so the service refuses it when the object was rewritten in
// between, and the new copy is tested again. A directory (file://) has no such precondition:
// there the copy is read again just before the delete and compared, which narrows the window
// without closing it; a directory written by more than one process is the file backend's job.
func (s *BucketStore) DeleteIf(ctx context.Context, namespace, name string, match func(*corev1.Secret) bool) error {
	if err := validateKey(namespace, name); err != nil {
		return err
	}
	what := namespace + "/" + name
	key := s.object(namespace, name)
	for range conditionalDeleteAttempts {
		sealed, version, err := s.readVersion(ctx, key)
		if err != nil {
			return s.explain(err, what)
		}
		sec, err := s.env.open(ctx, namespace, name, sealed)
		if err != nil {
			return err
		}
		if !match(sec) {
			return fmt.Errorf("%s: %w", what, ErrPreconditionFailed)
		}
		if !version.known() {
			now, err := s.bucket.ReadAll(ctx, key)
			if err != nil {
				return s.explain(err, what)
			}
			if !bytes.Equal(now, sealed) {
				continue
			}
		}
		err = s.bucket.DeleteWithOptions(ctx, key, &blob.DeleteOptions{BeforeDelete: version.precondition})
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			continue
		}
		return s.explain(err, what)
	}
	return fmt.Errorf("%s: rewritten each time it was about to be deleted; not deleted", what)
}

// objectVersion is the version of an object as read, in the terms of the service that holds it.
type objectVersion struct {
	etag       string // S3, Azure
	generation int64  // Cloud Storage
}

func (v objectVersion) known() bool { return v.etag != "" || v.generation != 0 }

// precondition makes a delete apply only to the version read.
func (v objectVersion) precondition(as func(any) bool) error {
	var s3in *s3.DeleteObjectInput
	var gcs **storage.ObjectHandle
	var az *azblobblob.DeleteOptions
	switch {
	case v.etag != "" && as(&s3in):
		s3in.IfMatch = &v.etag
	case v.etag != "" && as(&az):
		etag := azcore.ETag(v.etag)
		az.AccessConditions = &azblobblob.AccessConditions{ModifiedAccessConditions: &azblobblob.ModifiedAccessConditions{IfMatch: &etag}}
	case v.generation != 0 && as(&gcs):
		*gcs = (*gcs).If(storage.Conditions{GenerationMatch: v.generation})
	case v.known():
		return errors.New("the store's service takes no precondition on deletes: not deleted")
	}
	return nil
}

// readVersion reads an object and the version it read.
func (s *BucketStore) readVersion(ctx context.Context, key string) ([]byte, objectVersion, error) {
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, objectVersion{}, err
	}
	defer r.Close()
	var v objectVersion
	var s3out s3.GetObjectOutput
	var gcs *storage.Reader
	var az azblobblob.DownloadStreamResponse
	switch {
	case r.As(&s3out) && s3out.ETag != nil:
		v.etag = *s3out.ETag
	case r.As(&gcs):
		v.generation = gcs.Attrs.Generation
	case r.As(&az) && az.ETag != nil:
		v.etag = string(*az.ETag)
	}
	data, err := io.ReadAll(r)
	return data, v, err
}

// explain turns the Go CDK's errors into ones a person can act on.
func (s *BucketStore) explain(err error, what string) error {
	if err == nil {
		return nil
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		if bucketMissing(err) {
			return fmt.Errorf("secret store bucket %s does not exist: %w", s.url, err)
		}
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	case gcerrors.PermissionDenied:
		return fmt.Errorf("permission denied on %s (%s): %w", s.url, what, err)
	}
	return fmt.Errorf("secret store %s (%s): %w", s.url, what, err)
}

// bucketMissing tells a missing bucket from a missing object, which the Go CDK both call
// NotFound: a store whose bucket is gone has lost nothing to regenerate, it is misconfigured.
func bucketMissing(err error) bool {
	var apiErr smithy.APIError
	var azErr *azcore.ResponseError
	switch {
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode() == "NoSuchBucket"
	case errors.As(err, &azErr):
		return azErr.ErrorCode == "ContainerNotFound"
	}
	return errors.Is(err, storage.ErrBucketNotExist)
}
