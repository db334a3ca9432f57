package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/test/testenv"
)

// `make run` brings up a whole local cluster even when a kubeconfig names another cluster (here
// one that does not answer: anything the operator sent there would fail the test), writes a
// kubeconfig for people, and the README's quick start works as written: the samples, the
// component sample included, become Ready, and the component's pods run on its node pool.
func TestRunWithoutAClusterStartsALocalCluster(t *testing.T) {
	testenv.NeedCluster(t)
	root := testenv.RepoRoot()
	t.Setenv("KUBECONFIG", otherClusterKubeconfig(t))
	mode := makeRunEmbedded(t)
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s", testenv.KubeVersion)
	}
	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, filepath.Join(root, "config", "manager", "landlord.yaml"), config.Overrides{}, mode,
			localcluster.Options{
				AssetsDir: assets, DataDir: dataDir, CRDDir: filepath.Join(root, "config", "crd", "bases"),
				Manifests:     []string{filepath.Join(root, "config", "rbac", "tenant_roles.yaml")},
				MetricsServer: true, // as make run has it
			},
			operator.Options{MetricsAddr: "0", ProbeAddr: "0"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run returned %v", err)
		}
	})

	kubeconfig := filepath.Join(dataDir, "kubeconfig")
	c := waitForClient(t, kubeconfig, done)
	// The README's quick start, as written: its kubectl commands, run in order with the kubectl
	// its export puts on the PATH, and the tenants its comment shows.
	qs := readQuickStart(t, filepath.Join(root, "README.md"))
	if !strings.Contains(qs.export, "bin/embedded/kubeconfig") || !strings.Contains(qs.export, "bin/k8s/"+testenv.KubeVersion) {
		t.Errorf("the quick start's export %q names neither make run's kubeconfig (bin/embedded/kubeconfig) nor the kubectl built for Kubernetes %s", qs.export, testenv.KubeVersion)
	}
	kubectl := func(args ...string) ([]byte, error) {
		cmd := exec.Command(filepath.Join(assets, "kubectl"), args...)
		cmd.Dir = root
		// Its own discovery cache: kubectl keys the cache by host and port, and a cache left by
		// another cluster that once listened on the same port would hide the CRDs.
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+filepath.Join(dataDir, "kubectl-cache"))
		return cmd.CombinedOutput()
	}
	outputs := map[string]string{}
	for i, args := range qs.commands {
		var out []byte
		var err error
		if i == 0 {
			// For a few seconds after the CRDs appear, the API server answers creates of a kind
			// an admission policy mutates with 503 ServiceUnavailable, until it has loaded the
			// kind's schema; the README says to run the first apply again, as a person would.
			applied := time.Now()
			_ = wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(context.Context) (bool, error) {
				out, err = kubectl(args...)
				return err == nil || !strings.Contains(string(out), "ServiceUnavailable"), nil
			})
			t.Logf("the first apply was accepted %s after the cluster came up", time.Since(applied).Round(time.Second))
		} else {
			out, err = kubectl(args...)
		}
		if err != nil {
			t.Fatalf("the quick start's kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		outputs[strings.Join(args, " ")] = string(out)
	}
	got, ok := outputs["get tenants"]
	if !ok {
		t.Fatalf("the quick start no longer runs kubectl get tenants: %q", qs.commands)
	}
	for _, row := range qs.tenants {
		if !containsRow(got, row) {
			t.Errorf("kubectl get tenants shows no row beginning %q, as the README says it does:\n%s", strings.Join(row, " "), got)
		}
	}

	cfg := config.Default()
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(cfg.NamespaceName("pied-piper"))); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("the component sample has %d pods, want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "pool-a-0" {
			t.Errorf("pod %s is %s on %q, want Running on pool-a-0, the node of its pool", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
	}
}

// quickStart is the README's quick start: the export line, the kubectl commands in order, and
// the first columns (name, state, ready) of the tenants its comment says kubectl get tenants
// shows.
type quickStart struct {
	export   string
	commands [][]string
	tenants  [][]string
}

// readQuickStart reads the first sh block under the README's "Five-minute quick start".
func readQuickStart(t *testing.T, path string) quickStart {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## Five-minute quick start")
	if !ok {
		t.Fatal("README.md has no \"Five-minute quick start\" section")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("the quick start has no sh block")
	}
	if block, _, ok = strings.Cut(block, "```"); !ok {
		t.Fatal("the quick start has no sh block")
	}
	var qs quickStart
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "export "):
			qs.export = line
		case strings.HasPrefix(line, "kubectl "):
			command, _, _ := strings.Cut(line, "#")
			qs.commands = append(qs.commands, strings.Fields(command)[1:])
		case strings.HasPrefix(line, "# ") && !strings.HasPrefix(line, "# NAME"):
			if fields := strings.Fields(strings.TrimPrefix(line, "# ")); len(fields) >= 3 {
				qs.tenants = append(qs.tenants, fields[:3])
			}
		}
	}
	if qs.export == "" || len(qs.commands) == 0 || len(qs.tenants) == 0 {
		t.Fatalf("the quick start block reads as export %q, commands %q, tenants %q", qs.export, qs.commands, qs.tenants)
	}
	return qs
}

// containsRow reports whether a table kubectl printed has a row whose first columns are row.
func containsRow(table string, row []string) bool {
	for _, line := range strings.Split(table, "\n") {
		if fields := strings.Fields(line); len(fields) >= len(row) && slices.Equal(fields[:len(row)], row) {
			return true
		}
	}
	return false
}

// waitForClient polls for the kubeconfig the local cluster writes: a person's shell
// has no event to wait on either.
func waitForClient(t *testing.T, path string, done <-chan error) client.Client {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v", err)
		default:
		}
		if restCfg, err := clientcmd.BuildConfigFromFlags("", path); err == nil {
			if c, err := client.New(restCfg, client.Options{Scheme: tenancyv1alpha1.Scheme()}); err == nil {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no usable kubeconfig at %s", path)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// In a pod, the operator refuses a file store that would not outlive the pod, before it
// touches any cluster, and says what to do instead. /dev/shm is memory-backed on every Linux.
func TestInAPodAFileStoreThatDoesNotOutliveThePodIsRefused(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "landlord-store-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := config.Default()
	cfg.Secrets.Store.File.Dir = dir
	cfg.Secrets.Store.File.KeyFile = filepath.Join(dir, "key.json")
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "landlord.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// What the kubelet sets in every container.
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")

	err = run(context.Background(), path, config.Overrides{}, "never", localcluster.Options{}, operator.Options{})
	if err == nil || !strings.Contains(err.Error(), "memory-backed") || !strings.Contains(err.Error(), "PersistentVolumeClaim") {
		t.Fatalf("run = %v, want the file store refused as memory-backed, naming the way out", err)
	}
}

// otherClusterHost is the server of the kubeconfig that stands for a real cluster: nothing
// listens there.
const otherClusterHost = "https://127.0.0.1:1"

// otherClusterKubeconfig writes a kubeconfig whose current context is another cluster.
func otherClusterKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: production
  cluster: {server: "` + otherClusterHost + `"}
users:
- name: admin
  user: {token: not-a-token}
contexts:
- name: production
  context: {cluster: production, user: admin}
current-context: production
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// makeRunEmbedded is the --embedded value of the command `make run` runs by default (CLUSTER
// unset), read from the Makefile so that this test follows what a person's `make run` does.
func makeRunEmbedded(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^CLUSTER \?= embedded$`).Match(data) {
		t.Fatal("the Makefile does not default CLUSTER to embedded")
	}
	_, recipe, ok := strings.Cut(string(data), "ifeq ($(CLUSTER),embedded)\n")
	if !ok {
		t.Fatal("the Makefile's run target has no CLUSTER=embedded branch")
	}
	recipe, _, _ = strings.Cut(recipe, "\nelse")
	m := regexp.MustCompile(`go run \./cmd/landlord .*--embedded=(\S+)`).FindStringSubmatch(recipe)
	if m == nil {
		t.Fatalf("make run does not pass --embedded to the operator:\n%s", recipe)
	}
	return m[1]
}

// With a kubeconfig pointing at a real cluster, `make run` still uses the local cluster: only an
// explicit choice (CLUSTER=current, --embedded=never) reaches the kubeconfig's cluster.
func TestMakeRunIgnoresAKubeconfigThatNamesAnotherCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", otherClusterKubeconfig(t))
	for _, tc := range []struct {
		name, embedded string
		wantLocal      bool
	}{
		{"make run starts the local cluster", makeRunEmbedded(t), true},
		{"--embedded=auto would have used the kubeconfig's cluster", "auto", false},
		{"--embedded=never uses the kubeconfig's cluster", "never", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := clusterConfig(tc.embedded)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantLocal && cfg != nil:
				t.Fatalf("--embedded=%s targets %s, want the local cluster", tc.embedded, cfg.Host)
			case !tc.wantLocal && (cfg == nil || cfg.Host != otherClusterHost):
				t.Fatalf("--embedded=%s gives %v, want the kubeconfig's cluster %s", tc.embedded, cfg, otherClusterHost)
			}
		})
	}
}

// On a real cluster the default shard runs only under leader election: without it, a second
// process (one run from a workstation beside the installed operator) would run the cluster-wide
// duties, the admission policies among them, at the same time as the first.
func TestOnARealClusterTheOperatorIsRefusedWithoutLeaderElection(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts operator.Options
		want string
	}{
		{"the default shard without leader election is refused", operator.Options{}, "needs --leader-elect"},
		{"the default shard with leader election is accepted", operator.Options{LeaderElection: true}, ""},
		{"a named shard with leader election is accepted", operator.Options{Shard: "eu-1", LeaderElection: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLeaderElection(tc.opts)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("checkLeaderElection: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkLeaderElection = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestAShardIsRefusedWithoutAValidNameOrALease(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts operator.Options
		want string
	}{
		{"the default shard needs nothing", operator.Options{}, ""},
		{"a named shard with leader election is accepted", operator.Options{Shard: "eu-1", LeaderElection: true}, ""},
		{"a name that is not a DNS label is refused", operator.Options{Shard: "EU_1", LeaderElection: true}, `--shard "EU_1"`},
		{"a named shard without leader election is refused", operator.Options{Shard: "eu-1"}, "needs --leader-elect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkShard(tc.opts)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("checkShard: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkShard = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
