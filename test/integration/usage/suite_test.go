package usage_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
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

// The usage sampler runs as the operator runs it, against the whole local cluster (the real
// quota controller counts what tenants create, and metrics-server serves the metrics API from
// the usage kwok plays for each pod) and real PostgreSQL and MariaDB servers. Its
// clock is a fake one that the tests step by usage.interval to take a sample.
var (
	env      *testenv.Env
	k8s      client.Client
	op       *testenv.Operator
	opConfig = config.Default()
	servers  map[database.Engine]*dbtest.Instance
	clock    = clocktesting.NewFakeClock(time.Now())
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
	if testenv.Short("the usage suite") {
		return 0
	}
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var err error
	if env, err = testenv.StartWith(testenv.Options{MetricsServer: true}); err != nil {
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
	if op, err = env.StartOperatorWith(operator.Options{Config: opConfig, Store: store, Clock: clock}); err != nil {
		return fail(err)
	}
	defer func() { _ = op.Stop() }()
	return m.Run()
}

// sample steps the operator's clock by one usage.interval, which has the sampler take a sample.
func sample() {
	clock.Step(opConfig.Usage.Interval.Duration)
}

// createTenant creates a tenant, deletes it when the test ends, and waits until it is Ready.
func createTenant(t *testing.T, tenant *tenancyv1alpha1.Tenant) {
	t.Helper()
	testenv.CreateTenant(t, k8s, tenant, timeout)
}

func getTenant(g Gomega, name string) *tenancyv1alpha1.Tenant {
	got := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, got)).To(Succeed())
	return got
}
