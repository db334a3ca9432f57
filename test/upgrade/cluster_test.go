package upgrade_test

import (
	"bufio"
	"context"
	"encoding/json"
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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/test/testenv"
)

const (
	// serviceAccount is the identity both releases' installers bind the operator's RBAC to.
	serviceAccount = "system:serviceaccount:landlord-system:landlord-controller-manager"
	// helmVersion is the Helm the Makefile builds into bin/ (HELM_VERSION).
	helmVersion = "v3.22.0"
	// timeout bounds each wait: a step of a fleet's life on a local cluster takes seconds.
	timeout = 2 * time.Minute
)

// auditPolicy records every write, with who made it and with what user agent, and no read.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    verbs: [get, list, watch]
  - level: Metadata
`

// cluster is one whole local cluster with its own database servers.
type cluster struct {
	dir        string
	kubeconfig string
	auditLog   string
	dyn        dynamic.Interface
	// servers are the database servers by the name of the DatabaseServer that registers them.
	servers map[string]*dbtest.Instance
}

func startCluster(t *testing.T, name string) *cluster {
	t.Helper()
	c := &cluster{dir: filepath.Join(work, name), servers: map[string]*dbtest.Instance{}}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	policyPath := filepath.Join(c.dir, "audit-policy.yaml")
	if err := os.WriteFile(policyPath, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	c.auditLog = filepath.Join(c.dir, "audit.log")
	local, err := localcluster.Start(localcluster.Options{
		AssetsDir: assets(), DataDir: filepath.Join(c.dir, "cluster"),
		ConfigureAPIServer: func(api *envtest.APIServer) {
			api.Configure().Set("audit-policy-file", policyPath)
			api.Configure().Set("audit-log-path", c.auditLog)
			// Written before the API server answers, so a write the test counts is in the log
			// by the time its client saw the answer.
			api.Configure().Set("audit-log-mode", "blocking")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := local.Stop(); err != nil {
			t.Error(err)
		}
	})
	c.kubeconfig = local.KubeconfigPath
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	for server, start := range map[string]func() (*dbtest.Instance, error){"pg-1": dbtest.StartPostgres, "mariadb-1": dbtest.StartMariaDB} {
		inst, err := start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inst.Close() })
		c.servers[server] = inst
	}
	return c
}

func assets() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(root, "bin", "k8s", testenv.KubeVersion)
}

// kubectl runs kubectl as the administrator and returns its trimmed output; a failure fails
// the test.
func (c *cluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.kubectlIn("", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubectlIn runs kubectl with stdin.
func (c *cluster) kubectlIn(stdin string, args ...string) (string, error) {
	return c.command(stdin, filepath.Join(assets(), "kubectl"), args...)
}

func (c *cluster) helm(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(root, "bin", "helm-"+helmVersion)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: 'make helm' builds it", bin)
	}
	out, err := c.command("", bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (c *cluster) command(stdin, bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig,
		// Helm keeps its caches in the cluster's directory, not the user's home.
		"HELM_CACHE_HOME="+filepath.Join(c.dir, "helm", "cache"), "HELM_CONFIG_HOME="+filepath.Join(c.dir, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(c.dir, "helm", "data"))
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.Output()
	if exit, ok := err.(*exec.ExitError); ok {
		return "", fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, exit.Stderr)
	}
	return strings.TrimSpace(string(out)), err
}

// apply applies manifests given as text, as the administrator. A kind whose CRD was just
// established may be refused for a moment ("There can be a delay between when
// CustomResourceDefinitions are created and when they are available"): that is retried.
func (c *cluster) apply(t *testing.T, manifest string) {
	t.Helper()
	eventually(t, "kubectl apply", func() error {
		_, err := c.kubectlIn(manifest, "apply", "-f", "-")
		if err != nil && !strings.Contains(err.Error(), "There can be a delay") {
			t.Fatal(err)
		}
		return err
	})
}

// eventually polls cond until it returns nil, failing the test with its last error.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = cond()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last seen: %v", what, err, last)
	}
}

// operator is one run of a release's landlord binary.
type operator struct {
	release release
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
	// started is when it was started; stopped when it had exited.
	started, stopped time.Time
}

// startOperator runs the release's binary with the configuration its installer put in the
// cluster (the store in a directory of the cluster's, where the Deployment mounts its volume),
// as the installed ServiceAccount, electing its leader as a Deployment's replicas do. It waits
// until the operator reports ready.
func (c *cluster) startOperator(t *testing.T, r release, edits ...func(config string) string) *operator {
	t.Helper()
	configMap := c.kubectl(t, "-n", "landlord-system", "get", "deployment", "landlord-controller-manager",
		"-o", `jsonpath={.spec.template.spec.volumes[?(@.name=="config")].configMap.name}`)
	cfg := c.kubectl(t, "-n", "landlord-system", "get", "configmap", configMap, "-o", `jsonpath={.data.landlord\.yaml}`)
	cfg = strings.ReplaceAll(cfg, "/var/lib/landlord/secrets", filepath.Join(c.dir, "secrets"))
	for _, edit := range edits {
		cfg = edit(cfg)
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	cfgPath := filepath.Join(c.dir, "landlord-"+stamp+".yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	operatorKubeconfig := filepath.Join(c.dir, "operator.kubeconfig")
	if err := testenv.WriteServiceAccountKubeconfig(c.kubeconfig, operatorKubeconfig, "landlord-system", "landlord-controller-manager"); err != nil {
		t.Fatal(err)
	}
	o := &operator{release: r, logPath: filepath.Join(c.dir, filepath.Base(r.binary)+"-"+stamp+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(o.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	probes := freeAddr(t)
	o.cmd = exec.Command(r.binary, "--config="+cfgPath, "--embedded=never",
		"--leader-elect", "--leader-election-namespace=landlord-system",
		"--metrics-bind-address=0", "--health-probe-bind-address="+probes)
	o.cmd.Env = append(os.Environ(), "KUBECONFIG="+operatorKubeconfig)
	o.cmd.Stdout, o.cmd.Stderr = logFile, logFile
	// The operator dies with the test process, however that ends.
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	o.started = time.Now()
	if err := o.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		o.waitErr = o.cmd.Wait()
		o.stopped = time.Now()
		close(o.exited)
	}()
	t.Cleanup(func() {
		o.stop(t)
		if t.Failed() {
			t.Logf("the log of %s's operator (%s) ends with:\n%s", r.name, o.logPath, o.logTail(60))
		}
	})
	httpClient := &http.Client{Timeout: time.Second}
	eventually(t, r.name+"'s operator ready", func() error {
		select {
		case <-o.exited:
			return fmt.Errorf("it exited: %v\n%s", o.waitErr, o.logTail(40))
		default:
		}
		resp, err := httpClient.Get("http://" + probes + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
	// Ready is not leading: a replica waits for the lease of the one it replaces to be released
	// or to expire, and until it leads it writes nothing, which would pass for a fleet that
	// needed nothing.
	eventually(t, r.name+"'s operator leading", func() error {
		if !strings.Contains(strings.ToLower(o.log()), "successfully acquired lease") {
			return fmt.Errorf("it has not acquired the lease:\n%s", o.logTail(5))
		}
		return nil
	})
	return o
}

// stop asks the operator to shut down (SIGTERM, as a rolling update does) and waits until it
// has.
func (o *operator) stop(t *testing.T) {
	t.Helper()
	select {
	case <-o.exited:
		return
	default:
	}
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("%s's operator did not stop within 30s of SIGTERM; killed", o.release.name)
		_ = o.cmd.Process.Kill()
		<-o.exited
	}
}

func (o *operator) log() string {
	b, _ := os.ReadFile(o.logPath)
	return string(b)
}

func (o *operator) logTail(lines int) string {
	all := strings.Split(strings.TrimSpace(o.log()), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// auditEvent is what the audit log says of one request.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
}

func (e auditEvent) key() string {
	verb := map[string]string{"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE"}[e.Verb]
	if verb == "" {
		verb = strings.ToUpper(e.Verb)
	}
	res := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		res += "/" + e.ObjectRef.Subresource
	}
	return verb + " " + res
}

// write is one write the operator made.
type write struct {
	// key is "VERB resource", as the benchmarks count requests: "PATCH tenants/status".
	key             string
	namespace, name string
	code            int
}

func (w write) String() string {
	return fmt.Sprintf("%s %s/%s (%d)", w.key, w.namespace, w.name, w.code)
}

// operatorWrites are the writes the operator's ServiceAccount made from from on, those the API
// server carried out (a 2xx answer). Leader
// election's lease renewals and the reviews the operator asks for at start (which store nothing)
// are left out: they are the same whatever the fleet.
func (c *cluster) operatorWrites(t *testing.T, from time.Time) []write {
	t.Helper()
	f, err := os.Open(c.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []write
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var e auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil || e.ImpersonatedUser == nil || e.ImpersonatedUser.Username != serviceAccount ||
			e.RequestReceivedTimestamp.Before(&metav1.MicroTime{Time: from}) ||
			e.ObjectRef.Resource == "leases" || strings.HasPrefix(e.ObjectRef.Resource, "selfsubject") {
			continue
		}
		w := write{key: e.key(), namespace: e.ObjectRef.Namespace, name: e.ObjectRef.Name}
		if e.ResponseStatus != nil {
			w.code = e.ResponseStatus.Code
		}
		if w.code < 200 || w.code > 299 {
			// Refused (a conflict retried, a create of what exists): nothing was written.
			continue
		}
		out = append(out, w)
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b write) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}
