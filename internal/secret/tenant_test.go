package secret_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/landlord-dev/landlord/internal/secret"
)

func TestTenantSecretsSurviveUntilForgotten(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	store, err := secret.NewFileStore(filepath.Join(dir, "data"), filepath.Join(dir, "key.json"))
	if err != nil {
		t.Fatal(err)
	}
	ts := secret.TenantSecrets{Store: store}

	t.Run("a saved credential loads back with the same value", func(t *testing.T) {
		if err := ts.Save(ctx, apiKey("tenant-acme", "db-cloud", "pw-1")); err != nil {
			t.Fatal(err)
		}
		got, err := ts.Load(ctx, "tenant-acme", "db-cloud")
		if err != nil || string(got.Data["token"]) != "pw-1" {
			t.Fatalf("got %v, %v", got, err)
		}
	})

	t.Run("another tenant's secrets are separate", func(t *testing.T) {
		_ = ts.Save(ctx, apiKey("tenant-globex", "db-cloud", "pw-2"))
		all, err := ts.LoadAll(ctx, "tenant-acme")
		if err != nil || len(all) != 1 || string(all[0].Data["token"]) != "pw-1" {
			t.Fatalf("got %v, %v", all, err)
		}
	})

	t.Run("forgetting a secret deletes only that one, and may be repeated", func(t *testing.T) {
		for range 2 {
			if err := ts.Delete(ctx, "tenant-acme", "db-cloud", ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ts.Load(ctx, "tenant-acme", "db-cloud"); !errors.Is(err, secret.ErrNotFound) {
			t.Errorf("got %v", err)
		}
		if _, err := ts.Load(ctx, "tenant-globex", "db-cloud"); err != nil {
			t.Errorf("the other tenant lost its secret: %v", err)
		}
	})
}
