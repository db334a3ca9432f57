package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// processSpec is how to run one of the cluster's processes and how to tell it is healthy.
type processSpec struct {
	name string
	path string
	args []string
	// healthz, when set, is the HTTPS address whose /healthz answers 200 once it is healthy.
	healthz string
}

// controllerManagers are the kube-controller-manager controllers a Landlord cluster runs: what
// tenants' namespaces, quotas, workloads, autoscalers, service accounts and volumes need, and the
// node lifecycle controller, which lifts the not-ready taint a new node is created with once kwok
// reports it Ready. (With no metrics API, an autoscaler holds its workload within its minimum and
// maximum replicas, which is what it writes that Landlord must leave alone.)
var controllerManagers = []string{
	"node-lifecycle-controller",
	"namespace-controller", "garbage-collector-controller", "resourcequota-controller",
	"deployment-controller", "replicaset-controller", "statefulset-controller", "daemonset-controller",
	"job-controller", "cronjob-controller", "ttl-after-finished-controller", "disruption-controller",
	"horizontal-pod-autoscaler-controller",
	"endpointslice-controller", "pod-garbage-collector-controller",
	"serviceaccount-controller", "serviceaccount-token-controller", "root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
	"persistentvolume-binder-controller", "persistentvolume-protection-controller", "persistentvolumeclaim-protection-controller",
}

func controllerManager(assets, kubeconfig, saKey, caFile string, port int) processSpec {
	return processSpec{
		name: "kube-controller-manager",
		path: filepath.Join(assets, "kube-controller-manager"),
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--controllers=" + strings.Join(controllerManagers, ","),
			"--service-account-private-key-file=" + saKey,
			"--root-ca-file=" + caFile,
			// One process, one identity: the controllers use the controller-manager's own
			// credentials, as a cluster built without a ServiceAccount per controller does.
			"--use-service-account-credentials=false",
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			// A local cluster answers at once; the defaults suit thousands of nodes.
			"--kube-api-qps=200", "--kube-api-burst=400",
			// Autoscalers act within seconds rather than the default 15.
			"--horizontal-pod-autoscaler-sync-period=2s",
		},
		healthz: "127.0.0.1:" + strconv.Itoa(port),
	}
}

func scheduler(assets, kubeconfig string, port int) processSpec {
	return processSpec{
		name: "kube-scheduler",
		path: filepath.Join(assets, "kube-scheduler"),
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
		},
		healthz: "127.0.0.1:" + strconv.Itoa(port),
	}
}

func kwok(assets, kubeconfig, stages string) processSpec {
	return processSpec{
		name: "kwok",
		path: filepath.Join(assets, "kwok"),
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--config=" + stages,
			"--manage-nodes-with-label-selector=" + SimulatedNodeLabel + "=true",
			// Leases are the nodes' heartbeats, as a kubelet's are.
			"--node-lease-duration-seconds=40",
			"--cidr=10.244.0.0/16",
			// metrics-server reaches a node at its InternalIP; every node's is kwok's server.
			"--node-ip=" + nodeIP,
		},
	}
}

// servingNodes makes kwok serve each node's kubelet endpoints (its resource metrics among
// them) on 127.0.0.1:port, which it writes as each node's status port, with serving's
// certificate.
func (spec processSpec) servingNodes(port int, serving servingCert) processSpec {
	spec.args = append(slices.Clone(spec.args),
		"--node-port="+strconv.Itoa(port),
		"--server-address=127.0.0.1:"+strconv.Itoa(port),
		"--tls-cert-file="+serving.certFile,
		"--tls-private-key-file="+serving.keyFile,
	)
	return spec
}

// process is one running process of the cluster.
type process struct {
	name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
	err    error // why it exited; read after exited is closed
}

// startProcess starts spec, logging to <logDir>/<name>.log, and waits until it is healthy.
func startProcess(ctx context.Context, spec processSpec, logDir string) (*process, error) {
	logPath := filepath.Join(logDir, spec.name+".log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.path, spec.args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a stop reaches anything it started, and a terminal's Ctrl-C
	// reaches the operator, which stops the cluster in order, rather than every process at once.
	// Should this process die without stopping it (a test binary killed at its timeout), the
	// kernel ends it too rather than leaving it running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", spec.name, err)
	}
	p := &process{name: spec.name, cmd: cmd, log: log, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if spec.healthz == "" {
		return p, nil
	}
	if err := p.waitHealthy(ctx, spec.healthz); err != nil {
		return nil, errors.Join(fmt.Errorf("%s did not become healthy (log: %s): %w", spec.name, logPath, err), p.stop())
	}
	return p, nil
}

// waitHealthy polls the process's /healthz until it answers 200, the process exits, or ctx ends.
func (p *process) waitHealthy(ctx context.Context, addr string) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		// The process serves a certificate it signed itself; only its health is asked.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // a local health probe
	}
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("exited: %v", p.err)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/healthz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// stopGrace is how long a process may take to exit after SIGTERM before it is killed.
const stopGrace = 10 * time.Second

// stop ends the process group: SIGTERM, then SIGKILL after stopGrace.
func (p *process) stop() error {
	defer func() { _ = p.log.Close() }()
	select {
	case <-p.exited:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopGrace):
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (pid %d): %w", p.name, pgid, err)
	}
	<-p.exited
	return nil
}

// freePorts are n distinct TCP ports free now on the loopback interface (see freePort).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// freePort is a TCP port free now on the loopback interface. Another process may take it
// before the caller binds it; the caller's start then fails and says so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
