package tenantbackup_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
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
// AWS SDK). Their Jobs really run: the local cluster runs a pod of testenv.BackupImage as
// `landlord job` over the Job's own plan, a process of this machine with the Job's environment
// (the store's credentials from backups.envFromSecrets) and volumes.
var (
	env      *testenv.Env
	k8s      client.Client
	opConfig = config.Default()
	servers  map[database.Engine]*dbtest.Instance
	// exportDir is backups.exportAtPurge's bucket, a directory.
	exportDir string
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
	if env, err = testenv.StartWith(testenv.Options{RunJobs: true}); err != nil {
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
	if err := roomForHeldJobs(ctx); err != nil {
		return fail(err)
	}
	if err := createStoreCredentials(ctx); err != nil {
		return fail(err)
	}
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
	// A Purged tenant's newest backup is exported here first.
	if exportDir, err = os.MkdirTemp("", "landlord-exports-"); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(exportDir)
	opConfig.Backups.ExportAtPurge = "file://" + exportDir
	// Tenant admins may ask for two backups and one restore a day, and keep two.
	opConfig.Backups.SelfService = config.SelfService{Enabled: true, BackupsPerDay: ptr.To[int32](2), Keep: 2, RestoresPerDay: ptr.To[int32](1)}
	op, err := env.StartOperatorWith(operator.Options{Config: opConfig, Store: store, Clock: suiteClock})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = op.Stop() }()
	return m.Run()
}

// roomForHeldJobs lets the suite's database servers run as many Jobs at once as its tests hold:
// a test's backup Jobs stay held (running) until it releases them, and many are never released,
// which on servers of the default limit would leave later tests' backups waiting their turn. The
// tests of the limit set their own (setJobLimit).
func roomForHeldJobs(ctx context.Context) error {
	list := &tenancyv1alpha1.DatabaseServerList{}
	if err := k8s.List(ctx, list); err != nil {
		return err
	}
	for i := range list.Items {
		s := &list.Items[i]
		s.Spec.MaxConcurrentJobs = ptr.To[int32](1000)
		if err := k8s.Update(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// withDatabases gives a tenant a PostgreSQL database "app" and a MySQL database "legacy".
func withDatabases(t *tenancyv1alpha1.Tenant) {
	t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	t.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: "legacy"}}
}

// newTenant is a tenant with the given name and spec changes applied.
func newTenant(name string, mutate ...func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
	return testenv.NewTenant(name, mutate...)
}

// createTenant creates a tenant, deletes it when the test ends, and waits until it is Ready.
func createTenant(t *testing.T, tenant *tenancyv1alpha1.Tenant) {
	t.Helper()
	testenv.CreateTenant(t, k8s, tenant, timeout)
}

// deleteTenant deletes a tenant, confirming it as an administrator does, and waits until it is
// gone (its data is kept: it is not Purged).
func deleteTenant(t *testing.T, name string) {
	t.Helper()
	testenv.DeleteTenants(t, k8s, 2*timeout, name)
}

// credentials reads a tenant's credentials Secret.
func credentials(g Gomega, tenant, name string) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{
		Namespace: opConfig.NamespaceName(tenant), Name: tenancyv1alpha1.DatabaseSecretName(name),
	}, s)).To(Succeed())
	return s
}
