package secret_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

// gcsPreconditionStore is the GCS store on the fake server, through a client that gets the
// generation preconditions of deletes enforced as Cloud Storage enforces them.
func gcsPreconditionStore(t *testing.T) secret.Store {
	t.Helper()
	_, kmsClient, gcs := startFakes(t)
	return secret.NewGCSStore(secrettest.ClientWithDeletePreconditions(gcs), kmsClient, bucket, "secrets/", keyA, time.Second)
}

func fileStore(t *testing.T) secret.Store {
	t.Helper()
	return fileFixture(t).store
}

// ownedRecord is a tenant's stored record, marked with the UID of the tenant it belongs to.
func ownedRecord(value, uid string) *corev1.Secret {
	s := apiKey("tenant-acme", "db-cloud", value)
	s.Annotations = map[string]string{"tenancy.landlord.dev/tenant-uid": uid}
	return s
}

func ownedBy(uid string) func(*corev1.Secret) bool {
	return func(s *corev1.Secret) bool { return s.Annotations["tenancy.landlord.dev/tenant-uid"] == uid }
}

func TestConditionalDelete(t *testing.T) {
	ctx := context.Background()
	stores := map[string]func(*testing.T) secret.Store{"gcs": gcsPreconditionStore, "file": fileStore}
	for name, newFixture := range backends {
		if _, ok := stores[name]; !ok {
			stores[name] = func(t *testing.T) secret.Store { return newFixture(t).store }
		}
	}
	for backend, newStore := range stores {
		t.Run(backend, func(t *testing.T) {
			cases := []struct {
				name string
				// match is the delete's test; it gets the store, to write in between like
				// another writer would.
				match     func(store secret.Store) func(*corev1.Secret) bool
				stored    bool
				wantErr   error
				wantValue string // what the store holds after the delete; "" for nothing
			}{
				{
					name: "a record that still names its owner is deleted", stored: true,
					match: func(secret.Store) func(*corev1.Secret) bool { return ownedBy("uid-old") },
				},
				{
					name: "a record that names another owner is kept and the delete says why", stored: true,
					match:   func(secret.Store) func(*corev1.Secret) bool { return ownedBy("uid-someone-else") },
					wantErr: secret.ErrPreconditionFailed, wantValue: "pw-old",
				},
				{
					name:    "a record the store does not hold is not found",
					match:   func(secret.Store) func(*corev1.Secret) bool { return ownedBy("uid-old") },
					wantErr: secret.ErrNotFound,
				},
				{
					name: "a record a newer owner wrote after the old one was read is never deleted", stored: true,
					match: func(store secret.Store) func(*corev1.Secret) bool {
						rewritten := false
						return func(s *corev1.Secret) bool {
							// The first copy read is the old owner's and passes; before it is
							// deleted, a same-named newer tenant writes its own record.
							if !rewritten {
								rewritten = true
								if err := store.Put(ctx, ownedRecord("pw-new", "uid-new")); err != nil {
									t.Fatal(err)
								}
							}
							return ownedBy("uid-old")(s)
						}
					},
					wantErr: secret.ErrPreconditionFailed, wantValue: "pw-new",
				},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					store := newStore(t)
					if tc.stored {
						if err := store.Put(ctx, ownedRecord("pw-old", "uid-old")); err != nil {
							t.Fatal(err)
						}
					}
					err := store.DeleteIf(ctx, "tenant-acme", "db-cloud", tc.match(store))
					if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
						t.Fatalf("delete returned %v, want %v", err, tc.wantErr)
					}
					got, err := store.Get(ctx, "tenant-acme", "db-cloud")
					switch {
					case tc.wantValue == "" && !errors.Is(err, secret.ErrNotFound):
						t.Errorf("the store still holds %v (%v), want nothing", got, err)
					case tc.wantValue != "" && err != nil:
						t.Errorf("the store lost the record: %v", err)
					case tc.wantValue != "" && string(got.Data["token"]) != tc.wantValue:
						t.Errorf("the store holds %q, want %q", got.Data["token"], tc.wantValue)
					}
				})
			}
		})
	}
}
