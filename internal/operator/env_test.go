package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

const timeout = 2 * time.Minute

// startEnv starts a whole local cluster and a file secret store for one test.
func startEnv(t *testing.T) (*testenv.Env, secret.Store) {
	t.Helper()
	g := NewWithT(t)
	testenv.NeedCluster(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	dir := t.TempDir()
	store, err := secret.NewFileStore(dir, dir+"/key.json")
	g.Expect(err).NotTo(HaveOccurred())
	return env, store
}

// createTenants creates plain tenants, as a user would.
func createTenants(t *testing.T, env *testenv.Env, names ...string) {
	t.Helper()
	for _, name := range names {
		NewWithT(t).Expect(env.AdminClient.Create(context.Background(), &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       tenancyv1alpha1.TenantSpec{Organization: "Acme Inc.", Email: "ops@acme.example.com"},
		})).To(Succeed())
	}
}
