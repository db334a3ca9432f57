// Package faults_test injects faults into a running Landlord and checks that nothing is lost:
// the operator binary is SIGKILLed at random points and at each step of a component's move
// through its migrations, two replicas hand leadership over, a database server goes away
// mid-provisioning, the secret store and the API server fail, and the operator restarts on an
// empty store. Everything is real: a whole local cluster (test/testenv), PostgreSQL and MariaDB
// servers (internal/database/dbtest), the file secret store, and the landlord binary built from
// this tree, run as the shipped ServiceAccount; the cluster runs the containers of migration
// Jobs (test/migrator) against the tenants' databases.
//
// Every scenario ends with checkInvariants: each tenant converges to its spec, and each
// database and stored credential of a tenant that is not Purged still exists, logs in with the
// stored password, and is that tenant's own.
package faults_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

// One cluster, one pair of database servers, one operator binary and one secret store serve
// every scenario; each scenario runs its own operator processes and labels its own objects.
var (
	env *testenv.Env
	// servers are the database servers by the name of the DatabaseServer that registers them.
	servers = map[string]*dbtest.Instance{}
	// store is the operator's file store, opened by the test to read what the operator stored.
	store secret.Store
	// work holds the binary, its configuration, its kubeconfig and every process's log.
	work string
)

const (
	pgServer    = "faults-pg"
	mariaServer = "faults-mariadb"
	// operatorNamespace holds the leader election lease and the servers' admin credentials.
	operatorNamespace = "landlord-system"
	// leaseName is the operator's leader election lease (operator.New's LeaderElectionID).
	leaseName = "landlord.tenancy.landlord.dev"
	// serviceAccount is the identity config/rbac binds the shipped roles to.
	serviceAccount = testenv.OperatorUser
)

// opConfig is the configuration every operator process reads: defaults, but database outages
// noticed within seconds rather than a minute.
var opConfig = config.Default()

// The leader election timing of every operator process (--leader-election-lease-duration,
// -renew-deadline, -retry-period): the binary's defaults, as shipped, unless
// LANDLORD_FAULT_LEASE_DURATION, LANDLORD_FAULT_RENEW_DEADLINE or LANDLORD_FAULT_RETRY_PERIOD
// (Go durations: 8s, 1500ms) say otherwise. A shorter lease makes the follower's takeover, and
// so the leader scenario, quicker; on a loaded machine a renew deadline of a few seconds may
// make a leader give its lease up, which fails the scenario it runs in.
var (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// readLeaseTiming sets the leader election timing from the environment.
func readLeaseTiming() error {
	for key, d := range map[string]*time.Duration{
		"LANDLORD_FAULT_LEASE_DURATION": &leaseDuration,
		"LANDLORD_FAULT_RENEW_DEADLINE": &renewDeadline,
		"LANDLORD_FAULT_RETRY_PERIOD":   &retryPeriod,
	} {
		v := os.Getenv(key)
		if v == "" {
			continue
		}
		parsed, err := time.ParseDuration(v)
		if err != nil || parsed <= 0 {
			return fmt.Errorf("%s=%q: want a positive Go duration such as 8s", key, v)
		}
		*d = parsed
	}
	if !(retryPeriod < renewDeadline && renewDeadline < leaseDuration) {
		return fmt.Errorf("leader election wants retry period (%s) < renew deadline (%s) < lease duration (%s)", retryPeriod, renewDeadline, leaseDuration)
	}
	return nil
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if testenv.Short("the fault suite") {
		return 0
	}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	if err := readLeaseTiming(); err != nil {
		return fail(err)
	}
	var err error
	if work, err = os.MkdirTemp("", "landlord-faults-"); err != nil {
		return fail(err)
	}
	code := 1
	defer func() {
		// A failed run keeps every operator's log for whoever has to find out why.
		if code == 0 {
			os.RemoveAll(work)
		} else {
			fmt.Fprintln(os.Stderr, "faults: operator logs are kept in", work)
		}
	}()

	// The binary builds while the cluster starts: the two take about as long.
	built := make(chan error, 1)
	go func() { built <- buildOperator() }()
	// The cluster really runs migration Jobs (testenv.MigratorImage) as processes of the test:
	// the operator is the binary, its Jobs' containers are the cluster's.
	if env, err = testenv.StartWith(testenv.Options{RunJobs: true}); err != nil {
		<-built
		return fail(err)
	}
	defer func() { _ = env.Stop() }()
	pg, err := dbtest.StartPostgres()
	if err != nil {
		<-built
		return fail(err)
	}
	defer pg.Close()
	maria, err := dbtest.StartMariaDB()
	if err != nil {
		<-built
		return fail(err)
	}
	defer maria.Close()
	servers[pgServer], servers[mariaServer] = pg, maria
	if err := <-built; err != nil {
		return fail(err)
	}
	if err := setUp(context.Background()); err != nil {
		return fail(err)
	}
	code = m.Run()
	return code
}

// buildOperator builds the landlord binary from this tree, as the e2e suite does.
func buildOperator() error {
	build := exec.Command("go", "build", "-o", filepath.Join(work, "landlord"), "./cmd/landlord")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building landlord: %w\n%s", err, out)
	}
	return nil
}

// setUp installs what config/default would besides the ClusterRole testenv binds (the leader
// election Role), registers the database servers, and writes the operator's configuration and
// kubeconfig.
func setUp(ctx context.Context) error {
	if err := env.AdminClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return err
	}
	if err := installLeaderElectionRBAC(ctx); err != nil {
		return err
	}
	for name, inst := range servers {
		if err := env.RegisterDatabaseServer(ctx, opConfig.Databases.CredentialsNamespace, name, inst); err != nil {
			return err
		}
	}

	storeDir := filepath.Join(work, "secrets")
	opConfig.Secrets.Store.File.Dir = storeDir
	opConfig.Secrets.Store.File.KeyFile = filepath.Join(storeDir, "key.json")
	opConfig.Secrets.Store.Timeout.Duration = 5 * time.Second
	opConfig.Databases.CheckInterval.Duration = 2 * time.Second
	opConfig.Databases.Timeout.Duration = 5 * time.Second
	if _, err := writeConfig("landlord.yaml", opConfig); err != nil {
		return err
	}
	// The test opens the same store (and key) as the operator, to read what it stored.
	var err error
	if store, err = secret.NewFileStore(storeDir, opConfig.Secrets.Store.File.KeyFile); err != nil {
		return err
	}
	return writeOperatorKubeconfig(env.Admin, filepath.Join(work, "operator.kubeconfig"))
}

// writeConfig writes an operator configuration into the work directory and returns its path.
func writeConfig(file string, cfg config.Config) (string, error) {
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(work, file)
	return path, os.WriteFile(path, data, 0o600)
}

// installLeaderElectionRBAC creates the shipped config/rbac/leader_election.yaml: the operator
// elects its leader with exactly the permissions a cluster gives it.
func installLeaderElectionRBAC(ctx context.Context) error {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", "leader_election.yaml"))
	if err != nil {
		return err
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := env.AdminClient.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// writeOperatorKubeconfig writes the administrator's credentials impersonating the
// ServiceAccount: the operator holds exactly the RBAC config/rbac grants it.
func writeOperatorKubeconfig(admin *rest.Config, path string) error {
	cluster := &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData, CertificateAuthority: admin.CAFile}
	user := &clientcmdapi.AuthInfo{
		ClientCertificateData: admin.CertData, ClientCertificate: admin.CertFile,
		ClientKeyData: admin.KeyData, ClientKey: admin.KeyFile,
		Token:       admin.BearerToken,
		Impersonate: serviceAccount,
		ImpersonateGroups: []string{
			"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated",
		},
	}
	if admin.Host == "" {
		return errors.New("the administrator's configuration names no API server")
	}
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"local": cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"landlord": user},
		Contexts:       map[string]*clientcmdapi.Context{"landlord": {Cluster: "local", AuthInfo: "landlord"}},
		CurrentContext: "landlord",
	}
	return clientcmd.WriteToFile(kc, path)
}
