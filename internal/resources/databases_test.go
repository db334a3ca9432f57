package resources_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
)

func testCredentials() resources.DatabaseCredentials {
	return resources.DatabaseCredentials{
		Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg-1", Rotation: "r1",
		Account: database.Account{Database: "acme_app", Username: "acme_app", Password: "s3cret"},
	}
}

func TestStoredCredentialsRoundTrip(t *testing.T) {
	want := testCredentials()
	want.UID = "uid-1"
	stored := resources.StoredCredentials("tenant-acme", want)
	if stored.Annotations[tenancyv1alpha1.TenantUIDLabel] != "uid-1" {
		t.Errorf("the record does not name its tenant: %v", stored.Annotations)
	}
	got, isDB, err := resources.ParseStoredCredentials(stored, "app")
	if err != nil || !isDB {
		t.Fatalf("isDB=%v err=%v", isDB, err)
	}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestStoredSecretsThatAreNotCredentials(t *testing.T) {
	t.Run("a secret without an engine label is not a database record", func(t *testing.T) {
		s := resources.StoredCredentials("tenant-acme", testCredentials())
		s.Labels = nil
		if _, isDB, _ := resources.ParseStoredCredentials(s, "app"); isDB {
			t.Error("want isDB false")
		}
	})
	t.Run("a record without a password is an error", func(t *testing.T) {
		s := resources.StoredCredentials("tenant-acme", testCredentials())
		delete(s.Data, tenancyv1alpha1.CredentialsKeyPassword)
		if _, _, err := resources.ParseStoredCredentials(s, "app"); err == nil {
			t.Error("want an error")
		}
	})
}

func TestDatabaseSecret(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "uid-1"}}
	tenant.Spec.PgBouncer = &tenancyv1alpha1.PgBouncer{DefaultPoolSize: 25}
	srv := database.Server{Engine: database.Postgres, Host: "pg.example.com", Port: 5432, TLS: database.TLSRequire}
	s := resources.DatabaseSecret(tenant, "tenant-acme", testCredentials(), srv)

	t.Run("it holds everything an application needs to connect", func(t *testing.T) {
		for k, want := range map[string]string{
			tenancyv1alpha1.CredentialsKeyHost: "pg.example.com", tenancyv1alpha1.CredentialsKeyPort: "5432", tenancyv1alpha1.CredentialsKeyTLS: "require",
			tenancyv1alpha1.CredentialsKeyDatabase: "acme_app", tenancyv1alpha1.CredentialsKeyUsername: "acme_app", tenancyv1alpha1.CredentialsKeyPassword: "s3cret",
			tenancyv1alpha1.CredentialsKeyPgBouncerPoolSize: "25",
		} {
			if got := string(s.Data[k]); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if s.Name != "db-app" || s.Namespace != "tenant-acme" {
			t.Errorf("secret is %s/%s", s.Namespace, s.Name)
		}
	})
	t.Run("an intact secret gives its credentials back", func(t *testing.T) {
		got, ok := resources.CredentialsFromSecret(s, "app")
		if !ok || got != testCredentials() {
			t.Errorf("ok=%v got %+v", ok, got)
		}
	})
	t.Run("a secret whose password was edited is not trusted", func(t *testing.T) {
		edited := s.DeepCopy()
		edited.Data[tenancyv1alpha1.CredentialsKeyPassword] = []byte("guessed")
		if _, ok := resources.CredentialsFromSecret(edited, "app"); ok {
			t.Error("an edited secret was trusted")
		}
	})
	t.Run("a server's CA bundle reaches the tenant as ca.crt", func(t *testing.T) {
		withCA := srv
		withCA.CABundle = []byte("-----BEGIN CERTIFICATE-----")
		got := resources.DatabaseSecret(tenant, "tenant-acme", testCredentials(), withCA)
		if string(got.Data[tenancyv1alpha1.CredentialsKeyCA]) != "-----BEGIN CERTIFICATE-----" {
			t.Errorf("ca.crt = %q", got.Data[tenancyv1alpha1.CredentialsKeyCA])
		}
		if _, ok := s.Data[tenancyv1alpha1.CredentialsKeyCA]; ok {
			t.Error("a server without a bundle gave its tenants a ca.crt")
		}
	})
	t.Run("MySQL credentials carry no pooler size", func(t *testing.T) {
		c := testCredentials()
		c.Engine = tenancyv1alpha1.EngineMySQL
		m := resources.DatabaseSecret(tenant, "tenant-acme", c, database.Server{Engine: database.MySQL, Host: "db", Port: 3306})
		if _, ok := m.Data[tenancyv1alpha1.CredentialsKeyPgBouncerPoolSize]; ok {
			t.Error("mysql secret has a pgbouncer key")
		}
	})
}
