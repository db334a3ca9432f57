package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
	"github.com/landlord-dev/landlord/test/testenv"
)

// interruptedPuts is a store that stops taking writes after a number of them, as a migration cut
// short does.
type interruptedPuts struct {
	secret.Migratable
	left int
}

func (s *interruptedPuts) Put(ctx context.Context, sec *corev1.Secret) error {
	if s.left == 0 {
		return errors.New("interrupted")
	}
	s.left--
	return s.Migratable.Put(ctx, sec)
}

func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "landlord.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The store moves from a directory to S3 (gofakes3, under an AWS KMS key of Local KMS) and back,
// with the cluster's recorded identity following it.
func TestSecretsMigrateMovesTheStoreAndTheClusterWithIt(t *testing.T) {
	ctx := context.Background()
	testenv.NeedCluster(t)
	env, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := writeKubeconfig(t, env)
	s3, key := secrettest.StartAWS(t, "landlord", "shared")
	if err := s3.PutObject("shared", "README.md", []byte("another team's files")); err != nil {
		t.Fatal(err)
	}

	fileConfig := fileStoreConfig(t)
	for _, args := range [][]string{
		{"secrets", "put", "api-key", "--from-literal", "token=sk_live_1", "--shared"},
		{"secrets", "put", "webhook", "--from-literal", "token=whsec_2", "--shared"},
		{"secrets", "put", "db-app", "-n", "tenant-acme", "--from-literal", "password=pw-acme"},
		{"secrets", "put", "db-app", "-n", "tenant-globex", "--from-literal", "password=pw-globex"},
		{"secrets", "sync", "--kubeconfig", kubeconfig},
	} {
		if out, err := landlordctl(t, fileConfig, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	recorded := func() string {
		ns := &corev1.Namespace{}
		if err := env.AdminClient.Get(ctx, client.ObjectKey{Name: "landlord-templates"}, ns); err != nil {
			t.Fatal(err)
		}
		return ns.Annotations[tenancyv1alpha1.SecretStoreAnnotation]
	}
	fileID := recorded()
	if fileID == "" {
		t.Fatal("the sync recorded no store")
	}
	objects := s3.URL("landlord", "prod/")
	urlConfig := writeConfig(t, "secrets:\n  store:\n    backend: url\n    url:\n      objects: '"+objects+"'\n      key: '"+key+"'\n")
	migrate := func(config string, args ...string) (string, error) {
		t.Helper()
		out, err := landlordctl(t, config, append([]string{"secrets", "migrate", "--kubeconfig", kubeconfig}, args...)...)
		t.Logf("\n%s", out)
		return out, err
	}

	t.Run("a bucket holding other data is refused, and nothing changes", func(t *testing.T) {
		_, err := migrate(fileConfig, "--to", s3.URL("shared", ""), "--to-key", key)
		if err == nil || !strings.Contains(err.Error(), "holds 1 objects that are not secret store records (README.md)") {
			t.Fatalf("err=%v, want the other data named", err)
		}
		if got := recorded(); got != fileID {
			t.Fatalf("the cluster records %s, want %s still", got, fileID)
		}
	})

	t.Run("an interrupted migration, run again, completes and switches the cluster to the new store", func(t *testing.T) {
		// The first run stops after two records.
		cfg, err := config.Load(fileConfig)
		if err != nil {
			t.Fatal(err)
		}
		from, err := secret.Open(ctx, cfg.Secrets.Store)
		if err != nil {
			t.Fatal(err)
		}
		to, err := secret.OpenBucketStore(ctx, objects, key)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = to.Close() })
		if _, err := (secret.Migration{From: from.(secret.Migratable), To: &interruptedPuts{Migratable: to, left: 2}}).Run(ctx); err == nil {
			t.Fatal("the interrupted run succeeded")
		}
		if got := recorded(); got != fileID {
			t.Fatalf("an interrupted run switched the cluster to %s", got)
		}

		out, err := migrate(fileConfig, "--to", objects, "--to-key", key)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"resumed the migration", "2 records copied, 2 already there, 0 removed", "backend: url", "objects: " + objects} {
			if !strings.Contains(out, want) {
				t.Errorf("the output does not say %q", want)
			}
		}
		newID, err := to.Identity(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := recorded(); got != newID || newID == fileID {
			t.Fatalf("the cluster records %s, want the new store's %s", got, newID)
		}
		contents, err := to.Contents(ctx)
		if err != nil || len(contents.Records) != 4 {
			t.Fatalf("the new store holds %v (%v), want the 4 records once each", contents.Records, err)
		}
	})

	t.Run("run once more, it sees the work done and copies nothing", func(t *testing.T) {
		out, err := migrate(fileConfig, "--to", objects, "--to-key", key)
		if err != nil || !strings.Contains(out, "already records the new store") || strings.Contains(out, "copied") {
			t.Fatalf("err=%v", err)
		}
	})

	t.Run("the old configuration's store is refused by the cluster from now on", func(t *testing.T) {
		_, err := landlordctl(t, fileConfig, "secrets", "sync", "--kubeconfig", kubeconfig)
		if err == nil || !strings.Contains(err.Error(), "is not the store namespace landlord-templates is mirrored from") {
			t.Fatalf("err=%v, want the old store refused", err)
		}
	})

	t.Run("with the printed configuration, the new store is the cluster's and holds every value", func(t *testing.T) {
		if out, err := landlordctl(t, urlConfig, "secrets", "sync", "--kubeconfig", kubeconfig); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for ns, want := range map[string]string{"landlord-templates": "token: sk_live_1", "tenant-globex": "password: pw-globex"} {
			name := "api-key"
			if ns != "landlord-templates" {
				name = "db-app"
			}
			out, err := landlordctl(t, urlConfig, "secrets", "get", name, "-n", ns, "--show")
			if err != nil || !strings.Contains(out, want) {
				t.Fatalf("%s/%s: err=%v\n%s", ns, name, err, out)
			}
		}
	})

	t.Run("and back to a directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "store")
		out, err := migrate(urlConfig, "--to", "file://"+dir)
		if err != nil || !strings.Contains(out, "4 records copied") || !strings.Contains(out, "dir: "+dir) {
			t.Fatalf("err=%v", err)
		}
		back := writeConfig(t, "secrets:\n  store:\n    backend: file\n    file: {dir: "+dir+"}\n")
		if out, err := landlordctl(t, back, "secrets", "sync", "--kubeconfig", kubeconfig); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		out, err = landlordctl(t, back, "secrets", "get", "db-app", "-n", "tenant-acme", "--show")
		if err != nil || !strings.Contains(out, "password: pw-acme") {
			t.Fatalf("err=%v\n%s", err, out)
		}
		if got := recorded(); got == fileID || got == "" {
			t.Fatalf("the cluster records %q, want the new directory's identity", got)
		}
	})
}

// The flags are checked before anything is opened, naming the flag and the part at fault.
func TestSecretsMigrateNamesTheFlagAtFault(t *testing.T) {
	cfg := fileStoreConfig(t)
	for args, want := range map[string]string{
		"secrets migrate":                                              `required flag(s) "to" not set`,
		"secrets migrate --to s3://b":                                  "--to-key is required unless --to names a directory",
		"secrets migrate --to ftp://b --to-key awskms://k":             `--to: the scheme "ftp" is not one of s3, azblob, gs, file`,
		"secrets migrate --to s3://b/prod --to-key awskms://k":         "--to: the path \"/prod\" is not allowed",
		"secrets migrate --to s3://b --to-key base64key://c2VjcmV0":    `--to-key: the scheme "base64key"`,
		"secrets migrate --to s3://AKIA:hunter2@b --to-key awskms://k": "--to: credentials (user:password@) are not allowed",
	} {
		t.Run(args+" is refused", func(t *testing.T) {
			_, err := landlordctl(t, cfg, strings.Fields(args)...)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err=%v, want %q", err, want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error repeats a password: %v", err)
			}
		})
	}
}
