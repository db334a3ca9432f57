// Package localcluster runs a whole Kubernetes cluster on one machine, from the binaries
// hack/build-control-plane.sh builds: etcd and kube-apiserver (through envtest's control plane),
// kube-controller-manager (namespaces, garbage collection, quotas, workloads, service accounts,
// volumes), kube-scheduler, and kwok, which simulates nodes and the lifecycle of the pods
// scheduled on them. Landlord runs on it when no cluster is configured, and the tests run on it.
//
// Every process is started and stopped by PID and writes its log next to the data
// (<DataDir>/logs/<name>.log); start-up waits until each is healthy, never for a fixed time.
//
// kwok's nodes run no containers. The Jobs of the images the cluster knows (Options.Images)
// really run, though: a Job's pod whose one container runs a known image runs that image's
// Program as a process of this machine, with the pod's env, envFrom and secret, configMap and
// emptyDir volumes, and ends as the process exits (jobs.go). This is a local cluster feature
// only, for make run's backups and the tests; the shipped operator has none of it. A real
// cluster adds what the runner does not enforce: containers and images, isolation from the
// machine, resource limits, network policies and security contexts.
//
// Since a pod spec is not to choose what of this machine runs, the runner refuses (fails, with
// a StartError saying why) a pod whose controller is not a Job that exists with the UID its
// reference names; a container that sets, by env or envFrom, a variable that decides which
// executable or library runs (PATH, LD_*, DYLD_*, GCONV_PATH and the others IsProgramEnv
// lists: those are its Program's alone); a container that names a command its Program does not
// list; and one whose process's arguments do not begin with its Program's Args (the landlord
// binary, which is also the operator, runs only as `landlord job`). A secret's or config map's
// files are written without execute bits, whatever their mode. What is left is the program's
// own reading of its inputs: a configuration file a pod's HOME or volumes hold is read as the
// program would read it in a container.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options say where the binaries, the CRDs and the state live, and what runs.
type Options struct {
	// AssetsDir holds the binaries.
	AssetsDir string
	// DataDir keeps etcd's data, the logs and the written kubeconfig. etcd's data is kept
	// between runs, so what was created survives a restart.
	DataDir string
	// CRDDir, when set, holds CRDs to install.
	CRDDir string
	// Manifests are YAML files of objects to apply once the API server is up (the tenant
	// roles of config/rbac/tenant_roles.yaml).
	Manifests []string
	// APIServerOnly runs etcd and kube-apiserver alone: for callers that measure one client's
	// cost to the API server and want nothing else on the machine's cores.
	APIServerOnly bool
	// Nodes are the simulated nodes; nil means DefaultNodes.
	Nodes []Node
	// ConfigureAPIServer, when set, may change kube-apiserver's flags before it starts.
	ConfigureAPIServer func(*envtest.APIServer)
	// ConfigureEtcd, when set, may change etcd's flags before it starts.
	ConfigureEtcd func(*envtest.Etcd)
	// Images are the images whose Jobs really run: a Job's pod whose one container runs one
	// of these images (keyed by the exact image reference) runs that image's Program as a
	// process of this machine once kwok makes the pod Running, and ends as the process does
	// (see jobs.go). kwok plays every other pod. Not with APIServerOnly.
	Images map[string]Program
	// MetricsServer serves the metrics API (metrics.k8s.io) with metrics-server behind
	// kube-apiserver's aggregation layer, from the usage kwok plays for each pod (the pod's
	// annotations UsageCPUAnnotation and UsageMemoryAnnotation). Not with APIServerOnly.
	MetricsServer bool
}

// Cluster is a running local cluster.
type Cluster struct {
	env       *envtest.Environment
	processes []*process
	// logs are the log files of etcd and kube-apiserver, which envtest writes to.
	logs []*os.File
	// Config is an administrator's client configuration.
	Config *rest.Config
	// KubeconfigPath is the administrator kubeconfig written for people and kubectl.
	KubeconfigPath string
	// LogDir holds each process's log.
	LogDir string
	// aggregation is the aggregation layer's certificates, with a metrics server.
	aggregation aggregation
	// jobs runs the Jobs of Options.Images.
	jobs *jobRunner
}

// startTimeout bounds how long each process may take to become healthy.
const startTimeout = 2 * time.Minute

// Start brings up the cluster, installs the CRDs and writes an administrator kubeconfig.
func Start(opts Options) (*Cluster, error) {
	bins := []string{"etcd", "kube-apiserver"}
	if !opts.APIServerOnly {
		bins = append(bins, "kube-controller-manager", "kube-scheduler", "kwok")
		if opts.MetricsServer {
			bins = append(bins, MetricsServerBinary)
		}
	}
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(opts.AssetsDir, bin)); err != nil {
			return nil, fmt.Errorf("cluster binary %s not found in %s (run 'make control-plane'): %w", bin, opts.AssetsDir, err)
		}
	}
	c := &Cluster{
		KubeconfigPath: filepath.Join(opts.DataDir, "kubeconfig"),
		LogDir:         filepath.Join(opts.DataDir, "logs"),
	}
	etcdDir := filepath.Join(opts.DataDir, "etcd")
	for _, dir := range []string{etcdDir, c.LogDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	if err := c.startControlPlane(opts, etcdDir); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := installManifests(ctx, c.Config, opts.Manifests); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if opts.APIServerOnly {
		return c, nil
	}
	if err := c.startNodeComponents(opts); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// startControlPlane starts etcd and kube-apiserver through envtest, and writes the kubeconfig.
func (c *Cluster) startControlPlane(opts Options, etcdDir string) error {
	env := &envtest.Environment{BinaryAssetsDirectory: opts.AssetsDir}
	if opts.CRDDir != "" {
		env.CRDDirectoryPaths = []string{opts.CRDDir}
		env.ErrorIfCRDPathMissing = true
	}
	etcdLog, err := c.logFile("etcd")
	if err != nil {
		return err
	}
	apiLog, err := c.logFile("kube-apiserver")
	if err != nil {
		return err
	}
	c.logs = append(c.logs, etcdLog, apiLog)
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdDir, Out: etcdLog, Err: etcdLog}
	// etcd's default 2 GB backend quota is within reach of a 10,000-tenant benchmark.
	env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", "8589934592")
	api := env.ControlPlane.GetAPIServer()
	api.Out, api.Err = apiLog, apiLog
	// envtest's default service range is a /24: about 250 Services, fewer than a benchmark's
	// tenants have. A /16 holds 65,000.
	api.Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	if opts.MetricsServer && !opts.APIServerOnly {
		if c.aggregation, err = writeAggregation(opts.DataDir); err != nil {
			return fmt.Errorf("writing the aggregation layer's certificates: %w", err)
		}
		c.aggregation.configure(api)
	}
	if opts.ConfigureEtcd != nil {
		opts.ConfigureEtcd(env.ControlPlane.Etcd)
	}
	if opts.ConfigureAPIServer != nil {
		opts.ConfigureAPIServer(api)
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting kube-apiserver and etcd (logs in %s): %w", c.LogDir, err)
	}
	c.env, c.Config = env, cfg
	user, err := env.AddUser(envtest.User{Name: "landlord-admin", Groups: []string{"system:masters"}}, nil)
	if err == nil {
		var kubeconfig []byte
		if kubeconfig, err = user.KubeConfig(); err == nil {
			err = os.WriteFile(c.KubeconfigPath, kubeconfig, 0o600)
		}
	}
	if err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	// kube-controller-manager authenticates as a real cluster's does, so that admission
	// policies exempting Kubernetes' controllers see the identity they would see there. It runs
	// every controller under that one identity, and so holds what they all need.
	cm, err := env.AddUser(envtest.User{Name: ControllerManagerUser, Groups: []string{"system:masters"}}, nil)
	if err == nil {
		var kubeconfig []byte
		if kubeconfig, err = cm.KubeConfig(); err == nil {
			err = os.WriteFile(c.controllerManagerKubeconfig(), kubeconfig, 0o600)
		}
	}
	if err != nil {
		return fmt.Errorf("writing the controller-manager's kubeconfig: %w", err)
	}
	return nil
}

// ControllerManagerUser is the user kube-controller-manager authenticates as.
const ControllerManagerUser = "system:kube-controller-manager"

// controllerManagerKubeconfig is where kube-controller-manager's kubeconfig is written.
func (c *Cluster) controllerManagerKubeconfig() string {
	return filepath.Join(filepath.Dir(c.KubeconfigPath), "controller-manager.kubeconfig")
}

// startNodeComponents starts kube-controller-manager, kube-scheduler and kwok, and creates the
// simulated nodes; it returns once the controller-manager and scheduler are healthy and every
// node is Ready.
func (c *Cluster) startNodeComponents(opts Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	certDir := c.env.ControlPlane.APIServer.CertDir
	caFile := filepath.Join(opts.DataDir, "ca.crt")
	if err := os.WriteFile(caFile, c.env.ControlPlane.APIServer.SecureServing.CA, 0o600); err != nil {
		return err
	}
	kwokConfig, err := stagesFor(kwokStages, opts.Images)
	if err != nil {
		return err
	}
	var metricsPort int
	var serving servingCert
	if opts.MetricsServer {
		kwokConfig = slices.Concat(kwokConfig, []byte("\n---\n"), kwokMetrics)
		serving = servingCert{caFile: caFile, certFile: filepath.Join(certDir, "apiserver.crt"), keyFile: filepath.Join(certDir, "apiserver.key")}
	}
	stages := filepath.Join(opts.DataDir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokConfig, 0o600); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	if len(opts.Images) > 0 {
		// Before kwok: a pod the runner finds Running in its first look ran under an earlier start.
		if c.jobs, err = startJobRunner(ctx, cs, opts.Images, opts.DataDir, c.LogDir); err != nil {
			return err
		}
	}
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	cmPort, schedulerPort, nodePort := ports[0], ports[1], ports[2]
	kwokSpec := kwok(opts.AssetsDir, c.KubeconfigPath, stages)
	if opts.MetricsServer {
		metricsPort = ports[3]
		kwokSpec = kwokSpec.servingNodes(nodePort, serving)
	}
	for _, spec := range []processSpec{
		controllerManager(opts.AssetsDir, c.controllerManagerKubeconfig(), filepath.Join(certDir, "sa-signer.key"), caFile, cmPort),
		scheduler(opts.AssetsDir, c.KubeconfigPath, schedulerPort),
		kwokSpec,
	} {
		p, err := startProcess(ctx, spec, c.LogDir)
		if err != nil {
			return err
		}
		c.processes = append(c.processes, p)
	}
	kwokProcess := c.processes[len(c.processes)-1]
	nodes := opts.Nodes
	if nodes == nil {
		nodes = DefaultNodes()
	}
	servedPort := 0
	if opts.MetricsServer {
		servedPort = nodePort
	}
	if err := createNodes(ctx, cs, nodes, servedPort); err != nil {
		return err
	}
	if err := waitNodesReady(ctx, cs, nodes, kwokProcess); err != nil {
		return err
	}
	if !opts.MetricsServer {
		// A metrics API registered by an earlier start with metrics-server would be served by
		// nothing now: discovery would fail, and with it namespace deletion.
		return unregisterMetricsAPI(ctx, c.Config)
	}
	p, err := startProcess(ctx, metricsServer(opts.AssetsDir, c.KubeconfigPath, c.aggregation, serving, metricsPort), c.LogDir)
	if err != nil {
		return err
	}
	c.processes = append(c.processes, p)
	return registerMetricsAPI(ctx, c.Config, c.aggregation.ca, metricsPort)
}

func (c *Cluster) logFile(name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(c.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

// Stop stops every process, the simulated ones first; etcd's data stays.
func (c *Cluster) Stop() error {
	var errs []error
	if c.jobs != nil {
		errs = append(errs, c.jobs.stop())
		c.jobs = nil
	}
	for i := len(c.processes) - 1; i >= 0; i-- {
		errs = append(errs, c.processes[i].stop())
	}
	c.processes = nil
	if c.env != nil {
		errs = append(errs, c.env.Stop())
	}
	for _, f := range c.logs {
		_ = f.Close()
	}
	c.logs = nil
	return errors.Join(errs...)
}
