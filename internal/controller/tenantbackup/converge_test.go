package tenantbackup

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// rotatingServer is a database server's logins, on which the tenant controller rotates a
// password (stores the new one, then sets it) while a restore sets the logins back.
type rotatingServer struct {
	passwords map[string]string
	// rotate, when set, runs once, inside the first Ensure, before that Ensure's own password
	// lands: the rotation's Ensure came first, the restore's read of the store before it.
	rotate func()
}

func (s *rotatingServer) Ensure(_ context.Context, _ string, acct database.Account) error {
	if s.rotate != nil {
		rotate := s.rotate
		s.rotate = nil
		rotate()
	}
	s.passwords[acct.Username] = acct.Password
	return nil
}

// TestARestoreSetsLoginsBackToThePasswordStoredLast: a restore sets the logins it wrote into
// back to the passwords the store keeps. A rotation saved and set between the restore's read of
// the store and its own write would otherwise leave the login with the old password, and the
// tenant's Secret with a new one that does not log in.
func TestARestoreSetsLoginsBackToThePasswordStoredLast(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := secret.NewFileStore(dir, dir+"/key.json")
	if err != nil {
		t.Fatal(err)
	}
	secrets := secret.TenantSecrets{Store: store}
	cfg := config.Default()
	ns := cfg.NamespaceName("acme")
	creds := func(password string) resources.DatabaseCredentials {
		return resources.DatabaseCredentials{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg", UID: "acme-uid",
			Account: database.Account{Database: "t_acme_app", Username: "t_acme_app", Password: password}}
	}
	if err := secrets.Save(ctx, resources.StoredCredentials(ns, creds("before-rotation"))); err != nil {
		t.Fatal(err)
	}
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: types.UID("acme-uid")},
		Status: tenancyv1alpha1.TenantStatus{Namespace: ns, Databases: []tenancyv1alpha1.DatabaseStatus{{
			Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg", Database: "t_acme_app", Username: "t_acme_app", SecretName: "db-app",
		}}},
	}
	server := &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: "pg"},
		Spec: tenancyv1alpha1.DatabaseServerSpec{Engine: tenancyv1alpha1.EnginePostgres, Host: "127.0.0.1", Port: 5432}}
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(tenant, server).Build()
	logins := &rotatingServer{passwords: map[string]string{}}
	logins.rotate = func() {
		if err := secrets.Save(ctx, resources.StoredCredentials(ns, creds("after-rotation"))); err != nil {
			t.Fatal(err)
		}
		logins.passwords["t_acme_app"] = "after-rotation"
	}
	r := &RestoreReconciler{Client: c, Config: &cfg, Secrets: secrets, Logins: logins}
	rs := &tenancyv1alpha1.TenantRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "back"},
		Status:     tenancyv1alpha1.TenantRestoreStatus{Tenant: "acme", TenantUID: "acme-uid"},
	}
	rs.Spec.Databases = []string{"app"}
	skipped, err := r.converge(ctx, rs)
	if err != nil || skipped != "" {
		t.Fatalf("converge: %q, %v", skipped, err)
	}
	if got := logins.passwords["t_acme_app"]; got != "after-rotation" {
		t.Errorf("the login's password is %q after the restore; the store keeps %q", got, "after-rotation")
	}
}
