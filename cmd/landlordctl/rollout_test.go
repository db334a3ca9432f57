package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

// ---- Flags: refused before any cluster is read.

func TestBatchSizesAreTheOnesAComponentRolloutTakes(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want string
	}{
		{"", "<nil>"},
		{"1", "1"},
		{"50", "50"},
		{"25%", "25%"},
		{"100%", "100%"},
	} {
		t.Run(fmt.Sprintf("--batch %q is spec.strategy.batchSize %s", tc.flag, tc.want), func(t *testing.T) {
			b, err := parseBatch(tc.flag)
			got := "<nil>"
			if b != nil {
				got = b.String()
			}
			if err != nil || got != tc.want {
				t.Errorf("batchSize %s, %v; want %s", got, err, tc.want)
			}
		})
	}
	for _, flag := range []string{"0", "-1", "0%", "101%", "x", "%", "2.5", "10 %", "05%"} {
		t.Run(fmt.Sprintf("--batch %q is refused", flag), func(t *testing.T) {
			if _, err := parseBatch(flag); err == nil {
				t.Errorf("--batch %q was accepted", flag)
			}
		})
	}
}

// Flags that can never make a rollout are usage errors (exit 2); a kubeconfig that cannot be
// read, or lacks the context named, is the environment's failure (exit 1).
func TestBadRolloutFlagsAreRefusedBeforeAnyClusterIsRead(t *testing.T) {
	for args, want := range map[string]struct {
		err  string
		exit int
	}{
		"rollout --version 1.0.0":                                     {`required flag(s) "component"`, exitUsage},
		"rollout --component web --version 1.0.0 --batch 0":           {"--batch", exitUsage},
		"rollout --component Web --version 1.0.0":                     {"--component", exitUsage},
		"rollout --component web --version v1.0.0+dirty":              {"--version", exitUsage},
		"rollout --component web --version 1.0.0 --selector ==":       {"--selector", exitUsage},
		"rollout --component web --version 1.0.0 --max-failures -1":   {"--max-failures", exitUsage},
		"rollout --component web --version 1.0.0 --timeout 0s":        {"--timeout", exitUsage},
		"rollout --component web --version 1.0.0 --pause -1s":         {"--pause", exitUsage},
		"rollout --component web --version 1.0.0 --tenants acme":      {"chooses its tenants by label", exitUsage},
		"rollout --component web --version 1.0.0 --force":             {"never writes a tenant's spec", exitUsage},
		"rollout --component web --version 1.0.0 -o json":             {"landlordctl get rollout NAME -o yaml", exitUsage},
		"rollout --component web --version 1.0.0 --kubeconfig /none":  {"loading kubeconfig", exitError},
		"rollout --component web --version 1.0.0 --context elsewhere": {"no context", exitError},
	} {
		t.Run(args, func(t *testing.T) {
			args := strings.Fields(args)
			if !slices.Contains(args, "--kubeconfig") {
				args = append(args, "--kubeconfig", emptyKubeconfig(t))
			}
			_, err := landlordctlRollout(t, args...)
			if err == nil || !strings.Contains(err.Error(), want.err) || exitCode(err) != want.exit {
				t.Errorf("err=%v (exit %d), want %q and exit %d", err, exitCode(err), want.err, want.exit)
			}
		})
	}
}

// A rerun follows the ComponentRollout it created, and one declared in Git, when they describe
// the same rollout, whether or not the operator's defaults are spelled out.
func TestARolloutIsTheSameWhateverHaltsItAndWhicheverDefaultsAreSpelledOut(t *testing.T) {
	flags := tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "1.2.0",
		Selector: metav1.LabelSelector{MatchLabels: map[string]string{"plan": "trial"}}}
	for _, tc := range []struct {
		name   string
		mutate func(*tenancyv1alpha1.ComponentRolloutSpec)
		same   bool
	}{
		{"the same spec is the same rollout", func(*tenancyv1alpha1.ComponentRolloutSpec) {}, true},
		{"a halted one is the same rollout", func(s *tenancyv1alpha1.ComponentRolloutSpec) { s.Halted = true }, true},
		{"one that spells out the default batch size and deadline is the same rollout", func(s *tenancyv1alpha1.ComponentRolloutSpec) {
			s.Strategy.BatchSize = ptr.To(intstr.FromString("10%"))
			s.Strategy.ProgressDeadline = &metav1.Duration{Duration: 10 * time.Minute}
			s.Strategy.PauseBetweenWaves = &metav1.Duration{}
		}, true},
		{"another batch size is another rollout", func(s *tenancyv1alpha1.ComponentRolloutSpec) { s.Strategy.BatchSize = ptr.To(intstr.FromInt32(10)) }, false},
		{"another deadline is another rollout", func(s *tenancyv1alpha1.ComponentRolloutSpec) {
			s.Strategy.ProgressDeadline = &metav1.Duration{Duration: time.Minute}
		}, false},
		{"another selector is another rollout", func(s *tenancyv1alpha1.ComponentRolloutSpec) { s.Selector = metav1.LabelSelector{} }, false},
		{"a rollback is another rollout", func(s *tenancyv1alpha1.ComponentRolloutSpec) { s.Rollback = true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := *flags.DeepCopy()
			tc.mutate(&other)
			if got := sameRollout(flags, other); got != tc.same {
				t.Errorf("sameRollout = %t, want %t", got, tc.same)
			}
		})
	}
}

func emptyKubeconfig(t *testing.T) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local"}
	kc.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// landlordctlRollout runs the CLI and returns what it printed.
func landlordctlRollout(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return landlordctlIn(context.Background(), args...)
}

// ---- Rollouts against a real control plane and a running operator.

// fleet is one control plane and operator shared by the tests, started by the first test that
// needs it so that the others run without one.
var fleet struct {
	once sync.Once
	err  error
	env  *testenv.Env
	op   *testenv.Operator
	dir  string
}

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	// Every Eventually polls the API server: gomega's default of 10 ms would keep the two cores
	// the cluster and the operator share busy answering the test.
	gomega.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	code := m.Run()
	if fleet.op != nil {
		_ = fleet.op.Stop()
	}
	if fleet.env != nil {
		_ = fleet.env.Stop()
	}
	if fleet.dir != "" {
		_ = os.RemoveAll(fleet.dir)
	}
	os.Exit(code)
}

// templates are the component versions published to the fleet. Each renders a ConfigMap, which
// is ready as soon as it exists, so a tenant is Ready as soon as its operator applied it.
var templates = []string{"web-1.0.0", "web-1.1.0", "api-1.0.0", "api-1.1.0"}

// sharedCluster starts the shared control plane and operator and returns an admin client and a
// kubeconfig whose current context is the control plane.
func sharedCluster(t *testing.T) (client.Client, string) {
	t.Helper()
	testenv.NeedCluster(t)
	fleet.once.Do(func() { fleet.err = startFleet() })
	if fleet.err != nil {
		t.Fatal(fleet.err)
	}
	return fleet.env.AdminClient, writeKubeconfig(t, fleet.env)
}

func startFleet() error {
	var err error
	if fleet.env, err = testenv.Start(); err != nil {
		return err
	}
	if fleet.dir, err = os.MkdirTemp("", "landlordctl-rollout-"); err != nil {
		return err
	}
	store, err := secret.NewFileStore(fleet.dir, filepath.Join(fleet.dir, "key.json"))
	if err != nil {
		return err
	}
	if fleet.op, err = fleet.env.StartOperator(config.Default(), store); err != nil {
		return err
	}
	for _, name := range templates {
		component, version, _ := strings.Cut(name, "-")
		ct := &tenancyv1alpha1.ComponentTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: tenancyv1alpha1.ComponentTemplateSpec{
				Component: component,
				Version:   version,
				Manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + component +
					"\ndata:\n  version: {{ .Component.Version | quote }}\n",
			},
		}
		if err := fleet.env.AdminClient.Create(context.Background(), ct); err != nil {
			return fmt.Errorf("publishing %s: %w", name, err)
		}
	}
	return nil
}

// waitFor waits until check passes, and fails the test with check's last error at the timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	gomega.NewWithT(t).Eventually(check).WithTimeout(timeout).Should(gomega.Succeed(), what)
}

// createTenants creates Ready tenants labeled group=<group>, each pinning the given component
// versions ("web=1.0.0").
func createTenants(t *testing.T, c client.Client, group string, names []string, pins ...string) {
	t.Helper()
	createTenantsWith(t, c, group, names, false, pins...)
}

// followingTenants creates Ready tenants labeled group=<group> whose components start at the
// given versions ("web=1.0.0") and follow rollouts.
func followingTenants(t *testing.T, c client.Client, group string, names []string, pins ...string) {
	t.Helper()
	createTenantsWith(t, c, group, names, true, pins...)
}

func createTenantsWith(t *testing.T, c client.Client, group string, names []string, follow bool, pins ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		tenant := &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"group": group}},
			Spec:       tenancyv1alpha1.TenantSpec{Organization: name + " Inc.", Email: "ops@" + name + ".example.com"},
		}
		for _, p := range pins {
			component, version, _ := strings.Cut(p, "=")
			tenant.Spec.Components = append(tenant.Spec.Components, tenancyv1alpha1.Component{Name: component, Version: version, FollowRollouts: follow})
		}
		if err := c.Create(ctx, tenant); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		waitReady(t, c, name, pins...)
	}
}

// waitReady waits until the tenant is Ready (kstatus Current) and runs each given component at
// its version ("web=1.0.0"), ready.
func waitReady(t *testing.T, c client.Client, name string, pins ...string) *tenancyv1alpha1.Tenant {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{}
	waitFor(t, 30*time.Second, "tenant "+name+" Ready", func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, tenant); err != nil {
			return err
		}
		if res, err := kstatusOf(tenant, "Tenant"); err != nil || res.Status != kstatus.CurrentStatus {
			return fmt.Errorf("kstatus %v: %v", res, err)
		}
		for _, p := range pins {
			if got := running(tenant, strings.Split(p, "=")[0]); got != p {
				return fmt.Errorf("runs %s, want %s", got, p)
			}
		}
		return nil
	})
	return tenant
}

// running is "component=version" as the tenant's status reports the component, with ":not-ready"
// when it is not ready.
func running(t *tenancyv1alpha1.Tenant, component string) string {
	for _, st := range t.Status.Components {
		if st.Name == component {
			if !st.Ready {
				return component + "=" + st.Version + ":not-ready"
			}
			return component + "=" + st.Version
		}
	}
	return component + " not reported"
}

func getTenant(t *testing.T, c client.Client, name string) *tenancyv1alpha1.Tenant {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, tenant); err != nil {
		t.Fatal(err)
	}
	return tenant
}

// withContexts adds contexts of these names to the kubeconfig, each naming its current cluster,
// as a fleet's kubeconfig names one cluster per context.
func withContexts(t *testing.T, kubeconfig string, names ...string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		cfg.Contexts[name] = cfg.Contexts[cfg.CurrentContext]
	}
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
}

// deleteRollouts removes the named ComponentRollouts when the test ends.
func deleteRollouts(t *testing.T, c client.Client, names ...string) {
	t.Cleanup(func() {
		for _, n := range names {
			_ = c.Delete(context.Background(), &tenancyv1alpha1.ComponentRollout{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	})
}

// A dry run shows, per context, the waves the operator would plan and the tenants it would leave
// alone and why, by the operator's rules: an Archived tenant and a pinned one are not planned,
// since neither would ever run the version. It creates nothing and changes no tenant.
func TestADryRunPrintsThePlanOfEveryContextAndChangesNothing(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	followingTenants(t, c, "dry", []string{"dry-a", "dry-b"}, "web=1.0.0")
	followingTenants(t, c, "dry", []string{"dry-c"}, "web=1.1.0")
	createTenants(t, c, "dry", []string{"dry-d"}, "web=1.0.0")
	followingTenants(t, c, "dry", []string{"dry-e"}, "api=1.0.0")
	archived := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "dry-f", Labels: map[string]string{"group": "dry"}},
		Spec: tenancyv1alpha1.TenantSpec{Organization: "Dry F Inc.", Email: "ops@dry-f.example.com", State: tenancyv1alpha1.StateArchived,
			Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0", FollowRollouts: true}}},
	}
	if err := c.Create(context.Background(), archived); err != nil {
		t.Fatal(err)
	}
	before := map[string]*tenancyv1alpha1.Tenant{}
	for _, name := range []string{"dry-a", "dry-b", "dry-c", "dry-d", "dry-e", "dry-f"} {
		before[name] = getTenant(t, c, name)
	}
	withContexts(t, kubeconfig, "eu-1", "us-1")

	out, err := landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "1.1.0",
		"--selector", "group=dry", "--batch", "1", "--dry-run", "--context", "eu-1", "--context", "us-1")
	t.Logf("\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	plan := func(context string) string {
		return "context " + context + ": ComponentRollout web-1.1.0 would move web to 1.1.0: 3 tenants in 3 waves (dry run)\n" +
			"  wave 1/3: dry-a\n  wave 2/3: dry-b\n  wave 3/3: dry-c\n" +
			"  1 already run 1.1.0: done as soon as their wave starts\n" +
			"  skip dry-d: component web is pinned (it does not set followRollouts)\n" +
			"  skip dry-f: Archived\n" +
			"context " + context + ": nothing was changed\n"
	}
	if want := plan("eu-1") + plan("us-1"); out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "web-1.1.0"}, &tenancyv1alpha1.ComponentRollout{}); !apierrors.IsNotFound(err) {
		t.Errorf("the dry run created the ComponentRollout: %v", err)
	}
	for name, was := range before {
		now := getTenant(t, c, name)
		if now.Generation != was.Generation || !reflect.DeepEqual(now.Spec, was.Spec) {
			t.Errorf("%s changed: generation %d → %d, spec %+v → %+v", name, was.Generation, now.Generation, was.Spec, now.Spec)
		}
	}
}

// A rollout that stalls (here its version has no ComponentTemplate, so no wave starts) fails
// the command with the rollout's reason, and the contexts after it are not started.
func TestARolloutThatStallsStopsTheContextsAfterIt(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	names := []string{"stall-a", "stall-b"}
	followingTenants(t, c, "stall", names, "web=1.0.0")
	deleteRollouts(t, c, "web-9.9.9")
	withContexts(t, kubeconfig, "eu-1", "us-1")

	out, err := landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "9.9.9",
		"--selector", "group=stall", "--context", "eu-1", "--context", "us-1")
	t.Logf("\n%s", out)
	if want := "context eu-1: ComponentRollout web-9.9.9 stalled: TemplateNotFound: ComponentTemplate web-9.9.9 not found"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err=%v, want %q", err, want)
	}
	if want := "context eu-1: ComponentRollout web-9.9.9 created (web → 9.9.9)\ncontexts not started: us-1\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	for _, name := range names {
		if got := running(getTenant(t, c, name), "web"); got != "web=1.0.0" {
			t.Errorf("%s runs %s, want web=1.0.0", name, got)
		}
	}
}

// Rollouts of two components run side by side, and neither undoes the other: each moves only
// its own component, and neither writes the tenants' spec.
func TestConcurrentRolloutsOfTwoComponentsBothLandAndNeitherWritesATenant(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	names := []string{"pair-a", "pair-b", "pair-c"}
	followingTenants(t, c, "pair", names, "web=1.0.0", "api=1.0.0")
	deleteRollouts(t, c, "web-pair", "api-pair")
	generations := map[string]int64{}
	for _, name := range names {
		generations[name] = getTenant(t, c, name).Generation
	}

	var wg sync.WaitGroup
	outs, errs := make([]string, 2), make([]error, 2)
	for i, component := range []string{"web", "api"} {
		wg.Go(func() {
			outs[i], errs[i] = landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", component, "--version", "1.1.0",
				"--name", component+"-pair", "--selector", "group=pair", "--batch", "1")
		})
	}
	wg.Wait()
	for i := range outs {
		t.Logf("\n%s", outs[i])
		if errs[i] != nil {
			t.Errorf("rollout %d: %v", i, errs[i])
		}
	}
	for _, name := range names {
		tenant := waitReady(t, c, name, "web=1.1.0", "api=1.1.0")
		if tenant.Generation != generations[name] {
			t.Errorf("%s: generation %d → %d: the rollout wrote the tenant", name, generations[name], tenant.Generation)
		}
	}
}
