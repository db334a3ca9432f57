// Command landlord runs the Landlord operator. With no cluster configured it starts a whole local
// cluster (internal/localcluster), so one command gives a working operator, with workloads that
// really roll out, on a bare machine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/internal/secret"
)

func main() {
	// A backup or restore Job runs the operator's image with its own subcommand and flags.
	if len(os.Args) > 1 && os.Args[1] == "job" {
		os.Exit(runJob(os.Args[2:], os.Stdout, os.Stderr))
	}
	var (
		configPath  string
		embedded    string
		embeddedDir string
		assetsDir   string
		crdDir      string
		manifests   string
		waitFor     bool
		overrides   config.Overrides
		opts        operator.Options
	)
	flag.StringVar(&configPath, "config", "", "Operator configuration file (YAML); built-in defaults when empty.")
	flag.StringVar(&embedded, "embedded", "auto", "Embedded local cluster: auto (only when no cluster is configured), always, or never.")
	flag.StringVar(&embeddedDir, "embedded-dir", "bin/embedded", "Where the embedded local cluster keeps its data and logs and writes its kubeconfig.")
	flag.StringVar(&assetsDir, "control-plane-assets", envOr("KUBEBUILDER_ASSETS", "bin/k8s/1.37.2"), "Directory with the local cluster's binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok).")
	flag.StringVar(&crdDir, "crd-dir", "config/crd/bases", "CRDs installed into the embedded local cluster.")
	flag.StringVar(&manifests, "embedded-manifests", "config/rbac/tenant_roles.yaml", "Comma-separated YAML files applied to the embedded local cluster before the operator starts.")
	flag.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8443", "Metrics listen address; 0 disables.")
	flag.BoolVar(&opts.MetricsInsecure, "metrics-insecure", false, "Serve metrics over HTTP without authentication (local use only).")
	flag.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "", "Directory holding the metrics server's tls.crt and tls.key; empty: a self-signed certificate made at start-up.")
	flag.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", "Health probe listen address; 0 disables.")
	flag.StringVar(&opts.PprofAddr, "pprof-bind-address", "", "pprof listen address; empty disables.")
	flag.BoolVar(&opts.LeaderElection, "leader-elect", false, "Elect a leader, so that only one replica reconciles.")
	flag.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election lease (the pod's own when empty).")
	flag.DurationVar(&opts.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "With --leader-elect, how long a lease not renewed holds: a standby takes over a leader that died (SIGKILL, a lost node) after it.")
	flag.DurationVar(&opts.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "With --leader-elect, how long the leader tries to renew its lease before it gives it up and stops; shorter than the lease duration.")
	flag.DurationVar(&opts.RetryPeriod, "leader-election-retry-period", 2*time.Second, "With --leader-elect, how often the leader renews its lease and a standby tries to take it.")
	flag.BoolVar(&waitFor, "wait-for-leader", true, "With --leader-elect, wait as a standby while another process holds the lease (replicas of a Deployment); false refuses to start instead, naming the holder (make run CLUSTER=current).")
	flag.StringVar(&opts.Shard, "shard", "", "Operator shard: reconcile only the Tenants labelled tenancy.landlord.dev/shard=NAME (needs --leader-elect). Empty: the default shard, which takes the tenants without the label and runs the cluster-wide duties.")
	flag.Float64Var(&overrides.QPS, "kube-api-qps", 0, "API requests per second per resource kind (client.qps in the configuration; 300 by default).")
	flag.IntVar(&overrides.Burst, "kube-api-burst", 0, "API request burst per resource kind (client.burst; 1000 by default).")
	flag.IntVar(&overrides.Concurrent, "concurrent", 0, "Tenants reconciled at once (controller.maxConcurrentReconciles; 32 by default).")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	// An event still in flight when the operator stops is no error worth a stack trace.
	ctrl.SetLogger(shutdown.QuietLogger(zap.New(zap.UseFlagOptions(&zapOpts))))
	if err := setMemoryLimit(ctrl.Log.WithName("setup")); err != nil {
		ctrl.Log.WithName("setup").Error(err, "landlord stopped")
		os.Exit(1)
	}

	ctx := ctrl.SetupSignalHandler()
	opts.RefuseBehindLeader = !waitFor
	// The embedded cluster serves the metrics API (kubectl top, the usage its tenants' pods are
	// billed for) where the assets hold metrics-server, as make control-plane builds them.
	_, statErr := os.Stat(filepath.Join(assetsDir, localcluster.MetricsServerBinary))
	hasMetricsServer := statErr == nil
	local := localcluster.Options{AssetsDir: assetsDir, DataDir: embeddedDir, CRDDir: crdDir, Manifests: splitList(manifests), MetricsServer: hasMetricsServer}
	if err := run(ctx, configPath, overrides, embedded, local, opts); err != nil {
		ctrl.Log.WithName("setup").Error(err, "landlord stopped")
		os.Exit(1)
	}
}

// run starts the operator and blocks until ctx ends.
func run(ctx context.Context, configPath string, overrides config.Overrides, embedded string, local localcluster.Options, opts operator.Options) error {
	log := ctrl.Log.WithName("setup")
	if err := checkShard(opts); err != nil {
		return err
	}
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	opts.Config = overrides.Apply(cfg)
	// In a pod, a file store must be on a volume that outlives it: one that starts empty after
	// a restart has lost every stored credential and shared secret.
	if st := opts.Config.Secrets.Store; st.Backend == config.StoreBackendFile && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		if err := secret.CheckDurable(st.File.Dir); err != nil {
			return err
		}
	}

	restCfg, err := clusterConfig(embedded)
	if err != nil {
		return err
	}
	if restCfg != nil {
		if err := checkLeaderElection(opts); err != nil {
			return err
		}
		if opts.RefuseBehindLeader {
			if err := operator.CheckNoLiveLeader(ctx, restCfg, opts.LeaderElectionNamespace, opts.Shard, time.Now()); err != nil {
				return err
			}
		}
	}
	if restCfg == nil {
		// A local cluster keeps its secrets next to its etcd data, unless told otherwise.
		if st := &opts.Config.Secrets.Store; st.Backend == config.StoreBackendFile && st.File.Dir == config.Default().Secrets.Store.File.Dir {
			st.File.Dir = filepath.Join(local.DataDir, "secrets")
			st.File.KeyFile = filepath.Join(st.File.Dir, "key.json")
		}
		if local.Images, err = backupImages(opts.Config.Backups); err != nil {
			return err
		}
		cluster, err := localcluster.Start(local)
		if err != nil {
			return err
		}
		defer func() { _ = cluster.Stop() }()
		// The operator runs as its configured identity, as in a cluster: the admission policies
		// exempt that user alone, and the administrator's kubeconfig written for people is
		// confined like any administrator.
		restCfg = rest.CopyConfig(cluster.Config)
		restCfg.Impersonate = rest.ImpersonationConfig{UserName: opts.Config.Controller.Identity, Groups: []string{"system:masters"}}
		abs, _ := filepath.Abs(cluster.KubeconfigPath)
		assets, _ := filepath.Abs(local.AssetsDir)
		metrics := ""
		if local.MetricsServer {
			metrics = ", and metrics-server serving kubectl top"
		}
		fmt.Fprintf(os.Stderr, `
Landlord is running on a local cluster (--embedded=%s): etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok playing the nodes %s%s. Logs: %s.
Use it from another shell:

  export KUBECONFIG=%s PATH=%s:$PATH
  kubectl apply -k config/samples
  kubectl apply -k config/samples/components
  kubectl wait --for=condition=Ready tenants --all --timeout=2m
  kubectl get pods -A -o wide

`, embedded, nodeNames(local.Nodes), metrics, cluster.LogDir, abs, assets)
	}

	mgr, err := operator.New(restCfg, opts)
	if err != nil {
		return err
	}
	log.Info("starting manager")
	return mgr.Start(ctx)
}

// backupImages makes the embedded cluster run the backup and restore Jobs for real: the
// configured backups.image is this binary, whose `landlord job` the Jobs run, with this
// machine's PostgreSQL and MariaDB client tools on its PATH. A real cluster runs the image
// itself, in a container; the embedded one runs a process of this machine
// (localcluster.Options.Images). This binary is the operator too: its Jobs' args must begin
// with job, or a pod's args would start an operator of the pod's choosing.
func backupImages(b config.Backups) (map[string]localcluster.Program, error) {
	if b.Image == "" {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this binary, which the embedded cluster runs as %s: %w", b.Image, err)
	}
	return map[string]localcluster.Program{b.Image: {
		Entrypoint: self,
		Args:       []string{"job"},
		Env:        map[string]string{"PATH": localcluster.HostPath(backup.ToolNames...)},
	}}, nil
}

// checkLeaderElection refuses to run the default shard on a real cluster without leader
// election: its lease is what keeps a second process (another replica, or one run from a
// workstation) from running the cluster-wide duties beside it, the policies among them. The
// embedded cluster is the process's own, and needs none.
func checkLeaderElection(opts operator.Options) error {
	if opts.Shard == "" && !opts.LeaderElection {
		return errors.New("on a cluster other than the embedded one, the operator needs --leader-elect (and --leader-election-namespace outside a pod): " +
			"its lease keeps a second process from running the cluster-wide duties beside it")
	}
	return nil
}

// checkShard refuses a shard name that cannot be a label value, and a shard without leader
// election: its lease is how the other shards know it runs, and that they must wait for it to
// hand a relabelled tenant over rather than take it.
func checkShard(opts operator.Options) error {
	if opts.Shard == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(opts.Shard); len(errs) > 0 {
		return fmt.Errorf("--shard %q: %s", opts.Shard, strings.Join(errs, "; "))
	}
	if !opts.LeaderElection {
		return fmt.Errorf("--shard %s needs --leader-elect: the shard's lease tells the other shards it runs", opts.Shard)
	}
	return nil
}

func nodeNames(nodes []localcluster.Node) string {
	if nodes == nil {
		nodes = localcluster.DefaultNodes()
	}
	var names []string
	for _, n := range nodes {
		if n.Pool != "" {
			names = append(names, n.Name+" (node pool "+n.Pool+")")
		} else {
			names = append(names, n.Name)
		}
	}
	return strings.Join(names, " and ")
}

// clusterConfig returns the configured cluster's client configuration, or nil when the
// local cluster should be used instead.
func clusterConfig(embedded string) (*rest.Config, error) {
	switch embedded {
	case "always":
		return nil, nil
	case "never":
		return ctrl.GetConfig()
	case "auto":
		if !clusterConfigured() {
			return nil, nil
		}
		return ctrl.GetConfig()
	}
	return nil, fmt.Errorf("--embedded: %q is not auto, always or never", embedded)
}

// clusterConfigured reports whether a kubeconfig or an in-cluster service account is present.
func clusterConfigured() bool {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return true
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f := flag.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		return true
	}
	for _, p := range rules.Precedence {
		if _, err := os.Stat(p); err == nil {
			return true
		} else if !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
