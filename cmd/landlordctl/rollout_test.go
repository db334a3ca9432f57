package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

// ---- The plan: pure functions over tenants as the API server returns them.

func pinned(name string, lbls map[string]string, pins ...string) tenancyv1alpha1.Tenant {
	t := tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	for _, p := range pins {
		c, v, _ := strings.Cut(p, "=")
		t.Spec.Components = append(t.Spec.Components, tenancyv1alpha1.Component{Name: c, Version: v})
	}
	return t
}

func rolloutOf(component, version string) *rolloutOptions {
	return &rolloutOptions{component: component, version: version}
}

func TestPlanTakesTheSelectedTenantsRunningTheComponentInNameOrder(t *testing.T) {
	trial := map[string]string{"plan": "trial"}
	all := []tenancyv1alpha1.Tenant{
		pinned("umbrella", trial, "web=1.0.0"),
		pinned("acme", trial, "web=1.0.0", "api=2.0.0"),
		pinned("globex", map[string]string{"plan": "enterprise"}, "web=1.0.0"),
		pinned("initech", trial, "api=2.0.0"),
		pinned("hooli", trial, "web=1.2.0"),
		pinned("cyberdyne", trial, "web=0.9.0"),
	}
	sel, _ := labels.Parse("plan=trial")
	p := planRollout(all, sel, nil, rolloutOf("web", "1.2.0"), batchSize{count: 2})

	if want := [][]string{{"acme", "cyberdyne"}, {"umbrella"}}; !reflect.DeepEqual(p.batches, want) {
		t.Errorf("batches = %v, want %v", p.batches, want)
	}
	want := []outcome{{"hooli", "already at 1.2.0"}, {"initech", "has no component web"}}
	if !reflect.DeepEqual(p.skipped, want) {
		t.Errorf("skipped = %v, want %v", p.skipped, want)
	}

	p = planRollout(all, labels.Everything(), nil, rolloutOf("web", "1.2.0"), batchSize{count: 10})
	if want := [][]string{{"acme", "cyberdyne", "globex", "umbrella"}}; !reflect.DeepEqual(p.batches, want) {
		t.Errorf("without a selector, batches = %v, want %v", p.batches, want)
	}
}

func TestPlanReportsNamedTenantsThatAreMissingOrOutsideTheSelector(t *testing.T) {
	all := []tenancyv1alpha1.Tenant{
		pinned("acme", map[string]string{"plan": "trial"}, "web=1.0.0"),
		pinned("globex", map[string]string{"plan": "enterprise"}, "web=1.0.0"),
		pinned("hooli", map[string]string{"plan": "trial"}, "web=1.0.0"),
	}
	sel, _ := labels.Parse("plan=trial")
	p := planRollout(all, sel, []string{"hooli", "globex", "nobody", "acme", "hooli"}, rolloutOf("web", "1.2.0"), batchSize{count: 5})

	if want := [][]string{{"acme", "hooli"}}; !reflect.DeepEqual(p.batches, want) {
		t.Errorf("batches = %v, want %v", p.batches, want)
	}
	want := []outcome{{"globex", "does not match --selector plan=trial"}, {"nobody", "not found"}}
	if !reflect.DeepEqual(p.skipped, want) {
		t.Errorf("skipped = %v, want %v", p.skipped, want)
	}
}

func TestPlanLeavesDeletedAndPurgedTenantsAlone(t *testing.T) {
	deleting := pinned("acme", nil, "web=1.0.0")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	purged := pinned("globex", nil, "web=1.0.0")
	purged.Spec.State = tenancyv1alpha1.StatePurged
	p := planRollout([]tenancyv1alpha1.Tenant{deleting, purged}, labels.Everything(), nil, rolloutOf("web", "1.2.0"), batchSize{count: 1})
	if want := []outcome{{"acme", "being deleted"}, {"globex", "Purged"}}; len(p.batches) != 0 || !reflect.DeepEqual(p.skipped, want) {
		t.Errorf("plan = %+v", p)
	}
}

// A suspended tenant would take the version and never report it: the rollout would wait its
// whole timeout. It is refused up front, --force or not, unless there is nothing to change.
func TestASuspendedTenantIsRefusedUntilItIsResumed(t *testing.T) {
	suspended := func(pins ...string) *tenancyv1alpha1.Tenant {
		tenant := pinned("acme", nil, pins...)
		tenant.Spec.Suspend = true
		return &tenant
	}
	refusal := verdict{actionRefuse, "suspended (landlordctl resume acme first)"}
	for _, tc := range []struct {
		name   string
		tenant *tenancyv1alpha1.Tenant
		force  bool
		want   verdict
	}{
		{"a suspended tenant is refused", suspended("web=1.0.0"), false, refusal},
		{"--force does not take a suspended tenant over", suspended("web=1.0.0"), true, refusal},
		{"a suspended tenant already at the version is skipped", suspended("web=1.1.0"), false, verdict{actionSkip, "already at 1.1.0"}},
		{"a suspended tenant without the component is skipped", suspended("api=2.0.0"), false, verdict{actionSkip, "has no component web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.tenant, "web", "1.1.0", tc.force); got != tc.want {
				t.Errorf("classify = %+v, want %+v", got, tc.want)
			}
		})
	}

	t.Run("the plan lists it as refused and changes the others", func(t *testing.T) {
		all := []tenancyv1alpha1.Tenant{*suspended("web=1.0.0"), pinned("globex", nil, "web=1.0.0")}
		p := planRollout(all, labels.Everything(), nil, rolloutOf("web", "1.1.0"), batchSize{count: 10})
		if want := [][]string{{"globex"}}; !reflect.DeepEqual(p.batches, want) {
			t.Errorf("batches = %v, want %v", p.batches, want)
		}
		if want := []outcome{{"acme", refusal.reason}}; !reflect.DeepEqual(p.refused, want) {
			t.Errorf("refused = %v, want %v", p.refused, want)
		}
	})
}

func TestBatchSizesAreCountsOrPercentagesOfTheTenantsToChangeRoundedUp(t *testing.T) {
	for _, tc := range []struct {
		flag  string
		total int
		want  int
	}{
		{"1", 7, 1},
		{"3", 7, 3},
		{"50", 7, 50},
		{"25%", 8, 2},
		{"25%", 9, 3},
		{"10%", 3, 1},
		{"1%", 1000, 10},
		{"100%", 7, 7},
	} {
		b, err := parseBatch(tc.flag)
		if err != nil {
			t.Errorf("--batch %s: %v", tc.flag, err)
			continue
		}
		if got := b.of(tc.total); got != tc.want {
			t.Errorf("--batch %s of %d tenants = %d, want %d", tc.flag, tc.total, got, tc.want)
		}
	}

	all := make([]tenancyv1alpha1.Tenant, 5)
	for i := range all {
		all[i] = pinned(fmt.Sprintf("t%d", i), nil, "web=1.0.0")
	}
	all = append(all, pinned("z-current", nil, "web=2.0.0"))
	b, _ := parseBatch("40%")
	p := planRollout(all, labels.Everything(), nil, rolloutOf("web", "2.0.0"), b)
	if want := [][]string{{"t0", "t1"}, {"t2", "t3"}, {"t4"}}; !reflect.DeepEqual(p.batches, want) {
		t.Errorf("40%% of the 5 tenants needing the change: batches = %v, want %v", p.batches, want)
	}
}

func TestBatchSizesThatCannotBeRolledOutAreRefused(t *testing.T) {
	for _, flag := range []string{"0", "-1", "0%", "101%", "x", "%", "2.5", "10 %"} {
		if _, err := parseBatch(flag); err == nil {
			t.Errorf("--batch %q was accepted", flag)
		}
	}
}

// managed is a managedFields entry whose fields are written as the API server writes them.
func managed(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: op, APIVersion: "tenancy.landlord.dev/v1alpha1", Subresource: subresource,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)},
	}
}

const (
	webVersion  = `{"f:spec":{"f:components":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:version":{}}}}}`
	apiVersion  = `{"f:spec":{"f:components":{"k:{\"name\":\"api\"}":{".":{},"f:name":{},"f:version":{}}}}}`
	webValues   = `{"f:spec":{"f:components":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:values":{}}}}}`
	gitopsSpec  = `{"f:metadata":{"f:labels":{"f:plan":{}}},"f:spec":{"f:organization":{},"f:components":{"k:{\"name\":\"api\"}":{".":{},"f:name":{},"f:version":{}},"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:version":{}}}}}`
	statusOfWeb = `{"f:status":{"f:components":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:version":{}}}}}`
)

func TestAVersionOwnedByAnotherFieldManagerIsRefusedUnlessForced(t *testing.T) {
	apply, update := metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	refusal := "version of component web is managed by %s; change it in Git, or use --force to take it over"
	for _, tc := range []struct {
		name   string
		fields []metav1.ManagedFieldsEntry
		force  bool
		want   verdict
	}{
		{"nobody owns it", nil, false, verdict{actionChange, ""}},
		{"an earlier rollout of the component owns it", []metav1.ManagedFieldsEntry{
			managed("landlordctl-rollout-web", apply, "", webVersion),
		}, false, verdict{actionChange, ""}},
		{"a GitOps controller applies it", []metav1.ManagedFieldsEntry{
			managed("kustomize-controller", apply, "", gitopsSpec),
		}, false, verdict{actionRefuse, fmt.Sprintf(refusal, "kustomize-controller")}},
		{"a GitOps controller shares it with the rollout", []metav1.ManagedFieldsEntry{
			managed("landlordctl-rollout-web", apply, "", webVersion),
			managed("kustomize-controller", apply, "", webVersion),
		}, false, verdict{actionRefuse, fmt.Sprintf(refusal, "kustomize-controller")}},
		{"a person edited it", []metav1.ManagedFieldsEntry{
			managed("kubectl-edit", update, "", webVersion),
			managed("argocd-controller", apply, "", webVersion),
		}, false, verdict{actionRefuse, fmt.Sprintf(refusal, "argocd-controller, kubectl-edit")}},
		{"another component's rollout owns only its own version", []metav1.ManagedFieldsEntry{
			managed("landlordctl-rollout-api", apply, "", apiVersion),
		}, false, verdict{actionChange, ""}},
		{"Git owns the component's values but not its version", []metav1.ManagedFieldsEntry{
			managed("kustomize-controller", apply, "", webValues),
		}, false, verdict{actionChange, ""}},
		{"the operator owns the reported version in status", []metav1.ManagedFieldsEntry{
			managed("landlord", update, "status", statusOfWeb),
		}, false, verdict{actionChange, ""}},
		{"the key is spelled with spaces", []metav1.ManagedFieldsEntry{
			managed("flux", apply, "", `{"f:spec":{"f:components":{"k:{ \"name\": \"web\" }":{"f:version":{}}}}}`),
		}, false, verdict{actionRefuse, fmt.Sprintf(refusal, "flux")}},
		{"forced over a GitOps controller", []metav1.ManagedFieldsEntry{
			managed("kustomize-controller", apply, "", gitopsSpec),
		}, true, verdict{actionChange, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := pinned("acme", nil, "web=1.0.0", "api=2.0.0")
			tenant.ManagedFields = tc.fields
			if got := classify(&tenant, "web", "1.1.0", tc.force); got != tc.want {
				t.Errorf("classify = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A GitOps controller may take the version between the rollout's read and its apply: the API
// server refuses the apply, and the rollout names the managers holding the version, read from
// the tenant's managed fields, rather than failing with the conflict.
func TestAnApplyConflictNamesTheManagersHoldingTheVersion(t *testing.T) {
	c, _ := sharedCluster(t)
	createTenants(t, c, "raced", []string{"raced-a"}, "web=1.0.0")
	// The race, injected: every apply of the rollout is preceded by Flux applying the version
	// from Git (the same value: Flux then shares the field, and the apply conflicts with it).
	ww, err := client.NewWithWatch(fleet.env.Admin, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	raced := interceptor.NewClient(ww, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			pinVersion(t, c, obj.GetName(), "kustomize-controller", "web", "1.0.0", false)
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	r := &rollout{o: &rolloutOptions{component: "web", version: "1.1.0"}, out: io.Discard}
	_, v, err := r.apply(context.Background(), raced, "raced-a")
	if err != nil {
		t.Fatal(err)
	}
	want := verdict{actionRefuse, managedByMessage("web", []string{"kustomize-controller"})}
	if v != want {
		t.Errorf("verdict = %+v, want %+v", v, want)
	}
	got := &tenancyv1alpha1.Tenant{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "raced-a"}, got); err != nil {
		t.Fatal(err)
	}
	if version := got.Spec.Components[0].Version; version != "1.0.0" {
		t.Errorf("version %s, want Git's 1.0.0 left in place", version)
	}
}

func TestATenantIsDoneOnlyWhenItsOperatorReportsTheVersionReadyForTheAppliedGeneration(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " message", ObservedGeneration: gen}
	}
	// As the API server returns it after the rollout's apply: at generation 4 at least.
	status := func(observed int64, version string, ready bool, conds ...metav1.Condition) *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Generation: max(observed, 4)}, Status: tenancyv1alpha1.TenantStatus{
			ObservedGeneration: observed,
			Components:         []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: version, Ready: ready}},
			Conditions:         conds,
		}}
	}
	readyTrue := cond("Ready", metav1.ConditionTrue, "Succeeded", 4)
	for _, tc := range []struct {
		name   string
		tenant *tenancyv1alpha1.Tenant
		want   progressState
	}{
		{"ready at the applied generation", status(4, "1.1.0", true, readyTrue), progressReady},
		{"ready at a later generation", status(5, "1.1.0", true, cond("Ready", metav1.ConditionTrue, "Succeeded", 5)), progressReady},
		{"the applied generation is not observed yet", status(3, "1.0.0", true, cond("Ready", metav1.ConditionTrue, "Succeeded", 3)), progressWaiting},
		{"the old version still reported", status(4, "1.0.0", true, readyTrue), progressWaiting},
		{"the new version not rolled out", status(4, "1.1.0", false, readyTrue), progressWaiting},
		{"the tenant not Ready", status(4, "1.1.0", true, cond("Ready", metav1.ConditionFalse, "DatabaseUnavailable", 4)), progressWaiting},
		{"no conditions yet", status(4, "1.1.0", true), progressWaiting},
		{"stalled at the applied generation", status(4, "1.0.0", true,
			cond("Ready", metav1.ConditionFalse, "TemplateNotFound", 4), cond("Stalled", metav1.ConditionTrue, "TemplateNotFound", 4)), progressStalled},
		{"stalled before the apply", status(3, "1.0.0", true,
			cond("Ready", metav1.ConditionFalse, "RenderFailed", 3), cond("Stalled", metav1.ConditionTrue, "RenderFailed", 3)), progressWaiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, msg := progress(tc.tenant, "web", "1.1.0", 4); got != tc.want {
				t.Errorf("progress = %v (%s), want %v", got, msg, tc.want)
			}
		})
	}
	_, msg := progress(status(4, "1.0.0", true, cond("Stalled", metav1.ConditionTrue, "TemplateNotFound", 4)), "web", "1.1.0", 4)
	if !strings.Contains(msg, "Stalled=True (TemplateNotFound): TemplateNotFound message") {
		t.Errorf("stalled message = %q", msg)
	}
}

func TestABatchNotReadyInTimeFailsWithTheReadyMessage(t *testing.T) {
	rolling := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", Generation: 4},
		Status: tenancyv1alpha1.TenantStatus{
			ObservedGeneration: 3,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RollingOut",
				Message: "web: Deployment web has 1/3 updated replicas", ObservedGeneration: 4}},
		},
	}
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(rolling).Build()
	var out bytes.Buffer
	r := &rollout{o: &rolloutOptions{component: "web", version: "1.1.0", timeout: 300 * time.Millisecond}, out: &out}
	rep := &report{}
	r.wait(context.Background(), c, "batch 1/1", map[string]int64{"acme": 4, "gone": 2}, rep)

	want := []outcome{
		{"acme", "not ready after 300ms: generation 4 not observed yet (at 3); Ready=False (RollingOut): web: Deployment web has 1/3 updated replicas"},
		{"gone", "tenant was deleted"},
	}
	sortOutcomes(rep.failed)
	if !reflect.DeepEqual(rep.failed, want) || r.failed != 2 {
		t.Errorf("failed = %+v (%d)\n%s", rep.failed, r.failed, out.String())
	}
}

func TestBadRolloutFlagsAreRefusedBeforeAnyClusterIsRead(t *testing.T) {
	for args, want := range map[string]string{
		"rollout --version 1.0.0":                                     `required flag(s) "component"`,
		"rollout --component web --version 1.0.0 --batch 0":           "--batch",
		"rollout --component Web --version 1.0.0":                     "--component",
		"rollout --component web --version v1.0.0+dirty":              "--version",
		"rollout --component web --version 1.0.0 --selector ==":       "--selector",
		"rollout --component web --version 1.0.0 --max-failures -1":   "--max-failures",
		"rollout --component web --version 1.0.0 --timeout 0s":        "--timeout",
		"rollout --component web --version 1.0.0 --kubeconfig /none":  "loading kubeconfig",
		"rollout --component web --version 1.0.0 --context elsewhere": "no context",
	} {
		args := strings.Fields(args)
		if !slices.Contains(args, "--kubeconfig") {
			args = append(args, "--kubeconfig", emptyKubeconfig(t))
		}
		_, err := landlordctlRollout(t, args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err=%v, want %q", strings.Join(args, " "), err, want)
		}
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

// fleet is one control plane and operator shared by the rollout tests, started by the first test
// that needs it so that the planner's tests run without one.
var fleet struct {
	once sync.Once
	err  error
	env  *testenv.Env
	op   *testenv.Operator
	dir  string
}

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
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
// versions ("web=1.0.0"). Each version is pinned with server-side apply by its component's
// rollout manager, as in a fleet that landlordctl rolled out to before: had the creating client
// pinned them, it would own them and every rollout would need --force.
func createTenants(t *testing.T, c client.Client, group string, names []string, pins ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		tenant := &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"group": group}},
			Spec:       tenancyv1alpha1.TenantSpec{Organization: name + " Inc.", Email: "ops@" + name + ".example.com"},
		}
		if err := c.Create(ctx, tenant); err != nil {
			t.Fatal(err)
		}
		for _, p := range pins {
			component, version, _ := strings.Cut(p, "=")
			pinVersion(t, c, name, rolloutFieldManager(component), component, version, false)
		}
	}
	for _, name := range names {
		waitReady(t, c, name, pins...)
	}
}

func pinVersion(t *testing.T, c client.Client, tenant, manager, component, version string, force bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"apiVersion":"tenancy.landlord.dev/v1alpha1","kind":"Tenant","metadata":{"name":%q},"spec":{"components":[{"name":%q,"version":%q}]}}`,
		tenant, component, version)
	opts := []client.PatchOption{client.FieldOwner(manager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	obj := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tenant}}
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.ApplyPatchType, []byte(patch)), opts...); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the tenant is Ready with each pinned component ready at its version.
func waitReady(t *testing.T, c client.Client, name string, pins ...string) *tenancyv1alpha1.Tenant {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{}
	waitFor(t, 30*time.Second, "tenant "+name+" Ready", func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, tenant); err != nil {
			return err
		}
		for _, p := range pins {
			component, version, _ := strings.Cut(p, "=")
			if state, msg := progress(tenant, component, version, tenant.Generation); state != progressReady {
				return errors.New(msg)
			}
		}
		return nil
	})
	return tenant
}

func getTenant(t *testing.T, c client.Client, name string) *tenancyv1alpha1.Tenant {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, tenant); err != nil {
		t.Fatal(err)
	}
	return tenant
}

func specVersion(t *tenancyv1alpha1.Tenant, component string) string {
	for _, c := range t.Spec.Components {
		if c.Name == component {
			return c.Version
		}
	}
	return ""
}

var eventLine = regexp.MustCompile(`^batch (\d+)/(\d+): (\S+) → \S+ \.\.\. (\w+)`)

func TestARolloutInBatchesOfTwoMovesFiveTenantsOneReadyBatchAtATime(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	names := []string{"batch-a", "batch-b", "batch-c", "batch-d", "batch-e"}
	createTenants(t, c, "batches", names, "web=1.0.0")

	start := time.Now()
	out, err := landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "1.1.0",
		"--selector", "group=batches", "--batch", "2", "--timeout", "60s")
	t.Logf("rollout took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatal(err)
	}

	// Both tenants of a batch are seen ready before any tenant of the next one is applied.
	readyIn := map[string]int{}
	readyCount := map[int]int{}
	var events []string
	for _, line := range strings.Split(out, "\n") {
		m := eventLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		batch, _ := strconv.Atoi(m[1])
		events = append(events, m[1]+" "+m[3]+" "+m[4])
		switch m[4] {
		case "applied":
			if batch > 1 && readyCount[batch-1] != 2 {
				t.Errorf("%s was applied in batch %d before batch %d was ready", m[3], batch, batch-1)
			}
		case "ready":
			readyIn[m[3]] = batch
			readyCount[batch]++
		default:
			t.Errorf("unexpected event %q", line)
		}
	}
	want := map[string]int{"batch-a": 1, "batch-b": 1, "batch-c": 2, "batch-d": 2, "batch-e": 3}
	if !reflect.DeepEqual(readyIn, want) {
		t.Errorf("ready in batches %v, want %v (events %v)", readyIn, want, events)
	}
	if !strings.Contains(out, "rollout web → 1.1.0: 5 ready, 0 failed, 0 refused, 0 not started, 0 skipped") {
		t.Errorf("no summary line")
	}
	for _, want := range []string{
		"batch 1/3 done in context envtest: 2 of 5 tenants finished (2 ready, 0 failed)\n",
		"batch 2/3 done in context envtest: 4 of 5 tenants finished (4 ready, 0 failed)\n",
		"batch 3/3 done in context envtest: 5 of 5 tenants finished (5 ready, 0 failed)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no progress line %q", want)
		}
	}
	for _, name := range names {
		tenant := waitReady(t, c, name, "web=1.1.0")
		if v := specVersion(tenant, "web"); v != "1.1.0" {
			t.Errorf("%s: spec version %s", name, v)
		}
	}

	out, err = landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "1.1.0", "--selector", "group=batches")
	if err != nil || strings.Count(out, "already at 1.1.0") != 5 || !strings.Contains(out, "0 ready, 0 failed, 0 refused, 0 not started, 5 skipped") {
		t.Errorf("rolling out again: err=%v\n%s", err, out)
	}
}

func TestADryRunPrintsThePlanOfEveryContextAndChangesNothing(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	createTenants(t, c, "dry", []string{"dry-a", "dry-b"}, "web=1.0.0")
	createTenants(t, c, "dry", []string{"dry-c"}, "web=1.1.0")
	createTenants(t, c, "dry", []string{"dry-d"}, "api=1.0.0")
	before := map[string]*tenancyv1alpha1.Tenant{}
	for _, name := range []string{"dry-a", "dry-b", "dry-c", "dry-d"} {
		before[name] = getTenant(t, c, name)
	}

	// Two contexts naming the same control plane: the plan is printed once per context.
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"eu-1", "us-1"} {
		cfg.Contexts[name] = cfg.Contexts["envtest"]
	}
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}

	out, err := landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "1.1.0",
		"--selector", "group=dry", "--batch", "1", "--dry-run", "--context", "eu-1", "--context", "us-1")
	if err != nil {
		t.Fatalf("out=%s err=%v", out, err)
	}
	for _, want := range []string{
		"context eu-1: web → 1.1.0 for 2 tenants in 2 batches (dry run)\n  batch 1/2: dry-a\n  batch 2/2: dry-b\n  skip dry-c: already at 1.1.0\n  skip dry-d: has no component web\n",
		"context us-1: web → 1.1.0 for 2 tenants in 2 batches (dry run)",
		"dry run: web → 1.1.0 would change 4 tenants (0 refused, 4 skipped); nothing was changed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The same plan for scripts: the outcome on stdout as JSON, the progress on stderr.
	var stdout, stderr bytes.Buffer
	cmd := newRootCommand(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "1.1.0",
		"--selector", "group=dry", "--batch", "1", "--dry-run", "--context", "eu-1", "--context", "us-1", "-o", "json"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var summary rolloutSummary
	if err := json.Unmarshal(stdout.Bytes(), &summary); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	wantContext := func(name string) contextSummary {
		return contextSummary{Name: name, Batches: [][]string{{"dry-a"}, {"dry-b"}},
			Skipped: []tenantOutcome{{"dry-c", "already at 1.1.0"}, {"dry-d", "has no component web"}}}
	}
	want := rolloutSummary{Component: "web", Version: "1.1.0", DryRun: true,
		Contexts: []contextSummary{wantContext("eu-1"), wantContext("us-1")},
		Totals:   summaryTotals{NotStarted: 4, Skipped: 4}}
	if !reflect.DeepEqual(summary, want) || !strings.Contains(stderr.String(), "context eu-1: web → 1.1.0 for 2 tenants in 2 batches (dry run)") {
		t.Errorf("summary = %+v\nwant %+v\nstderr:\n%s", summary, want, stderr.String())
	}

	for name, was := range before {
		now := getTenant(t, c, name)
		if now.Generation != was.Generation || !reflect.DeepEqual(now.Spec, was.Spec) {
			t.Errorf("%s changed: generation %d → %d, spec %+v → %+v", name, was.Generation, now.Generation, was.Spec, now.Spec)
		}
	}
}

func TestAVersionWithoutATemplateStallsTheFirstBatchAndHaltsTheRollout(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	names := []string{"stall-a", "stall-b", "stall-c", "stall-d"}
	createTenants(t, c, "stall", names, "web=1.0.0")
	untouched := map[string]int64{"stall-c": getTenant(t, c, "stall-c").Generation, "stall-d": getTenant(t, c, "stall-d").Generation}

	out, err := landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "9.9.9",
		"--selector", "group=stall", "--batch", "2", "--timeout", "60s")
	t.Logf("\n%s", out)
	if err == nil || !strings.Contains(err.Error(), "halted") {
		t.Fatalf("err=%v, want the rollout halted", err)
	}
	for _, want := range []string{
		"batch 1/2: stall-a → 9.9.9 ... failed: Stalled=True (TemplateNotFound)",
		"batch 1/2: stall-b → 9.9.9 ... failed: Stalled=True (TemplateNotFound)",
		"  succeeded: none\n  failed: 2\n",
		"  not started: stall-c, stall-d\n",
		"rollout web → 9.9.9: 0 ready, 2 failed, 0 refused, 2 not started, 0 skipped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "batch 2/2: stall-c →") || strings.Contains(out, "batch 2/2: stall-d →") {
		t.Errorf("the second batch was started")
	}
	for name, gen := range untouched {
		tenant := getTenant(t, c, name)
		if tenant.Generation != gen || specVersion(tenant, "web") != "1.0.0" {
			t.Errorf("%s was touched: generation %d → %d, web %s", name, gen, tenant.Generation, specVersion(tenant, "web"))
		}
	}
	stalled := meta.FindStatusCondition(getTenant(t, c, "stall-a").Status.Conditions, tenancyv1alpha1.StalledCondition)
	if stalled == nil || stalled.Reason != tenancyv1alpha1.ReasonTemplateNotFound {
		t.Errorf("stall-a Stalled = %+v", stalled)
	}
}

func TestConcurrentRolloutsOfTwoComponentsBothLandAndNeitherRevertsTheOther(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	names := []string{"pair-a", "pair-b", "pair-c"}
	createTenants(t, c, "pair", names, "web=1.0.0", "api=1.0.0")

	var wg sync.WaitGroup
	outs, errs := make([]string, 2), make([]error, 2)
	for i, component := range []string{"web", "api"} {
		wg.Go(func() {
			outs[i], errs[i] = landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", component, "--version", "1.1.0",
				"--selector", "group=pair", "--batch", "1", "--timeout", "60s")
		})
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil {
			t.Errorf("rollout %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	for _, name := range names {
		tenant := waitReady(t, c, name, "web=1.1.0", "api=1.1.0")
		if web, api := specVersion(tenant, "web"), specVersion(tenant, "api"); web != "1.1.0" || api != "1.1.0" {
			t.Errorf("%s: web %s, api %s", name, web, api)
		}
		for _, component := range []string{"web", "api"} {
			if owners := versionOwners(tenant, component); len(owners) > 0 {
				t.Errorf("%s: %s version also owned by %v", name, component, owners)
			}
		}
	}
}

func TestAVersionManagedByGitOpsIsRefusedUntilForced(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	createTenants(t, c, "gitops", []string{"gitops-b"}, "web=1.0.0")
	// The tenant as Flux applies it from Git, version included.
	manifest := map[string]any{
		"apiVersion": "tenancy.landlord.dev/v1alpha1", "kind": "Tenant",
		"metadata": map[string]any{"name": "gitops-a", "labels": map[string]string{"group": "gitops"}},
		"spec": map[string]any{
			"organization": "GitOps Inc.",
			"components":   []map[string]string{{"name": "web", "version": "1.0.0"}},
		},
	}
	data, _ := json.Marshal(manifest)
	obj := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "gitops-a"}}
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.ApplyPatchType, data), client.FieldOwner("kustomize-controller")); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "gitops-a", "web=1.0.0")
	refusal := "version of component web is managed by kustomize-controller; change it in Git, or use --force to take it over"

	out, err := landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "1.1.0",
		"--selector", "group=gitops", "--timeout", "60s")
	if err == nil || !strings.Contains(out, "refuse gitops-a: "+refusal) || !strings.Contains(out, "batch 1/1: gitops-b → 1.1.0 ... ready") ||
		!strings.Contains(out, "1 ready, 0 failed, 1 refused") {
		t.Fatalf("without --force: err=%v\n%s", err, out)
	}
	if v := specVersion(getTenant(t, c, "gitops-a"), "web"); v != "1.0.0" {
		t.Errorf("gitops-a was changed to %s without --force", v)
	}

	out, err = landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "1.1.0",
		"--selector", "group=gitops", "--timeout", "60s", "--force")
	if err != nil || !strings.Contains(out, "batch 1/1: gitops-a → 1.1.0 ... ready") {
		t.Fatalf("with --force: err=%v\n%s", err, out)
	}
	tenant := waitReady(t, c, "gitops-a", "web=1.1.0")
	if owners := versionOwners(tenant, "web"); len(owners) > 0 {
		t.Errorf("after --force the version is still owned by %v", owners)
	}
	if tenant.Spec.Organization != "GitOps Inc." {
		t.Errorf("the rest of the spec changed: %+v", tenant.Spec)
	}
}

// A suspended tenant in the selection is refused and left as it is, and the rollout moves the
// others and ends at once, rather than wait its timeout for a version that would never be
// reported.
func TestARolloutRefusesASuspendedTenantAndMovesTheOthers(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	createTenants(t, c, "paused", []string{"paused-a", "paused-b"}, "web=1.0.0")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	if err := c.Patch(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "paused-a"}}, patch); err != nil {
		t.Fatal(err)
	}

	out, err := landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "1.1.0",
		"--selector", "group=paused", "--timeout", "60s")
	if err == nil || !strings.Contains(out, "refuse paused-a: suspended (landlordctl resume paused-a first)") ||
		!strings.Contains(out, "batch 1/1: paused-b → 1.1.0 ... ready") || !strings.Contains(out, "1 ready, 0 failed, 1 refused") {
		t.Fatalf("err=%v\n%s", err, out)
	}
	if v := specVersion(getTenant(t, c, "paused-a"), "web"); v != "1.0.0" {
		t.Errorf("the suspended tenant was changed to %s", v)
	}
}
