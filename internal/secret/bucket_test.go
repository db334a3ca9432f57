package secret_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

// The url backend's stores are tested against servers that speak each service's own protocol
// to the real client libraries: S3 (gofakes3) and Cloud Storage (fake-gcs-server) over HTTP,
// a directory through the Go CDK's fileblob, and AWS KMS (Local KMS) as the key-encryption key.

// objectServer is where a url store keeps its objects, with a way around the store to them.
type objectServer struct {
	url   string
	read  func(key string) []byte
	write func(key string, data []byte)
	// hang makes the server stop answering, or answer again; nil for a directory.
	hang *secrettest.Hangable
}

// useAWSTestEnvironment points the AWS SDK at nothing of the machine running the tests.
func useAWSTestEnvironment(t *testing.T) {
	t.Helper()
	for k, v := range secrettest.AWSEnvironment {
		t.Setenv(k, v)
	}
}

func s3Objects(t *testing.T) objectServer {
	t.Helper()
	useAWSTestEnvironment(t)
	server, err := secrettest.StartS3(bucket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	return objectServer{
		url:   server.URL(bucket, "secrets/"),
		read:  func(key string) []byte { return server.Object(bucket, "secrets/"+key) },
		write: func(key string, data []byte) { _ = server.PutObject(bucket, "secrets/"+key, data) },
		hang:  server.Hangable,
	}
}

func gcsObjects(t *testing.T) objectServer {
	t.Helper()
	gcs, err := secrettest.StartGCSEmulator(bucket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gcs.Stop)
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host)
	return objectServer{
		url: "gs://" + bucket + "?prefix=secrets/",
		read: func(key string) []byte {
			o, err := gcs.GetObject(bucket, "secrets/"+key)
			if err != nil {
				return nil
			}
			return o.Content
		},
		write: func(key string, data []byte) {
			gcs.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: "secrets/" + key}, Content: data})
		},
		hang: gcs.Hangable,
	}
}

func dirObjects(t *testing.T) objectServer {
	t.Helper()
	dir := t.TempDir()
	return objectServer{
		url: "file://" + dir,
		read: func(key string) []byte {
			b, _ := os.ReadFile(filepath.Join(dir, key))
			return b
		},
		write: func(key string, data []byte) {
			_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, key)), 0o700)
			_ = os.WriteFile(filepath.Join(dir, key), data, 0o600)
		},
	}
}

// awsKMS starts Local KMS with two keys and returns it and their key URLs.
func awsKMS(t *testing.T) (*secrettest.AWSKMS, string, string) {
	t.Helper()
	useAWSTestEnvironment(t)
	k := secrettest.StartAWSKMS(t.TempDir())
	t.Cleanup(k.Close)
	a, err := k.CreateKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := k.CreateKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return k, a, b
}

func openURLStore(t *testing.T, objects, key string) *secret.BucketStore {
	t.Helper()
	s, err := secret.OpenBucketStore(context.Background(), objects, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// urlFixture is a url store on the given objects, under a key of Local KMS.
func urlFixture(objects func(*testing.T) objectServer) func(*testing.T) fixture {
	return func(t *testing.T) fixture {
		t.Helper()
		o := objects(t)
		_, keyA, keyB := awsKMS(t)
		return fixture{
			store:         openURLStore(t, o.url, keyA),
			readRaw:       func(ns, name string) []byte { return o.read(ns + "/" + name) },
			writeRaw:      func(ns, name string, data []byte) { o.write(ns+"/"+name, data) },
			writeIdentity: func(data []byte) { o.write(".landlord-store-id", data) },
			otherKey:      func() secret.Store { return openURLStore(t, o.url, keyB) },
		}
	}
}

// backends are every store under test, by the name its tests carry.
var backends = map[string]func(*testing.T) fixture{
	"gcs":                       gcsFixture,
	"file":                      fileFixture,
	"url on S3 with AWS KMS":    urlFixture(s3Objects),
	"url on gs with AWS KMS":    urlFixture(gcsObjects),
	"url on a dir with AWS KMS": urlFixture(dirObjects),
}
