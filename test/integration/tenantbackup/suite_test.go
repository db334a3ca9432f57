package tenantbackup_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

// The backup controllers run as the operator runs them, against the whole local cluster, real
// PostgreSQL and MariaDB servers, an S3 server and an AWS KMS emulator (both spoken to by the
// AWS SDK). The local cluster's nodes run no containers: a test plays a Job's container by
// running `landlord job` over the Job's own plan in this process, then lets the pod end.
var (
	env      *testenv.Env
	k8s      client.Client
	opConfig = config.Default()
	servers  map[database.Engine]*dbtest.Instance
	// suiteClock is the time backup schedules read; tests step it (a minute's step ticks the
	// schedules, as the real clock does every minute).
	suiteClock = clocktesting.NewFakeClock(time.Now())
)

const (
	timeout  = 30 * time.Second
	pgServer = testenv.PostgresServer
	myServer = testenv.MySQLServer
)

func TestMain(m *testing.M) {
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testenv.Short("the backup controllers' suite") {
		return 0
	}
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var err error
	if env, err = testenv.Start(); err != nil {
		return fail(err)
	}
	defer func() { _ = env.Stop() }()
	k8s = env.AdminClient
	started, stop, err := env.StartDatabaseServers(ctx, opConfig.Databases.CredentialsNamespace)
	if err != nil {
		return fail(err)
	}
	defer stop()
	servers = started
	storeDir, err := os.MkdirTemp("", "landlord-store-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(storeDir)
	store, err := secret.NewFileStore(storeDir, storeDir+"/key.json")
	if err != nil {
		return fail(err)
	}
	stopBackupStore, err := startBackupStore()
	if err != nil {
		return fail(err)
	}
	defer stopBackupStore()
	op, err := env.StartOperatorWith(operator.Options{Config: opConfig, Store: store, Clock: suiteClock})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = op.Stop() }()
	return m.Run()
}

// withDatabases gives a tenant a PostgreSQL database "app" and a MySQL database "legacy".
func withDatabases(t *tenancyv1alpha1.Tenant) {
	t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	t.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: "legacy"}}
}

// newTenant is a tenant with the given name and spec changes applied.
func newTenant(name string, mutate ...func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
	t := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.TenantSpec{Organization: "Acme Inc.", Email: "ops@acme.example.com"},
	}
	for _, f := range mutate {
		f(t)
	}
	return t
}

// createTenant creates a tenant, deletes it when the test ends, and waits until it is Ready.
func createTenant(t *testing.T, tenant *tenancyv1alpha1.Tenant) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Create(context.Background(), tenant)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, tenant.Name) })
	g.Eventually(func(g Gomega) {
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: tenant.Name}, got)).To(Succeed())
		res, err := testenv.KStatus(got)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Status).To(Equal(status.CurrentStatus), "conditions: %+v", got.Status.Conditions)
	}).WithTimeout(timeout).Should(Succeed())
}

// deleteTenant deletes a tenant, confirming it as an administrator does, and waits until it is
// gone (its data is kept: it is not Purged).
func deleteTenant(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	confirm := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, tenancyv1alpha1.DeletionConfirmationAnnotation, name)
	if err := k8s.Patch(ctx, tenant, client.RawPatch(types.MergePatchType, []byte(confirm))); client.IgnoreNotFound(err) != nil {
		t.Errorf("confirming the deletion of tenant %s: %v", name, err)
	}
	if err := k8s.Delete(ctx, tenant); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting tenant %s: %v", name, err)
	}
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(tenant), tenant))
	}).WithTimeout(2*timeout).Should(BeTrue(), "tenant %s was not deleted", name)
}

// credentials reads a tenant's credentials Secret.
func credentials(g Gomega, tenant, name string) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{
		Namespace: opConfig.NamespaceName(tenant), Name: tenancyv1alpha1.DatabaseSecretName(name),
	}, s)).To(Succeed())
	return s
}
