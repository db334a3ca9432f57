package secret

import (
	"context"
	"fmt"

	kms "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/storage"

	"github.com/landlord-dev/landlord/internal/config"
)

// Open returns the store the configuration names. Cloud clients find credentials in the
// environment (Google's Application Default Credentials, AWS's and Azure's default credential
// chains, Vault's VAULT_ADDR and VAULT_TOKEN).
func Open(ctx context.Context, c config.SecretStore) (Store, error) {
	switch c.Backend {
	case config.StoreBackendFile:
		return NewFileStore(c.File.Dir, c.File.KeyFile)
	case config.StoreBackendGCS:
		gcs, err := storage.NewClient(ctx)
		if err != nil {
			return nil, fmt.Errorf("connecting to Cloud Storage (check Application Default Credentials): %w", err)
		}
		kmsClient, err := kms.NewKeyManagementClient(ctx)
		if err != nil {
			return nil, fmt.Errorf("connecting to Cloud KMS (check Application Default Credentials): %w", err)
		}
		return NewGCSStore(gcs, kmsClient, c.GCS.Bucket, c.GCS.Prefix, c.GCS.KMSKey, 0), nil
	case config.StoreBackendURL:
		return OpenBucketStore(ctx, c.URL.Objects, c.URL.Key)
	}
	return nil, fmt.Errorf("unknown secret store backend %q", c.Backend)
}
