package secret_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kms "cloud.google.com/go/kms/apiv1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

const (
	bucket = "landlord-secrets"
	keyA   = "projects/p/locations/global/keyRings/landlord/cryptoKeys/a"
	keyB   = "projects/p/locations/global/keyRings/landlord/cryptoKeys/b"
)

func apiKey(namespace, name, value string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Labels: map[string]string{"tenancy.landlord.dev/shared": "true"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte(value)},
	}
}

// fixture is one backend under test, with a way to reach its raw bytes.
type fixture struct {
	store secret.Store
	// raw reads and writes the stored bytes of a secret, bypassing the store.
	readRaw  func(namespace, name string) []byte
	writeRaw func(namespace, name string, data []byte)
	// writeIdentity writes the store's identity object, bypassing the store.
	writeIdentity func(data []byte)
	// otherKey opens the same data with a different key-encryption key.
	otherKey func() secret.Store
}

// startFakes starts Cloud KMS (knowing keyA and keyB) and Cloud Storage (holding bucket) fakes
// for the test, and a real KMS client connected to the first.
func startFakes(t *testing.T) (*secrettest.KMS, *kms.KeyManagementClient, *fakestorage.Server) {
	t.Helper()
	fakeKMS := secrettest.StartKMS(keyA, keyB)
	t.Cleanup(fakeKMS.Stop)
	kmsClient, err := fakeKMS.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gcs, err := secrettest.StartGCS(bucket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gcs.Stop)
	return fakeKMS, kmsClient, gcs
}

func gcsFixture(t *testing.T) fixture {
	t.Helper()
	_, kmsClient, gcs := startFakes(t)
	obj := func(ns, name string) string { return "secrets/" + ns + "/" + name }
	return fixture{
		store: secret.NewGCSStore(gcs.Client(), kmsClient, bucket, "secrets/", keyA, time.Second),
		readRaw: func(ns, name string) []byte {
			o, err := gcs.GetObject(bucket, obj(ns, name))
			if err != nil {
				t.Fatal(err)
			}
			return o.Content
		},
		writeRaw: func(ns, name string, data []byte) {
			gcs.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: obj(ns, name)}, Content: data})
		},
		writeIdentity: func(data []byte) {
			gcs.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: "secrets/.landlord-store-id"}, Content: data})
		},
		otherKey: func() secret.Store {
			return secret.NewGCSStore(gcs.Client(), kmsClient, bucket, "secrets/", keyB, time.Second)
		},
	}
}

func fileFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	store, err := secret.NewFileStore(filepath.Join(dir, "data"), filepath.Join(dir, "key.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := func(ns, name string) string { return filepath.Join(dir, "data", ns, name+".secret") }
	return fixture{
		store: store,
		readRaw: func(ns, name string) []byte {
			b, err := os.ReadFile(path(ns, name))
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		writeRaw: func(ns, name string, data []byte) {
			_ = os.MkdirAll(filepath.Dir(path(ns, name)), 0o700)
			if err := os.WriteFile(path(ns, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		writeIdentity: func(data []byte) {
			if err := os.WriteFile(filepath.Join(dir, "data", ".landlord-store-id"), data, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		otherKey: func() secret.Store {
			other, err := secret.NewFileStore(filepath.Join(dir, "data"), filepath.Join(dir, "other-key.json"))
			if err != nil {
				t.Fatal(err)
			}
			return other
		},
	}
}

// Every backend keeps the same promises.
func TestStores(t *testing.T) {
	for backend, newFixture := range backends {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()

			t.Run("a secret put is the secret got back", func(t *testing.T) {
				f := newFixture(t)
				in := apiKey("landlord-templates", "stripe", "sk_live_1")
				in.Annotations = map[string]string{"tenancy.landlord.dev/tenant-selector": "plan=enterprise"}
				if err := f.store.Put(ctx, in); err != nil {
					t.Fatal(err)
				}
				out, err := f.store.Get(ctx, "landlord-templates", "stripe")
				if err != nil {
					t.Fatal(err)
				}
				if string(out.Data["token"]) != "sk_live_1" || out.Labels["tenancy.landlord.dev/shared"] != "true" ||
					out.Annotations["tenancy.landlord.dev/tenant-selector"] != "plan=enterprise" || out.Type != corev1.SecretTypeOpaque {
					t.Errorf("round trip changed the secret: %+v", out)
				}
			})

			t.Run("a store's identity is written once, read back the same, and listed as no secret", func(t *testing.T) {
				f := newFixture(t)
				first, err := f.store.Identity(ctx)
				if err != nil || first == "" {
					t.Fatalf("identity %q: %v", first, err)
				}
				again, err := f.store.Identity(ctx)
				if err != nil || again != first {
					t.Fatalf("identity read again is %q (%v), want %q", again, err, first)
				}
				// Another handle on the same store (another replica, landlordctl) sees the same identity.
				if other, err := f.otherKey().Identity(ctx); err != nil || other != first {
					t.Fatalf("another handle's identity is %q (%v), want %q", other, err, first)
				}
				if list, err := f.store.List(ctx, "landlord-templates"); err != nil || len(list) != 0 {
					t.Fatalf("the identity shows in a listing: %v, %v", list, err)
				}
				if fresh, err := newFixture(t).store.Identity(ctx); err != nil || fresh == first {
					t.Fatalf("a new store's identity is %q (%v), want one of its own", fresh, err)
				}
			})

			t.Run("an empty identity is an error, never an identity that matches a namespace recording none", func(t *testing.T) {
				f := newFixture(t)
				f.writeIdentity(nil)
				if id, err := f.store.Identity(ctx); err == nil {
					t.Fatalf("identity %q from an empty identity object", id)
				}
			})

			t.Run("what is stored does not contain the value", func(t *testing.T) {
				f := newFixture(t)
				if err := f.store.Put(ctx, apiKey("ns", "s", "very-secret-value")); err != nil {
					t.Fatal(err)
				}
				if raw := f.readRaw("ns", "s"); bytes.Contains(raw, []byte("very-secret-value")) {
					t.Error("plaintext found at rest")
				}
			})

			t.Run("a put replaces the previous value", func(t *testing.T) {
				f := newFixture(t)
				_ = f.store.Put(ctx, apiKey("ns", "s", "one"))
				_ = f.store.Put(ctx, apiKey("ns", "s", "two"))
				out, err := f.store.Get(ctx, "ns", "s")
				if err != nil || string(out.Data["token"]) != "two" {
					t.Errorf("got %v, %v", out, err)
				}
			})

			t.Run("list returns a namespace's secrets and nothing else", func(t *testing.T) {
				f := newFixture(t)
				for _, s := range []*corev1.Secret{apiKey("a", "x", "1"), apiKey("a", "y", "2"), apiKey("ab", "z", "3")} {
					if err := f.store.Put(ctx, s); err != nil {
						t.Fatal(err)
					}
				}
				list, err := f.store.List(ctx, "a")
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, s := range list {
					names = append(names, s.Name)
				}
				if strings.Join(names, ",") != "x,y" {
					t.Errorf("listed %v", names)
				}
				empty, err := f.store.List(ctx, "nobody")
				if err != nil || len(empty) != 0 {
					t.Errorf("empty namespace listed %v, %v", empty, err)
				}
			})

			t.Run("a deleted secret is not found", func(t *testing.T) {
				f := newFixture(t)
				_ = f.store.Put(ctx, apiKey("ns", "s", "1"))
				if err := f.store.Delete(ctx, "ns", "s"); err != nil {
					t.Fatal(err)
				}
				if _, err := f.store.Get(ctx, "ns", "s"); !errors.Is(err, secret.ErrNotFound) {
					t.Errorf("get after delete: %v", err)
				}
				if err := f.store.Delete(ctx, "ns", "s"); !errors.Is(err, secret.ErrNotFound) {
					t.Errorf("second delete: %v", err)
				}
			})

			t.Run("a missing secret is not found", func(t *testing.T) {
				f := newFixture(t)
				if _, err := f.store.Get(ctx, "ns", "nope"); !errors.Is(err, secret.ErrNotFound) {
					t.Errorf("got %v", err)
				}
			})

			t.Run("a tampered ciphertext does not open", func(t *testing.T) {
				f := newFixture(t)
				_ = f.store.Put(ctx, apiKey("ns", "s", "1"))
				raw := f.readRaw("ns", "s")
				raw[len(raw)-1] ^= 0x01
				f.writeRaw("ns", "s", raw)
				if _, err := f.store.Get(ctx, "ns", "s"); err == nil || errors.Is(err, secret.ErrNotFound) {
					t.Errorf("tampered secret opened: %v", err)
				}
			})

			t.Run("a blob moved to another name does not open", func(t *testing.T) {
				f := newFixture(t)
				_ = f.store.Put(ctx, apiKey("tenant-a", "db", "a-password"))
				f.writeRaw("tenant-b", "db", f.readRaw("tenant-a", "db"))
				if _, err := f.store.Get(ctx, "tenant-b", "db"); err == nil {
					t.Error("a secret swapped into another tenant opened")
				}
			})

			t.Run("another key cannot open the data", func(t *testing.T) {
				f := newFixture(t)
				_ = f.store.Put(ctx, apiKey("ns", "s", "1"))
				if _, err := f.otherKey().Get(ctx, "ns", "s"); err == nil {
					t.Error("opened under another key")
				}
			})

			t.Run("names that are not Kubernetes names are refused", func(t *testing.T) {
				f := newFixture(t)
				for _, bad := range [][2]string{{"../etc", "x"}, {"ns", "../../key"}, {"NS", "x"}, {"ns", ""}} {
					if err := f.store.Put(ctx, apiKey(bad[0], bad[1], "1")); err == nil {
						t.Errorf("put %q/%q was accepted", bad[0], bad[1])
					}
				}
			})
		})
	}
}

func TestGCSStoreErrors(t *testing.T) {
	ctx := context.Background()
	fakeKMS, kmsClient, gcs := startFakes(t)

	t.Run("a missing bucket is named in the error", func(t *testing.T) {
		store := secret.NewGCSStore(gcs.Client(), kmsClient, "no-such-bucket", "", keyA, time.Second)
		err := store.Put(ctx, apiKey("ns", "s", "1"))
		if err == nil || !strings.Contains(err.Error(), "gs://no-such-bucket") {
			t.Errorf("got %v", err)
		}
	})

	t.Run("a missing KMS key is named in the error", func(t *testing.T) {
		store := secret.NewGCSStore(gcs.Client(), kmsClient, bucket, "", "projects/p/locations/global/keyRings/r/cryptoKeys/missing", time.Second)
		err := store.Put(ctx, apiKey("ns", "s", "1"))
		if err == nil || !strings.Contains(err.Error(), "cryptoKeys/missing does not exist") {
			t.Errorf("got %v", err)
		}
	})

	t.Run("a KMS key the operator may not use is reported as a permission problem", func(t *testing.T) {
		const denied = "projects/p/locations/global/keyRings/r/cryptoKeys/denied"
		fakeKMS.Deny(denied)
		store := secret.NewGCSStore(gcs.Client(), kmsClient, bucket, "", denied, time.Second)
		err := store.Put(ctx, apiKey("ns", "s", "1"))
		if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), "cryptoKeys/denied") {
			t.Errorf("got %v", err)
		}
	})

	t.Run("an unavailable KMS is an error, never an empty secret", func(t *testing.T) {
		store := secret.NewGCSStore(gcs.Client(), kmsClient, bucket, "", keyA, time.Second)
		if err := store.Put(ctx, apiKey("ns", "s", "1")); err != nil {
			t.Fatal(err)
		}
		fakeKMS.SetDown(true)
		defer fakeKMS.SetDown(false)
		if _, err := store.Get(ctx, "ns", "s"); err == nil || errors.Is(err, secret.ErrNotFound) {
			t.Errorf("got %v", err)
		}
		if err := store.Put(ctx, apiKey("ns", "t", "1")); err == nil {
			t.Error("put succeeded without KMS")
		}
	})

	t.Run("no error message carries a secret value", func(t *testing.T) {
		store := secret.NewGCSStore(gcs.Client(), kmsClient, bucket, "", keyA, time.Second)
		_ = store.Put(ctx, apiKey("ns", "leak", "hunter2-value"))
		fakeKMS.SetDown(true)
		defer fakeKMS.SetDown(false)
		_, err := store.Get(ctx, "ns", "leak")
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("got %v", err)
		}
	})
}

func TestFileStoreKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.json")
	ctx := context.Background()
	store, err := secret.NewFileStore(filepath.Join(dir, "data"), keyFile)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the key is created on first use, readable only by its owner", func(t *testing.T) {
		info, err := os.Stat(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("key file mode %v", info.Mode().Perm())
		}
	})

	t.Run("a store reopened with the same key reads what was written", func(t *testing.T) {
		if err := store.Put(ctx, apiKey("ns", "s", "kept")); err != nil {
			t.Fatal(err)
		}
		again, err := secret.NewFileStore(filepath.Join(dir, "data"), keyFile)
		if err != nil {
			t.Fatal(err)
		}
		out, err := again.Get(ctx, "ns", "s")
		if err != nil || string(out.Data["token"]) != "kept" {
			t.Errorf("got %v, %v", out, err)
		}
	})

	t.Run("an identity that exists but cannot be read is an error, not an endless retry", func(t *testing.T) {
		data := filepath.Join(dir, "dangling")
		broken, err := secret.NewFileStore(data, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(data, ".landlord-store-id")); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := broken.Identity(ctx); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Error("a dangling identity link read as an identity")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Identity did not return on a dangling identity link")
		}
	})

	t.Run("a corrupt key file is an error, not a new key", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.json")
		_ = os.WriteFile(bad, []byte("not a keyset"), 0o600)
		if _, err := secret.NewFileStore(filepath.Join(dir, "data"), bad); err == nil {
			t.Error("opened with a corrupt key")
		}
	})
}
