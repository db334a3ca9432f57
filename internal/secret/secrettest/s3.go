package secrettest

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// S3 is an in-memory S3 server (gofakes3) on a loopback port, spoken to over HTTP by the real
// AWS SDK. Like Amazon S3, and unlike gofakes3 alone, it honours If-Match on DeleteObject (a
// conditional delete): without that a test could not tell a conditional delete from an
// unconditional one.
type S3 struct {
	*Hangable
	server  *httptest.Server
	backend *s3mem.Backend
}

// AWSEnvironment is what the AWS SDK needs from the environment to talk to the test servers:
// static credentials they accept (they check no signature), and no shared configuration or
// instance metadata of the machine running the tests.
var AWSEnvironment = map[string]string{
	"AWS_ACCESS_KEY_ID":           "AKIDLANDLORDTEST",
	"AWS_SECRET_ACCESS_KEY":       "landlord-test-secret",
	"AWS_SESSION_TOKEN":           "",
	"AWS_PROFILE":                 "",
	"AWS_CONFIG_FILE":             "/dev/null",
	"AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
	"AWS_EC2_METADATA_DISABLED":   "true",
}

// StartS3 starts a server holding the named, empty buckets.
func StartS3(buckets ...string) (*S3, error) {
	backend := s3mem.New()
	for _, b := range buckets {
		if err := backend.CreateBucket(b); err != nil {
			return nil, err
		}
	}
	s := &S3{backend: backend}
	s.Hangable = newHangable(s.conditionalDeletes(gofakes3.New(backend).Server()))
	s.server = httptest.NewServer(s.Hangable)
	return s, nil
}

// URL is the objects URL of a bucket on this server, with prefix= when prefix is set.
func (s *S3) URL(bucket, prefix string) string {
	q := url.Values{"endpoint": {s.server.URL}, "region": {"us-east-1"}, "use_path_style": {"true"}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	return "s3://" + bucket + "?" + q.Encode()
}

// Object returns an object's bytes, read around the server, or nil when it has none.
func (s *S3) Object(bucket, key string) []byte {
	obj, err := s.backend.GetObject(bucket, key, nil)
	if err != nil {
		return nil
	}
	defer obj.Contents.Close()
	data, _ := io.ReadAll(obj.Contents)
	return data
}

// PutObject writes an object around the server, as another program would.
func (s *S3) PutObject(bucket, key string, data []byte) error {
	_, err := s.backend.PutObject(bucket, key, map[string]string{}, bytes.NewReader(data), int64(len(data)), nil)
	return err
}

// Close lets hanging requests go and stops the server.
func (s *S3) Close() {
	s.SetHanging(false)
	s.server.Close()
}

// conditionalDeletes answers a DELETE whose If-Match names another ETag than the object's with
// 412 PreconditionFailed, as S3 does.
func (s *S3) conditionalDeletes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := r.Header.Get("If-Match")
		bucket, key, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if r.Method != http.MethodDelete || want == "" || !ok {
			next.ServeHTTP(w, r)
			return
		}
		obj, err := s.backend.HeadObject(bucket, key)
		if err == nil && `"`+hex.EncodeToString(obj.Hash)+`"` != want {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusPreconditionFailed)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>`))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// StartAWS starts, for one test, an S3 server holding the buckets and a KMS emulator with one
// key, and sets the AWS environment their clients read: the S3 server and the key's URL. Both
// stop when the test ends.
func StartAWS(t testing.TB, buckets ...string) (*S3, string) {
	t.Helper()
	for k, v := range AWSEnvironment {
		t.Setenv(k, v)
	}
	s3, err := StartS3(buckets...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s3.Close)
	kms := StartAWSKMS(t.TempDir())
	t.Cleanup(kms.Close)
	key, err := kms.CreateKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return s3, key
}
