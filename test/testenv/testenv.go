// Package testenv starts a whole local cluster (internal/localcluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok's simulated nodes, built from source into
// bin/k8s) for Landlord's tests and benchmark, and runs the operator in it the way it runs in a
// cluster: under its own generated RBAC, through the production manager wiring.
package testenv

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/shipped"
)

// KubeVersion is the Kubernetes version hack/build-control-plane.sh builds by default.
const KubeVersion = "1.37.2"

// OperatorUser is the identity the operator runs as in tests: its ServiceAccount in a cluster.
const OperatorUser = config.DefaultIdentity

// Env is a running control plane.
type Env struct {
	cluster *localcluster.Cluster
	dataDir string
	// releasePrograms releases the programs of the Jobs the cluster runs (RunJobs).
	releasePrograms func() error
	// Admin is a cluster administrator's configuration and client.
	Admin       *rest.Config
	AdminClient client.Client
	Clientset   *kubernetes.Clientset
}

// RepoRoot is the directory holding go.mod.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Options say what the environment runs.
type Options struct {
	// APIServerOnly runs etcd and kube-apiserver alone, without the controller-manager,
	// scheduler and simulated nodes.
	APIServerOnly bool
	// MetricsServer serves the metrics API (localcluster.Options.MetricsServer).
	MetricsServer bool
	// RunJobs really runs the Jobs of BackupImage and MigratorImage, as processes of this
	// machine (localcluster.Options.Images); kwok plays every other pod. Their programs are
	// built at the first start that asks for them.
	RunJobs bool
}

// Start starts a whole local cluster (internal/localcluster) and installs Landlord's CRDs, the
// tenant roles and its operator RBAC.
func Start() (*Env, error) { return StartWith(Options{}) }

// StartWith is Start with options.
func StartWith(opts Options) (*Env, error) {
	root := RepoRoot()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s", KubeVersion)
	}
	dataDir, err := os.MkdirTemp("", "landlord-cluster-")
	if err != nil {
		return nil, err
	}
	local := localcluster.Options{
		AssetsDir: assets, DataDir: dataDir, APIServerOnly: opts.APIServerOnly, MetricsServer: opts.MetricsServer,
		CRDDir:    filepath.Join(root, "config", "crd", "bases"),
		Manifests: []string{filepath.Join(root, "config", "rbac", "tenant_roles.yaml")},
	}
	release := func() error { return nil }
	if opts.RunJobs {
		if local.Images, release, err = JobImages(); err != nil {
			return nil, errors.Join(err, os.RemoveAll(dataDir))
		}
	}
	cluster, err := localcluster.Start(local)
	if err != nil {
		_ = release()
		// The cluster's logs stay in dataDir, which the error names, for whoever has to find out why.
		return nil, fmt.Errorf("%w (the cluster's data and logs are kept in %s; 'make control-plane' builds its binaries)", err, dataDir)
	}
	e := &Env{cluster: cluster, dataDir: dataDir, Admin: cluster.Config, releasePrograms: release}
	if e.AdminClient, err = client.New(e.Admin, client.Options{Scheme: tenancyv1alpha1.Scheme()}); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	if e.Clientset, err = kubernetes.NewForConfig(e.Admin); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	if err := e.installOperatorRBAC(context.Background()); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

// Stop stops the cluster and removes its data and logs.
func (e *Env) Stop() error {
	return errors.Join(e.cluster.Stop(), os.RemoveAll(e.dataDir), e.releasePrograms())
}

// installOperatorRBAC binds the generated config/rbac/role.yaml to OperatorUser, so that a
// missing permission fails the tests as it would fail in a cluster.
func (e *Env) installOperatorRBAC(ctx context.Context) error {
	role, err := shipped.OperatorRole()
	if err != nil {
		return err
	}
	if err := e.AdminClient.Create(ctx, role); err != nil {
		return err
	}
	return e.AdminClient.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "landlord-manager"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: OperatorUser}},
	})
}

// InstallLeaderElectionRBAC creates LeaseNamespace and the shipped leader election Role and
// RoleBinding in it, once.
func (e *Env) InstallLeaderElectionRBAC(ctx context.Context) error {
	role, binding, err := shipped.LeaderElectionRBAC()
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: LeaseNamespace}}
	for _, obj := range []client.Object{ns, role, binding} {
		if err := e.AdminClient.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// As returns a configuration that impersonates a user in the given groups.
func (e *Env) As(user string, groups ...string) *rest.Config {
	cfg := rest.CopyConfig(e.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return cfg
}

// Operator is a running operator and what observes it.
type Operator struct {
	*operator.Operator
	// Requests counts every request the operator sends to the API server.
	Requests *RequestCounter
	// Resync enqueues tenants without touching them.
	Resync chan event.GenericEvent
	cancel context.CancelFunc
	// staleDepth is the tenant queue depth earlier operators of this process left behind (see
	// Idle), read before this one's queue exists.
	staleDepth float64
	// controller is the name of its tenant controller, whose queue Idle reads.
	controller string
	// exited is closed when the manager has returned, with err what it returned.
	exited chan struct{}
	err    error
}

// StartOperator runs the operator as OperatorUser with the given configuration and secret store.
// wraps, when given, sit between the operator's clients and the API server, under the request
// counter (the fault suite injects failures there).
func (e *Env) StartOperator(cfg config.Config, store secret.Store, wraps ...transport.WrapperFunc) (*Operator, error) {
	return e.start(operator.Options{Config: cfg, Store: store}, wraps...)
}

// StartOperatorWith runs the operator as OperatorUser with the given options (a fake clock for
// backup schedules, say), as StartOperator does.
func (e *Env) StartOperatorWith(opts operator.Options, wraps ...transport.WrapperFunc) (*Operator, error) {
	return e.start(opts, wraps...)
}

// LeaseNamespace is where shards started by StartShard keep their leader election leases: the
// operator's namespace, with the shipped leader election Role.
const LeaseNamespace = "landlord-system"

// StartShard runs an operator shard (operator.Options.Shard) as OperatorUser, with leader
// election in LeaseNamespace as in a cluster.
func (e *Env) StartShard(cfg config.Config, store secret.Store, shard string) (*Operator, error) {
	if err := e.InstallLeaderElectionRBAC(context.Background()); err != nil {
		return nil, err
	}
	return e.start(operator.Options{Config: cfg, Store: store, Shard: shard, LeaderElection: true, LeaderElectionNamespace: LeaseNamespace})
}

func (e *Env) start(opts operator.Options, wraps ...transport.WrapperFunc) (*Operator, error) {
	op := &Operator{Requests: NewRequestCounter(), Resync: make(chan event.GenericEvent, 1024), exited: make(chan struct{})}
	restCfg := e.As(OperatorUser)
	for _, w := range wraps {
		restCfg.Wrap(w)
	}
	restCfg.Wrap(op.Requests.Wrap)
	opts.MetricsAddr, opts.ProbeAddr, opts.Resync, opts.AnotherInProcess = "0", "0", op.Resync, true
	mgr, err := operator.New(restCfg, opts)
	if err != nil {
		return nil, err
	}
	op.Operator = mgr
	// A shard run beside another operator in the process names its controller after itself.
	op.controller = cmp.Or(mgr.Tenants.ControllerName, "tenant")
	op.staleDepth = metricSum("workqueue_depth", map[string]string{"name": op.controller})
	ctx, cancel := context.WithCancel(context.Background())
	op.cancel = cancel
	go func() {
		op.err = mgr.Start(ctx)
		close(op.exited)
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, errors.Join(errors.New("operator cache did not sync"), op.Stop())
	}
	if err := e.waitTenantsAdmitted(ctx, op.exited); err != nil {
		return nil, errors.Join(err, op.Stop())
	}
	return op, nil
}

// waitTenantsAdmitted waits until the operator's finalizer policy is in force for Tenants: a
// dry-run Tenant comes back with the finalizer landlord-tenant-finalizer adds. A dry run admitted
// without it proves nothing: the operator applies its policies a moment after its cache syncs,
// and a create that a MutatingAdmissionPolicy matches is answered 503 ServiceUnavailable
// ("Resource kind ... not found"), whatever the policy's failurePolicy, until the API server's
// own poll of its OpenAPI document (every 5 seconds, from its start) has seen the kind. A test
// creating a Tenant in that window would fail. An operator that stops (exited is closed) ends the
// wait at once, rather than after its timeout.
func (e *Env) waitTenantsAdmitted(ctx context.Context, exited <-chan struct{}) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			return false, errors.New("the operator stopped")
		default:
		}
		probe := &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "admission-probe"},
			Spec:       tenancyv1alpha1.TenantSpec{Organization: "Probe", Email: "ops@probe.example.com"},
		}
		if last = e.AdminClient.Create(ctx, probe, client.DryRunAll); last != nil {
			return false, nil
		}
		if !slices.Contains(probe.Finalizers, tenancyv1alpha1.Finalizer) {
			last = errors.New("admitted without the finalizer policy's finalizer: the policy is not in force yet")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the API server does not admit Tenants through the operator's finalizer policy: %w (last answer: %v)", err, last)
	}
	return nil
}

// Stop stops the operator and waits for it to return; it returns what the operator returned,
// however often it is called.
func (o *Operator) Stop() error {
	o.cancel()
	<-o.exited
	return o.err
}

// WriteKubeconfig writes an administrator's kubeconfig for the cluster into dir, with one
// context named context, as a user's tools (kubectl, landlordctl, helm) read it.
func (e *Env) WriteKubeconfig(dir, context string) (string, error) {
	c := e.Admin
	kc := clientcmdapi.NewConfig()
	kc.Clusters[context] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken}
	kc.Contexts[context] = &clientcmdapi.Context{Cluster: context, AuthInfo: "admin"}
	kc.CurrentContext = context
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*kc, path)
}

// Short reports whether the tests run under go test -short (make test-unit): a TestMain whose
// every test needs the local cluster then starts nothing and runs nothing, and says so.
func Short(suite string) bool {
	flag.Parse()
	if !testing.Short() {
		return false
	}
	fmt.Printf("%s: every test needs the local cluster; none runs under -short\n", suite)
	return true
}

// NeedCluster skips a test that starts a local cluster (or the operator's binary, which starts
// one) under go test -short.
func NeedCluster(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the local cluster: not under -short")
	}
}
