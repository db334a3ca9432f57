package integration

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
	"github.com/landlord-dev/landlord/test/testenv"
)

// One control plane and one operator serve every test in the package.
var (
	env      *testenv.Env
	op       *testenv.Operator
	k8s      client.Client
	opConfig = config.Default()
	// store is the operator's secret store; tests may take it down.
	store *secrettest.FlakyStore
	// pg and maria are real database servers, known to the operator as the DatabaseServers
	// pgServer and mariaServer.
	pg, maria *dbtest.Instance
)

const (
	pgServer    = "pg-main"
	mariaServer = "mariadb-main"
)

const timeout = 30 * time.Second

func TestMain(m *testing.M) {
	// Every Eventually polls the API server: gomega's default of 10 ms would keep the two cores
	// the cluster, the databases and the operator share busy answering the test.
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	printed := zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel()))
	logf.SetLogger(logr.New(newCountingSink(printed.GetSink(), tenantReconciles)))
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testenv.Short("the integration suite") {
		return 0
	}
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	k8s = env.AdminClient
	storeDir, err := os.MkdirTemp("", "landlord-store-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(storeDir)
	fileStore, err := secret.NewFileStore(storeDir, storeDir+"/key.json")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	store = secrettest.NewFlakyStore(fileStore)
	if pg, err = dbtest.StartPostgres(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pg.Close()
	if maria, err = dbtest.StartMariaDB(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer maria.Close()
	if err := createDatabaseServers(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Outages are noticed within seconds rather than a minute.
	opConfig.Databases.CheckInterval.Duration = 2 * time.Second
	opConfig.Databases.Timeout.Duration = 5 * time.Second
	opConfig.Secrets.Store.Timeout.Duration = 2 * time.Second
	// Tests add and remove shared secrets a few at a time; the share one sync may remove is
	// tested on namespaces of its own (templatesync_safety_test.go).
	opConfig.Secrets.MaxDeletionPercent = 100
	// Tenants' pods may take this priority class and tolerate this taint besides their pool's
	// (isolation_scheduling_test.go).
	opConfig.Isolation.PriorityClasses = []string{"tenant-batch"}
	opConfig.Isolation.Tolerations = []string{"nvidia.com/gpu:NoSchedule"}
	// A backup tool the platform trusts to restore tenant namespaces as they were
	// (isolation_trusted_test.go).
	opConfig.Isolation.TrustedPrincipals = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "velero", Name: "velero"}}
	// Tenants' pods may query a node-local DNS cache by address and call the platform's telemetry
	// collector (tenant_network_test.go).
	opConfig.Network.DNS.CIDRs = []string{nodeLocalDNS}
	opConfig.Network.PlatformServices = []config.PlatformService{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "telemetry"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "otel-collector"}},
		Ports:             []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(4317))}},
	}}
	if op, err = env.StartOperator(opConfig, store); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = op.Stop() }()
	return m.Run()
}

// opRunsSuiteConfig is whether op runs, with opConfig: what every test expects when it starts.
var opRunsSuiteConfig = true

// restartOperator stops the suite's operator and starts another in its place with cfg, as an
// administrator restarting the operator, or changing its configuration, does. The tests after
// this one need an operator running with opConfig: when this test ends, one is started if the
// one running is not that (a restart failed, or cfg was another configuration and the test
// stopped before it restored opConfig), so whatever goes wrong fails this test alone.
func restartOperator(t *testing.T, cfg config.Config) {
	t.Helper()
	stopOperator(t)
	next, err := env.StartOperator(cfg, store)
	if err != nil {
		// op stays the stopped operator: later tests fail on what it does not do, rather than
		// on a nil operator, should the suite's not start again either.
		t.Fatalf("starting the operator: %v", err)
	}
	op, opRunsSuiteConfig = next, reflect.DeepEqual(cfg, opConfig)
	waitAuditsSettled(t)
}

// stopOperator stops the suite's operator, as an administrator scaling it to zero does, for a
// test to change the cluster while none runs; the test starts it again with startSuiteOperator,
// or, should it stop before that, it is started when the test ends.
func stopOperator(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if !opRunsSuiteConfig {
			startSuiteOperator(t)
		}
	})
	opRunsSuiteConfig = false
	if err := op.Stop(); err != nil {
		t.Errorf("stopping the operator: %v", err)
	}
}

// startSuiteOperator stops whatever operator op is and starts the suite's again.
func startSuiteOperator(t *testing.T) {
	t.Helper()
	_ = op.Stop()
	next, err := env.StartOperator(opConfig, store)
	if err != nil {
		t.Errorf("starting the suite's operator again: %v; the tests after this one have none", err)
		return
	}
	op, opRunsSuiteConfig = next, true
	waitAuditsSettled(t)
}

// waitAuditsSettled waits until a freshly started operator has run the audits its start calls
// for (two, seconds apart, when it had to put a policy back): one still due would run during the
// next test, and count among its requests.
func waitAuditsSettled(t *testing.T) {
	t.Helper()
	NewWithT(t).Eventually(op.Policies.AuditsSettled).WithTimeout(2*timeout).Should(BeTrue(), "the operator's start audits did not finish")
}

// createDatabaseServers registers the test servers with their admin credentials.
func createDatabaseServers(ctx context.Context) error {
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opConfig.Databases.CredentialsNamespace}}); err != nil {
		return err
	}
	for name, inst := range map[string]*dbtest.Instance{pgServer: pg, mariaServer: maria} {
		if err := createDatabaseServer(ctx, name, inst, nil); err != nil {
			return err
		}
	}
	return nil
}

func createDatabaseServer(ctx context.Context, name string, inst *dbtest.Instance, maxTenants *int32) error {
	return env.RegisterDatabaseServer(ctx, opConfig.Databases.CredentialsNamespace, name, inst, func(spec *tenancyv1alpha1.DatabaseServerSpec) {
		spec.MaxTenants = maxTenants
	})
}

// newTenant is a tenant with the given name and spec changes applied.
func newTenant(name string, mutate ...func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
	return testenv.NewTenant(name, mutate...)
}

// createTenant creates a tenant, removes it when the test ends, and waits until it is Ready.
func createTenant(t *testing.T, tenant *tenancyv1alpha1.Tenant) *tenancyv1alpha1.Tenant {
	t.Helper()
	// A tenant of the same name deleted earlier leaves its namespace terminating a while.
	waitNamespaceNotTerminating(t, opConfig.NamespaceName(tenant.Name))
	return testenv.CreateTenant(t, k8s, tenant, timeout)
}

// waitReady waits until the tenant's status is kstatus Current: Ready and observed.
func waitReady(t *testing.T, name string) *tenancyv1alpha1.Tenant {
	t.Helper()
	return testenv.WaitTenantCurrent(t, k8s, name, timeout)
}

// kstatus computes the tenant's status the way kstatus-aware tools (Flux, kubectl wait) do.
func kstatus(g Gomega, tenant *tenancyv1alpha1.Tenant) *status.Result {
	res, err := testenv.KStatus(tenant)
	g.Expect(err).NotTo(HaveOccurred())
	return res
}

// deleteTenant deletes a tenant and waits until it is gone: its finalizer has deleted the
// namespace (which the namespace controller goes on emptying) and dropped what it had to.
func deleteTenant(t *testing.T, name string) {
	t.Helper()
	deleteTenants(t, name)
}

// deleteTenants deletes tenants at once and waits until they are gone. Their namespaces are
// emptied by the namespace controller after that, beside what the next test does: a test that
// needs a namespace gone waits for it (waitNamespaceGone), as createTenant does for a name used
// before.
func deleteTenants(t *testing.T, names ...string) {
	t.Helper()
	testenv.DeleteTenants(t, k8s, 2*timeout, names...)
}

// confirmedDelete deletes a tenant in whatever state it is, confirming the deletion as an
// administrator does for an Active or Frozen tenant.
func confirmedDelete(ctx context.Context, name string, opts ...client.DeleteOption) error {
	return testenv.ConfirmedDelete(ctx, k8s, name, opts...)
}

// waitNamespaceGone waits until the namespace controller has emptied and removed a namespace.
// It takes them a few at a time: while the parallel tests delete dozens of tenants at once, one
// namespace may wait well past the suite's timeout for its turn.
func waitNamespaceGone(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		ns, err := env.Clientset.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s: %v, phase %s", name, err, ns.Status.Phase)
	}).WithTimeout(4 * timeout).Should(Succeed())
}

// waitNamespaceNotTerminating waits until a namespace, if there is one, is not being deleted.
func waitNamespaceNotTerminating(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		ns, err := env.Clientset.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ns.DeletionTimestamp).To(BeNil(), "namespace %s is terminating", name)
	}).WithTimeout(4 * timeout).Should(Succeed()) // at the namespace controller's pace (waitNamespaceGone)
}

// condition returns the tenant's condition of a type, or nil.
func condition(tenant *tenancyv1alpha1.Tenant, typ string) *metav1.Condition {
	return meta.FindStatusCondition(tenant.Status.Conditions, typ)
}

// waitIdle waits until the operator has no tenant queued or being reconciled.
func waitIdle(t *testing.T) {
	t.Helper()
	NewWithT(t).Eventually(op.Idle).WithTimeout(timeout).Should(BeTrue())
}

// resync enqueues tenants as a global event would, and waits until each of them was
// reconciled after it was enqueued, and the operator is idle.
func resync(t *testing.T, names ...string) {
	t.Helper()
	before := make(map[string]int, len(names))
	for _, n := range names {
		before[n] = tenantReconciles.of(n)
	}
	for _, n := range names {
		op.Resync <- event.GenericEvent{Object: &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: n}}}
	}
	NewWithT(t).Eventually(func(g Gomega) {
		for _, n := range names {
			g.Expect(tenantReconciles.of(n)).To(BeNumerically(">", before[n]), "tenant %s was not reconciled", n)
		}
	}).WithTimeout(timeout).Should(Succeed())
	waitIdle(t)
}

func namespace(t *testing.T, name string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{}
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Name: opConfig.NamespaceName(name)}, ns)).To(Succeed())
	return ns
}

// zapLevel keeps test output to errors unless LANDLORD_TEST_VERBOSE is set.
func zapLevel() zapcore.Level {
	if os.Getenv("LANDLORD_TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// tenantRequests drops from counts the requests of the operator's other controllers, which
// tests running alongside (or the policies' first convergence) cause: the admission policy
// controller's, and the DatabaseServer controller's tenant counts.
func tenantRequests(counts testenv.Counts) testenv.Counts {
	for k := range counts {
		if strings.Contains(k, "admissionpolic") || k == "PATCH databaseservers/status" {
			delete(counts, k)
		}
	}
	return counts
}
