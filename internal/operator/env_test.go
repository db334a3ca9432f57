package operator_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

const timeout = 2 * time.Minute

// The tests that only add tenants and run operators share one whole local cluster, started by
// the first of them and reset after each (sharedEnv). Those that change what the cluster holds
// beyond tenants start their own (ownEnv): the CRDs, or the identity the admission policies
// exempt, which the next test's operator would find changed (an operator rewriting the policies
// for its own identity has its first writes refused until the API server's admission takes the
// new policies in).
var shared struct {
	once     sync.Once
	env      *testenv.Env
	store    secret.Store
	storeDir string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		_ = shared.env.Stop()
		_ = os.RemoveAll(shared.storeDir)
	}
	os.Exit(code)
}

// sharedEnv is the package's shared local cluster and its secret store: one store, as a
// cluster has (its template namespace records which store it is, and an operator given another
// refuses to mirror from it).
//
// When the test ends, after its operators have stopped, every tenant, pool and claim it left is
// removed, finalizers and all, and the tenant namespaces with them: the next test starts from a
// cluster holding none.
func sharedEnv(t *testing.T) (*testenv.Env, secret.Store) {
	t.Helper()
	testenv.NeedCluster(t)
	shared.once.Do(func() {
		if shared.storeDir, shared.err = os.MkdirTemp("", "landlord-store-"); shared.err != nil {
			return
		}
		if shared.store, shared.err = secret.NewFileStore(shared.storeDir, shared.storeDir+"/key.json"); shared.err != nil {
			return
		}
		shared.env, shared.err = testenv.Start()
	})
	NewWithT(t).Expect(shared.err).NotTo(HaveOccurred())
	// Registered first, so it runs last: after the operators the test started have stopped.
	t.Cleanup(func() { reset(t, shared.env) })
	return shared.env, shared.store
}

// ownEnv starts a whole local cluster for one test alone.
func ownEnv(t *testing.T) (*testenv.Env, secret.Store) {
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

// reset removes what a test left in the shared cluster with no operator running: finalizers are
// dropped rather than honoured (no database or stored secret outlives the test's store).
func reset(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	unfinalize := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	for _, list := range []client.ObjectList{&tenancyv1alpha1.TenantClaimList{}, &tenancyv1alpha1.TenantPoolList{}, &tenancyv1alpha1.TenantList{}} {
		g.Expect(env.AdminClient.List(ctx, list)).To(Succeed())
		g.Expect(meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if err := env.AdminClient.Patch(ctx, obj, unfinalize); err != nil {
				return client.IgnoreNotFound(err)
			}
			if _, ok := obj.(*tenancyv1alpha1.Tenant); ok {
				return client.IgnoreNotFound(testenv.ConfirmedDelete(ctx, env.AdminClient, obj.GetName()))
			}
			return client.IgnoreNotFound(env.AdminClient.Delete(ctx, obj))
		})).To(Succeed())
	}
	// Namespaces have no collection delete.
	namespaces := &corev1.NamespaceList{}
	g.Expect(env.AdminClient.List(ctx, namespaces, client.HasLabels{tenancyv1alpha1.TenantLabel})).To(Succeed())
	for i := range namespaces.Items {
		g.Expect(client.IgnoreNotFound(env.AdminClient.Delete(ctx, &namespaces.Items[i]))).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		tenants := &tenancyv1alpha1.TenantList{}
		g.Expect(env.AdminClient.List(ctx, tenants)).To(Succeed())
		g.Expect(tenants.Items).To(BeEmpty())
	}).WithTimeout(timeout).Should(Succeed())
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
