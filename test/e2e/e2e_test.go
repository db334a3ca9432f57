// Package e2e installs Landlord as a user does and walks a tenant through its life, asserting
// on what the user sees with kubectl. The cluster is the whole local cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok's simulated nodes); the
// operator is the landlord binary, built from this tree and run as the shipped ServiceAccount
// (impersonated, so that it holds exactly the shipped RBAC).
package e2e_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/test/shipped"
	"github.com/landlord-dev/landlord/test/testenv"
)

// timeout bounds each wait: a step of a tenant's life on a local cluster takes seconds.
const timeout = 2 * time.Minute

// suite is the cluster and what the steps share.
type suite struct {
	t          *testing.T
	root       string
	assets     string
	dir        string
	kubeconfig string
	// metrics is the operator's metrics endpoint, served over HTTPS and authorized by the API
	// server as in a cluster.
	metrics string
}

func TestLandlordAsAUserInstallsAndUsesIt(t *testing.T) {
	testenv.NeedCluster(t)
	s := &suite{t: t, root: testenv.RepoRoot(), dir: t.TempDir()}
	s.assets = os.Getenv("KUBEBUILDER_ASSETS")
	if s.assets == "" {
		s.assets = filepath.Join(s.root, "bin", "k8s", testenv.KubeVersion)
	}
	cluster, err := localcluster.Start(localcluster.Options{AssetsDir: s.assets, DataDir: filepath.Join(s.dir, "cluster")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Error(err)
		}
	})
	s.kubeconfig = cluster.KubeconfigPath

	t.Run("config/default installs with server-side apply and its Deployment rolls out", func(t *testing.T) {
		// The secret store's claim binds to a volume made for it, as a cluster without a
		// provisioner would offer one.
		s.apply(t, `apiVersion: v1
kind: PersistentVolume
metadata: {name: landlord-secrets}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOncePod]
  storageClassName: ""
  claimRef: {namespace: landlord-system, name: landlord-secrets}
  hostPath: {path: /var/lib/e2e/landlord-secrets}
`)
		s.kubectl(t, "apply", "--server-side", "-k", "config/default")
		s.kubectl(t, "wait", "--for=condition=Established", "crd", "--all", "--timeout=1m")
		s.kubectl(t, "-n", "landlord-system", "rollout", "status", "deployment/landlord-controller-manager", "--timeout=2m")
	})
	if t.Failed() {
		return
	}
	s.startOperator(t)

	t.Run("a tenant with a component becomes Ready and its pods run on its node pool", func(t *testing.T) {
		s.kubectl(t, "apply", "-k", "config/samples/components")
		s.waitTenantReady(t, "pied-piper")
		s.expectPods(t, "tenant-pied-piper", 3, "pool-a-0")
	})
	t.Run("a shared secret reaches the tenant, and so does its change", func(t *testing.T) {
		for _, color := range []string{"blue", "green"} {
			s.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: brand
  namespace: landlord-templates
  labels: {tenancy.landlord.dev/shared: "true"}
stringData: {color: %s}
`, color))
			s.eventually(t, "the tenant's copy of brand is "+color, func() bool {
				out, err := s.kubectlErr("-n", "tenant-pied-piper", "get", "secret", "brand", "-o", "jsonpath={.data.color}")
				return err == nil && out == base64.StdEncoding.EncodeToString([]byte(color))
			})
		}
	})
	t.Run("kubectl landlord pauses a tenant, and resuming it repairs what was changed meanwhile; a check on request finds it Ready", func(t *testing.T) {
		plugin := s.plugin(t)
		if out := plugin("get", "tenants"); !strings.Contains(out, "pied-piper") || !strings.Contains(out, "REASON") {
			t.Errorf("kubectl landlord get tenants:\n%s", out)
		}
		plugin("suspend", "pied-piper")
		s.kubectl(t, "wait", "--for=condition=Suspended", "tenant/pied-piper", "--timeout=1m")
		// Repaired means the quota the operator wrote, exactly: not merely any other value.
		podsQuota := s.kubectl(t, "-n", "tenant-pied-piper", "get", "resourcequota", "tenant-quota", "-o", "jsonpath={.spec.hard.pods}")
		if podsQuota == "" || podsQuota == "999" {
			t.Fatalf("tenant-quota limits pods to %q before the edit; the edit to 999 would change nothing to repair", podsQuota)
		}
		s.kubectl(t, "-n", "tenant-pied-piper", "patch", "resourcequota", "tenant-quota", "--type=merge", "-p", `{"spec":{"hard":{"pods":"999"}}}`)
		if out := plugin("status", "pied-piper"); !regexp.MustCompile(`(?m)^Suspended:\s+true$`).MatchString(out) {
			t.Errorf("kubectl landlord status does not say the tenant is suspended:\n%s", out)
		}
		plugin("resume", "pied-piper")
		s.eventually(t, "the quota edited while pied-piper was suspended is repaired to pods: "+podsQuota, func() bool {
			pods, err := s.kubectlErr("-n", "tenant-pied-piper", "get", "resourcequota", "tenant-quota", "-o", "jsonpath={.spec.hard.pods}")
			return err == nil && pods == podsQuota
		})
		s.eventually(t, "pied-piper's Suspended condition is gone", func() bool {
			out, err := s.kubectlErr("get", "tenant", "pied-piper", "-o", `jsonpath={.status.conditions[?(@.type=="Suspended")].status}`)
			return err == nil && out == ""
		})
		if out := plugin("reconcile", "pied-piper", "--wait"); !strings.Contains(out, "Ready=True") {
			t.Errorf("kubectl landlord reconcile --wait:\n%s", out)
		}
	})
	t.Run("a component upgrade rolls out the new version and says so in an event", func(t *testing.T) {
		template, err := os.ReadFile(filepath.Join(s.root, "config", "samples", "components", "web-1.0.0.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		s.apply(t, strings.ReplaceAll(string(template), "1.0.0", "1.1.0"))
		s.kubectl(t, "patch", "tenant", "pied-piper", "--type=json", "-p", `[{"op":"replace","path":"/spec/components/0/version","value":"1.1.0"}]`)
		s.waitTenantReady(t, "pied-piper")
		if image := s.kubectl(t, "-n", "tenant-pied-piper", "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); image != "ghcr.io/example/web:1.1.0" {
			t.Errorf("image %q, want ghcr.io/example/web:1.1.0", image)
		}
		s.expectPods(t, "tenant-pied-piper", 3, "pool-a-0")
		events := s.kubectl(t, "get", "events", "-A", "--field-selector", "involvedObject.name=pied-piper,reason=ComponentApplied", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "component web version 1.1.0 applied") {
			t.Errorf("events %q, want one saying version 1.1.0 was applied", events)
		}
		// As a person finds them, by the Tenant: its events are recorded on it, and a
		// cluster-scoped object's live in default, the namespace of this kubeconfig's context.
		for _, args := range [][]string{{"events", "--for", "tenant/pied-piper"}, {"events", "-A", "--for", "tenant/pied-piper"}} {
			if out := s.kubectl(t, args...); !strings.Contains(out, "component web version 1.1.0 applied") {
				t.Errorf("kubectl %s:\n%s\nwant the event saying version 1.1.0 was applied", strings.Join(args, " "), out)
			}
		}
	})
	t.Run("a Frozen tenant runs no pod", func(t *testing.T) {
		s.setState(t, "pied-piper", "Frozen")
		s.waitTenantReady(t, "pied-piper")
		s.eventually(t, "no pod in tenant-pied-piper", func() bool {
			out, err := s.kubectlErr("-n", "tenant-pied-piper", "get", "pods", "-o", "name")
			return err == nil && out == ""
		})
	})
	t.Run("deleting a tenant that is not Archived is refused, saying how", func(t *testing.T) {
		// What a Flux user sees when a tenant's file is removed from Git while it is Frozen.
		_, err := s.kubectlErr("delete", "tenant", "pied-piper", "--wait=false")
		if err == nil || !strings.Contains(err.Error(), "state: Archived") || !strings.Contains(err.Error(), "tenancy.landlord.dev/confirm-deletion: pied-piper") {
			t.Fatalf("kubectl delete tenant: %v; want a refusal saying to archive it or confirm the deletion", err)
		}
		s.waitTenantReady(t, "pied-piper")
	})
	// A static volume and a claim on it, bound by kube-controller-manager: what the operator does
	// to keep it uses the shipped ServiceAccount's permissions on PersistentVolumes.
	const volume = `apiVersion: v1
kind: PersistentVolume
metadata: {name: pied-piper-data}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  storageClassName: e2e-static
  hostPath: {path: /var/lib/e2e/pied-piper-data}
`
	const claim = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: tenant-pied-piper}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: e2e-static
  resources: {requests: {storage: 1Gi}}
`
	boundToVolume := func(t *testing.T) {
		s.kubectl(t, "-n", "tenant-pied-piper", "wait", "--for=jsonpath={.spec.volumeName}=pied-piper-data", "pvc/data", "--timeout=1m")
		s.kubectl(t, "-n", "tenant-pied-piper", "wait", "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=1m")
	}
	t.Run("a tenant's claim is bound to a volume", func(t *testing.T) {
		s.apply(t, volume)
		s.apply(t, claim)
		boundToVolume(t)
	})
	t.Run("an Archived tenant's namespace is gone and its volume is kept", func(t *testing.T) {
		s.setState(t, "pied-piper", "Archived")
		s.kubectl(t, "wait", "--for=delete", "namespace/tenant-pied-piper", "--timeout=2m")
		s.waitTenantReady(t, "pied-piper")
		if policy := s.kubectl(t, "get", "pv", "pied-piper-data", "-o", "jsonpath={.spec.persistentVolumeReclaimPolicy}"); policy != "Retain" {
			t.Errorf("the volume's reclaim policy is %q, want Retain", policy)
		}
	})
	t.Run("an Archived tenant made Active runs again, its claim bound to the same volume", func(t *testing.T) {
		s.setState(t, "pied-piper", "Active")
		s.waitTenantReady(t, "pied-piper")
		s.expectPods(t, "tenant-pied-piper", 3, "pool-a-0")
		s.apply(t, claim)
		boundToVolume(t)
	})
	t.Run("a Purged tenant's namespace and volume are gone and the tenant can be deleted", func(t *testing.T) {
		s.kubectl(t, "patch", "tenant", "pied-piper", "--type=merge", "-p", `{"spec":{"state":"Purged","purgeConfirmation":"pied-piper"}}`)
		s.kubectl(t, "wait", "--for=delete", "namespace/tenant-pied-piper", "--timeout=2m")
		s.waitTenantReady(t, "pied-piper")
		s.kubectl(t, "wait", "--for=delete", "pv/pied-piper-data", "--timeout=1m")
		s.kubectl(t, "delete", "tenant", "pied-piper", "--timeout=2m")
	})
	t.Run("a claim on a pool is bound to a Ready spare", func(t *testing.T) {
		s.kubectl(t, "apply", "-k", "config/samples/pool")
		s.kubectl(t, "-n", "default", "wait", "--for=jsonpath={.status.phase}=Bound", "tenantclaim/initrode-signup", "--timeout=2m")
		tenant := s.kubectl(t, "-n", "default", "get", "tenantclaim", "initrode-signup", "-o", "jsonpath={.status.tenant}")
		s.waitTenantReady(t, tenant)
		if org := s.kubectl(t, "get", "tenant", tenant, "-o", `jsonpath={.metadata.annotations.tenancy\.landlord\.dev/organization}`); org != "Initrode" {
			t.Errorf("the bound tenant's organization is %q, want Initrode", org)
		}
	})

	t.Run("Prometheus bound to landlord-metrics-reader scrapes what the dashboard and the alerts query; others are refused", func(t *testing.T) {
		s.kubectl(t, "create", "namespace", "monitoring")
		s.kubectl(t, "-n", "monitoring", "create", "serviceaccount", "prometheus")
		s.kubectl(t, "-n", "monitoring", "create", "serviceaccount", "someone")
		s.kubectl(t, "create", "clusterrolebinding", "prometheus-landlord", "--clusterrole=landlord-metrics-reader", "--serviceaccount=monitoring:prometheus")
		status, _ := s.scrape(t, s.kubectl(t, "-n", "monitoring", "create", "token", "someone"))
		if status != http.StatusForbidden {
			t.Errorf("a ServiceAccount not bound to landlord-metrics-reader got HTTP %d, want 403", status)
		}
		var families map[string]*dto.MetricFamily
		token := s.kubectl(t, "-n", "monitoring", "create", "token", "prometheus")
		// RBAC reaches the operator's authorizer through the API server's cache: a moment.
		s.eventually(t, "a scrape by Prometheus's ServiceAccount", func() bool {
			status, families = s.scrape(t, token)
			return status == http.StatusOK
		})
		list := make([]*dto.MetricFamily, 0, len(families))
		for _, f := range families {
			list = append(list, f)
		}
		exprs, err := shipped.DashboardExpressions()
		if err != nil {
			t.Fatal(err)
		}
		rules, err := shipped.RuleExpressions()
		if err != nil {
			t.Fatal(err)
		}
		for _, expr := range rules {
			exprs = append(exprs, expr)
		}
		// Series of these appear only once what they count has happened, and nothing in this
		// story makes it happen (no database, no failed render or write, no edit of a managed
		// object); TestOperatorMetrics drives each of them.
		notInThisStory := map[string]bool{
			"landlord_database_operations_total": true, "landlord_database_operation_duration_seconds": true,
			"landlord_component_render_failures_total": true, "landlord_apply_failures_total": true,
			"landlord_drift_repairs_total": true,
			// Nor is any tenant left not Ready, nor a rollout, nor a DatabaseServer.
			"landlord_tenant_oldest_not_ready_seconds": true, "landlord_rollout_status": true,
			"landlord_rollout_tenants": true, "landlord_rollout_waves": true,
			"landlord_rollout_waves_released": true, "landlord_rollout_max_failures": true,
			"landlord_database_server_status": true, "landlord_database_server_tenants": true, "landlord_database_server_max_tenants": true,
			// Nor does any component of this story declare a migration, nor is a backup
			// scheduled.
			"landlord_migrations_total": true, "landlord_backup_schedule_overdue_tenants": true,
			"landlord_backup_schedule_missed_window": true,
		}
		seen := map[string]bool{}
		for _, expr := range exprs {
			names, err := shipped.MetricNames(expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range names {
				if seen[name] || notInThisStory[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] {
					continue
				}
				seen[name] = true
				if name == "up" {
					continue // Prometheus's own, per target.
				}
				if !shipped.Exported(name, list) {
					t.Errorf("the dashboard or an alert queries %s, which the operator's endpoint does not serve", name)
				}
			}
		}
		if len(seen) < 15 {
			t.Errorf("checked %d metric names, want the dashboard's and the alerts' (at least 15)", len(seen))
		}
		if got := families["landlord_build_info"]; got == nil || len(got.Metric) != 1 || got.Metric[0].GetGauge().GetValue() != 1 {
			t.Errorf("landlord_build_info is %v, want one series of value 1", got)
		}
	})
}

// plugin builds landlordctl as the kubectl plugin kubectl-landlord and returns a function that
// runs `kubectl landlord ARGS...` through the real kubectl, as the administrator; a failure fails
// the test.
func (s *suite) plugin(t *testing.T) func(args ...string) string {
	t.Helper()
	dir := filepath.Join(s.dir, "plugins")
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-landlord"), "./cmd/landlordctl")
	build.Dir = s.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-landlord: %v\n%s", err, out)
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(s.assets, "kubectl"), append([]string{"landlord"}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl landlord %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// scrape GETs the operator's metrics with a bearer token, as the shipped ServiceMonitor does
// (HTTPS, the operator's self-signed certificate), and parses them when the answer is 200.
func (s *suite) scrape(t *testing.T, token string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+s.metrics+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as the ServiceMonitor: a self-signed certificate
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, families
}

// startOperator runs the landlord binary with the installed configuration, as the shipped
// ServiceAccount, and waits until it is ready; it is stopped when the test ends.
func (s *suite) startOperator(t *testing.T) {
	t.Helper()
	bin := filepath.Join(s.dir, "landlord")
	build := exec.Command("go", "build", "-o", bin, "./cmd/landlord")
	build.Dir = s.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building landlord: %v\n%s", err, out)
	}

	// The configuration config/default installed, with the file store in a directory of ours
	// (the Deployment mounts its PersistentVolumeClaim there).
	configMap := s.kubectl(t, "-n", "landlord-system", "get", "deployment", "landlord-controller-manager",
		"-o", `jsonpath={.spec.template.spec.volumes[?(@.name=="config")].configMap.name}`)
	cfg := s.kubectl(t, "-n", "landlord-system", "get", "configmap", configMap, "-o", `jsonpath={.data.landlord\.yaml}`)
	cfg = strings.ReplaceAll(cfg, "/var/lib/landlord/secrets", filepath.Join(s.dir, "secrets"))
	cfgPath := filepath.Join(s.dir, "landlord.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	// The administrator's kubeconfig, impersonating the ServiceAccount: the operator holds
	// exactly the RBAC config/rbac grants it.
	operatorKubeconfig := filepath.Join(s.dir, "operator.kubeconfig")
	if err := testenv.WriteServiceAccountKubeconfig(s.kubeconfig, operatorKubeconfig, "landlord-system", "landlord-controller-manager"); err != nil {
		t.Fatal(err)
	}

	probes := freeAddr(t)
	s.metrics = freeAddr(t)
	logPath := filepath.Join(s.dir, "landlord.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config="+cfgPath, "--embedded=never",
		"--leader-elect", "--leader-election-namespace=landlord-system",
		"--metrics-bind-address="+s.metrics, "--health-probe-bind-address="+probes)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+operatorKubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		_ = logFile.Close()
		if t.Failed() {
			if out, err := os.ReadFile(logPath); err == nil {
				t.Logf("operator log:\n%s", tail(string(out), 80))
			}
		}
	})
	client := &http.Client{Timeout: time.Second}
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("the operator exited: %v", err)
		default:
		}
		resp, err := client.Get("http://" + probes + "/readyz")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		out, _ := os.ReadFile(logPath)
		t.Fatalf("the operator did not become ready: %v\n%s", err, tail(string(out), 80))
	}
}

// kubectl runs kubectl as the administrator, from the repository root, and returns its
// trimmed output; a failure fails the test.
func (s *suite) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.kubectlErr(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (s *suite) kubectlErr(args ...string) (string, error) {
	return s.kubectlIn("", args...)
}

func (s *suite) kubectlIn(stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(s.assets, "kubectl"), args...)
	cmd.Dir = s.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.Output()
	if exit, ok := err.(*exec.ExitError); ok {
		return "", fmt.Errorf("%w: %s", err, exit.Stderr)
	}
	return strings.TrimSpace(string(out)), err
}

// apply applies a manifest given as text.
func (s *suite) apply(t *testing.T, manifest string) {
	t.Helper()
	if _, err := s.kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v", err)
	}
}

func (s *suite) setState(t *testing.T, tenant, state string) {
	t.Helper()
	s.kubectl(t, "patch", "tenant", tenant, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"state":%q}}`, state))
}

// waitTenantReady waits until the tenant is Current as kstatus-aware tools (Flux, kubectl
// wait) judge it: Ready for its current generation.
func (s *suite) waitTenantReady(t *testing.T, name string) {
	t.Helper()
	var last string
	s.eventually(t, "tenant "+name+" Ready", func() bool {
		out, err := s.kubectlErr("get", "tenant", name, "-o", "json")
		if err != nil {
			last = err.Error()
			return false
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(out)); err != nil {
			last = err.Error()
			return false
		}
		res, err := status.Compute(u)
		if err != nil {
			last = err.Error()
			return false
		}
		last = res.Status.String() + ": " + res.Message
		return res.Status == status.CurrentStatus
	}, func() string { return last })
}

// expectPods waits until the namespace runs exactly n pods, all Running on node.
func (s *suite) expectPods(t *testing.T, namespace string, n int, node string) {
	t.Helper()
	var last string
	s.eventually(t, fmt.Sprintf("%d pods Running on %s in %s", n, node, namespace), func() bool {
		out, err := s.kubectlErr("-n", namespace, "get", "pods", "-o", `jsonpath={range .items[*]}{.status.phase} {.spec.nodeName}{"\n"}{end}`)
		last = out
		if err != nil {
			return false
		}
		lines := strings.Fields(strings.ReplaceAll(out, " ", "/"))
		if len(lines) != n {
			return false
		}
		for _, l := range lines {
			if l != "Running/"+node {
				return false
			}
		}
		return true
	}, func() string { return last })
}

// eventually polls cond until it holds; describe, when given, says what was last seen.
func (s *suite) eventually(t *testing.T, what string, cond func() bool, describe ...func() string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		msg := fmt.Sprintf("waiting for %s: %v", what, err)
		for _, d := range describe {
			msg += "; last seen: " + d()
		}
		t.Fatal(msg)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func tail(s string, lines int) string {
	all := strings.Split(s, "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
