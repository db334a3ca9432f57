package secret

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	kms "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
)

// GCSStore keeps one object per secret in a Google Cloud Storage bucket, at
// <prefix><namespace>/<name>, envelope-encrypted under a Cloud KMS key. Credentials come from
// the environment (Application Default Credentials); the bucket and key are named in the
// operator configuration.
type GCSStore struct {
	bucket *storage.BucketHandle
	name   string
	prefix string
	env    *envelope
}

// NewGCSStore uses the given clients (so tests can point them at fakes). kmsTimeout bounds each
// Cloud KMS call including the client's retries; DefaultKMSTimeout when zero.
func NewGCSStore(gcs *storage.Client, kmsClient *kms.KeyManagementClient, bucket, prefix, keyName string, kmsTimeout time.Duration) *GCSStore {
	if kmsTimeout == 0 {
		kmsTimeout = DefaultKMSTimeout
	}
	return &GCSStore{
		bucket: gcs.Bucket(bucket),
		name:   bucket,
		prefix: prefix,
		env:    newEnvelope(&kmsAEAD{client: kmsClient, keyName: keyName, timeout: kmsTimeout}),
	}
}

// Identity returns the store's identity, an object at <prefix>.landlord-store-id, creating it
// on first use. Only the first of two writers creates it; the other reads it.
func (s *GCSStore) Identity(ctx context.Context) (string, error) {
	obj := s.bucket.Object(s.prefix + identityName)
	for attempt := 0; ; attempt++ {
		r, err := obj.NewReader(ctx)
		if err == nil {
			id, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				return "", s.explain(err, identityName)
			}
			if len(id) == 0 {
				// An empty identity would match a namespace that records none.
				return "", fmt.Errorf("secret store identity gs://%s/%s%s is empty", s.name, s.prefix, identityName)
			}
			return string(id), nil
		}
		if !errors.Is(err, storage.ErrObjectNotExist) || attempt > 0 {
			return "", s.explain(err, identityName)
		}
		w := obj.If(storage.Conditions{DoesNotExist: true}).NewWriter(ctx)
		w.ContentType = "text/plain"
		_, werr := w.Write([]byte(newIdentity()))
		err = errors.Join(werr, w.Close())
		var gerr *googleapi.Error
		if err != nil && !(errors.As(err, &gerr) && gerr.Code == http.StatusPreconditionFailed) {
			return "", s.explain(err, identityName)
		}
	}
}

func (s *GCSStore) object(namespace, name string) string {
	return s.prefix + namespace + "/" + name
}

// Get returns a secret, or ErrNotFound.
func (s *GCSStore) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := validateKey(namespace, name); err != nil {
		return nil, err
	}
	r, err := s.bucket.Object(s.object(namespace, name)).NewReader(ctx)
	if err != nil {
		return nil, s.explain(err, namespace+"/"+name)
	}
	defer r.Close()
	blob, err := io.ReadAll(r)
	if err != nil {
		return nil, s.explain(err, namespace+"/"+name)
	}
	return s.env.open(ctx, namespace, name, blob)
}

// List returns the namespace's secrets, by name.
func (s *GCSStore) List(ctx context.Context, namespace string) ([]*corev1.Secret, error) {
	if err := validateKey(namespace, "x"); err != nil {
		return nil, err
	}
	dir := s.object(namespace, "")
	it := s.bucket.Objects(ctx, &storage.Query{Prefix: dir})
	var out []*corev1.Secret
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, s.explain(err, namespace)
		}
		name := strings.TrimPrefix(attrs.Name, dir)
		if strings.Contains(name, "/") {
			continue
		}
		sec, err := s.Get(ctx, namespace, name)
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
func (s *GCSStore) Put(ctx context.Context, sec *corev1.Secret) error {
	if err := validateKey(sec.Namespace, sec.Name); err != nil {
		return err
	}
	blob, err := s.env.seal(ctx, sec)
	if err != nil {
		return err
	}
	w := s.bucket.Object(s.object(sec.Namespace, sec.Name)).NewWriter(ctx)
	w.ContentType = "application/octet-stream"
	if _, err := w.Write(blob); err != nil {
		_ = w.Close()
		return s.explain(err, sec.Namespace+"/"+sec.Name)
	}
	return s.explain(w.Close(), sec.Namespace+"/"+sec.Name)
}

// Delete removes a secret, or returns ErrNotFound.
func (s *GCSStore) Delete(ctx context.Context, namespace, name string) error {
	if err := validateKey(namespace, name); err != nil {
		return err
	}
	return s.explain(s.bucket.Object(s.object(namespace, name)).Delete(ctx), namespace+"/"+name)
}

// explain turns storage errors into ones a person can act on.
func (s *GCSStore) explain(err error, what string) error {
	if err == nil {
		return nil
	}
	var gerr *googleapi.Error
	switch {
	case errors.Is(err, storage.ErrObjectNotExist):
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	case errors.Is(err, storage.ErrBucketNotExist):
		return fmt.Errorf("secret store bucket gs://%s does not exist: %w", s.name, err)
	case errors.As(err, &gerr) && gerr.Code == http.StatusNotFound && strings.Contains(strings.ToLower(gerr.Message), "bucket"):
		return fmt.Errorf("secret store bucket gs://%s does not exist: %w", s.name, err)
	case errors.As(err, &gerr) && (gerr.Code == http.StatusForbidden || gerr.Code == http.StatusUnauthorized):
		return fmt.Errorf("permission denied on gs://%s (%s): %w", s.name, what, err)
	case status.Code(err) == codes.PermissionDenied:
		return fmt.Errorf("permission denied on gs://%s (%s): %w", s.name, what, err)
	}
	return fmt.Errorf("secret store gs://%s (%s): %w", s.name, what, err)
}

// DeleteIf removes a secret only while the stored copy passes match: the delete carries the
// generation that was read and tested (ifGenerationMatch), so Cloud Storage refuses it when the
// object was rewritten in between; the new copy is then tested again.
func (s *GCSStore) DeleteIf(ctx context.Context, namespace, name string, match func(*corev1.Secret) bool) error {
	if err := validateKey(namespace, name); err != nil {
		return err
	}
	what := namespace + "/" + name
	obj := s.bucket.Object(s.object(namespace, name))
	for range conditionalDeleteAttempts {
		r, err := obj.NewReader(ctx)
		if err != nil {
			return s.explain(err, what)
		}
		generation := r.Attrs.Generation
		blob, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return s.explain(err, what)
		}
		sec, err := s.env.open(ctx, namespace, name, blob)
		if err != nil {
			return err
		}
		if !match(sec) {
			return fmt.Errorf("%s: %w", what, ErrPreconditionFailed)
		}
		err = obj.If(storage.Conditions{GenerationMatch: generation}).Delete(ctx)
		var gerr *googleapi.Error
		if errors.As(err, &gerr) && gerr.Code == http.StatusPreconditionFailed {
			continue
		}
		return s.explain(err, what)
	}
	return fmt.Errorf("%s: rewritten each time it was about to be deleted; not deleted", what)
}
