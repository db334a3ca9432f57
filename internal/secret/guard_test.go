package secret_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/landlord-dev/landlord/internal/secret"
)

// A tenant's credentials are neither written to nor looked for in a store that is not
// the cluster's: an empty store would have them regenerated, and lose them when the right one is
// back.
func TestGuardedStoreIsUsedOnlyWhenItIsTheClustersStore(t *testing.T) {
	ctx := context.Background()
	open := func() secret.Store {
		dir := t.TempDir()
		s, err := secret.NewFileStore(dir, dir+"/key.json")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	clusters, other := open(), open()
	recordedID, err := clusters.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recorded := recordedID
	record := func(context.Context) (string, error) { return recorded, nil }
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "db-app"}, Data: map[string][]byte{"password": []byte("p")}}

	t.Run("the recorded store is used", func(t *testing.T) {
		if err := secret.Guarded(clusters, record).Put(ctx, creds); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("another store is refused for every call, and names both identities", func(t *testing.T) {
		g := secret.Guarded(other, record)
		var mismatch *secret.StoreMismatchError
		if err := g.Put(ctx, creds); !errors.As(err, &mismatch) || mismatch.Recorded != recordedID {
			t.Fatalf("Put: %v, want a StoreMismatchError naming %s", err, recordedID)
		}
		if _, err := g.Get(ctx, creds.Namespace, creds.Name); !errors.As(err, &mismatch) {
			t.Fatalf("Get: %v", err)
		}
		if _, err := g.List(ctx, creds.Namespace); !errors.As(err, &mismatch) {
			t.Fatalf("List: %v", err)
		}
		if err := g.Delete(ctx, creds.Namespace, creds.Name); !errors.As(err, &mismatch) {
			t.Fatalf("Delete: %v", err)
		}
		if err := g.DeleteIf(ctx, creds.Namespace, creds.Name, func(*corev1.Secret) bool { return true }); !errors.As(err, &mismatch) {
			t.Fatalf("DeleteIf: %v", err)
		}
		if list, _ := other.List(ctx, creds.Namespace); len(list) != 0 {
			t.Fatalf("the other store was written: %d secrets", len(list))
		}
	})
	t.Run("before the cluster records a store, no store is used", func(t *testing.T) {
		recorded = ""
		if err := secret.Guarded(other, record).Put(ctx, creds); !errors.Is(err, secret.ErrNoStoreRecorded) {
			t.Fatalf("Put: %v, want ErrNoStoreRecorded", err)
		}
		if list, _ := other.List(ctx, creds.Namespace); len(list) != 0 {
			t.Fatalf("the other store was written: %d secrets", len(list))
		}
	})
}

// On every backend, a store that is not the one the cluster records — another bucket, prefix or
// directory, with an identity of its own — is refused for every call, and nothing is written
// to it.
func TestEveryBackendRefusesAStoreThatIsNotTheClusters(t *testing.T) {
	ctx := context.Background()
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "db-app"}, Data: map[string][]byte{"password": []byte("p")}}
	for backend, newFixture := range backends {
		t.Run("a "+backend+" store of another identity is refused", func(t *testing.T) {
			clusters, other := newFixture(t).store, newFixture(t).store
			recordedID, err := clusters.Identity(ctx)
			if err != nil {
				t.Fatal(err)
			}
			record := func(context.Context) (string, error) { return recordedID, nil }
			if err := secret.Guarded(clusters, record).Put(ctx, creds); err != nil {
				t.Fatalf("the recorded store was refused: %v", err)
			}
			g := secret.Guarded(other, record)
			var mismatch *secret.StoreMismatchError
			if err := g.Put(ctx, creds); !errors.As(err, &mismatch) || mismatch.Recorded != recordedID || mismatch.Identity == recordedID {
				t.Fatalf("Put: %v, want a StoreMismatchError naming %s and another identity", err, recordedID)
			}
			if _, err := g.Get(ctx, creds.Namespace, creds.Name); !errors.As(err, &mismatch) {
				t.Fatalf("Get: %v", err)
			}
			if _, err := g.List(ctx, creds.Namespace); !errors.As(err, &mismatch) {
				t.Fatalf("List: %v", err)
			}
			if err := g.DeleteIf(ctx, creds.Namespace, creds.Name, func(*corev1.Secret) bool { return true }); !errors.As(err, &mismatch) {
				t.Fatalf("DeleteIf: %v", err)
			}
			if list, _ := other.List(ctx, creds.Namespace); len(list) != 0 {
				t.Fatalf("the other store was written: %d secrets", len(list))
			}
		})
	}
}
