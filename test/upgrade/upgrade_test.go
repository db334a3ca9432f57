package upgrade_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	sigsyaml "sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/hack/kustomize/build"
)

// TestUpgradingWithTheReleaseManifest installs the previous release with its installer
// (config/default, applied server-side as install.yaml is), runs a fleet on it, and upgrades to
// this checkout with `kubectl apply --server-side -f install.yaml`.
func TestUpgradingWithTheReleaseManifest(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "manifest")
	// The upgrade takes the fields of the admission policies the running operator keeps, as
	// docs/upgrading.md says: an installer and the operator both own them, and the new
	// release's values differ from those the old operator applied.
	install := func(t *testing.T, r release, flags ...string) {
		t.Helper()
		path := filepath.Join(c.dir, filepath.Base(r.binary)+"-install.yaml")
		out, err := build.Dir(filepath.Join(r.tree, "config", "default"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		c.kubectl(t, append([]string{"apply", "--server-side", "-f", path}, flags...)...)
		c.kubectl(t, "wait", "--for=condition=Established", "crd", "--all", "--timeout=1m")
	}
	install(t, previous)
	upgrade(t, c, func(t *testing.T) { install(t, current, "--force-conflicts") })
}

// TestUpgradingWithHelm installs the previous release's chart, runs a fleet on it, and upgrades
// to this checkout's chart with `helm upgrade`, handing the CRDs the old chart created from its
// crds/ directory to the release as docs/upgrading.md says. Then it uninstalls and installs the
// chart again: what Landlord keeps outlives the uninstall, and nothing a tenant did meanwhile
// crosses tenants.
func TestUpgradingWithHelm(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "helm")
	c.kubectl(t, "create", "namespace", "landlord-system")
	c.kubectl(t, "label", "namespace", "landlord-system", "pod-security.kubernetes.io/enforce=restricted")
	c.helm(t, "install", "landlord", filepath.Join(previous.tree, "charts", "landlord"), "-n", "landlord-system", "--wait=false")
	c.kubectl(t, "wait", "--for=condition=Established", "crd", "--all", "--timeout=1m")
	chart := filepath.Join(current.tree, "charts", "landlord")
	op := upgrade(t, c, func(t *testing.T) {
		crds := strings.Fields(c.kubectl(t, "get", "crd", "-o", "name"))
		c.kubectl(t, append(append([]string{"label"}, crds...), "app.kubernetes.io/managed-by=Helm", "--overwrite")...)
		c.kubectl(t, append(append([]string{"annotate"}, crds...), "meta.helm.sh/release-name=landlord", "meta.helm.sh/release-namespace=landlord-system", "--overwrite")...)
		c.helm(t, "upgrade", "landlord", chart, "-n", "landlord-system", "--wait=false")
		c.kubectl(t, "wait", "--for=condition=Established", "crd", "--all", "--timeout=1m")
	})
	if t.Failed() {
		return
	}

	before := c.credentials(t)
	tenants := len(c.tenants(t))
	// What outlives an uninstall: the isolation policies and the roles every tenant's
	// RoleBindings name. The operator's own roles go with it.
	const kept = "validatingadmissionpolicies,validatingadmissionpolicybindings,mutatingadmissionpolicies,mutatingadmissionpolicybindings,clusterroles"
	policies := keep(c.kubectl(t, "get", kept, "-o", "name"), "landlord-")
	if !strings.Contains(policies, "landlord-network-policy-peers") || !strings.Contains(policies, "clusterrole.rbac.authorization.k8s.io/landlord-tenant-admin") {
		t.Fatalf("the policies and roles to keep are not there before the uninstall:\n%s", policies)
	}
	t.Run("helm uninstall stops the operator and keeps the CRDs, the tenants, their data, the tenant roles and the isolation policies", func(t *testing.T) {
		c.helm(t, "uninstall", "landlord", "-n", "landlord-system", "--wait")
		op.stop(t)
		var lost []string
		got := keep(c.kubectl(t, "get", kept, "-o", "name"), "landlord-")
		for _, p := range strings.Split(policies, "\n") {
			if !strings.Contains(got, p) && (strings.Contains(p, "admissionpolic") || strings.Contains(p, "/landlord-tenant-")) {
				lost = append(lost, p)
			}
		}
		if len(lost) > 0 {
			t.Errorf("gone with the uninstall:\n%s", strings.Join(lost, "\n"))
		}
		if n := len(c.tenants(t)); n != tenants {
			t.Errorf("%d tenants after the uninstall, want the %d there were", n, tenants)
		}
		c.expectCredentialsKept(t, before)
	})
	t.Run("meanwhile a tenant's admin cannot open a path to another tenant's namespace", func(t *testing.T) {
		_, err := c.kubectlIn(`apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: reach-globex, namespace: tenant-acme}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress:
    - to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: tenant-globex}}}]
`, "apply", "--as=alice@acme.example", "-f", "-")
		if err == nil || !strings.Contains(err.Error(), "landlord-network-policy-peers") {
			t.Errorf("a NetworkPolicy into tenant-globex, written by acme's admin while no operator runs: %v; want it refused by landlord-network-policy-peers", err)
		}
	})
	t.Run("helm install of the same chart takes the fleet back without a write to any tenant", func(t *testing.T) {
		// The kept policies and roles are labelled as the operator's, not Helm's: the chart
		// takes them over as docs/install.md says.
		c.helm(t, "install", "landlord", chart, "-n", "landlord-system", "--wait=false", "--take-ownership")
		from := time.Now()
		c.startOperator(t, current)
		c.waitAllReady(t)
		writes := c.settledWrites(t, from)
		c.expectNothingPending(t)
		t.Logf("the operator's writes after the install:\n%s", joinWrites(writes))
		// Helm labels what --take-ownership adopts as its own, which takes the policies out of
		// the operator's cache: it puts its label back, one write each, as docs/install.md says.
		// Nothing else is written but the leader election's event.
		policies := map[string]int{}
		for _, w := range writes {
			switch {
			case strings.Contains(w.key, "admissionpolic"):
				if policies[w.key+" "+w.name]++; policies[w.key+" "+w.name] > 1 {
					t.Errorf("written more than once after the install: %s", w)
				}
			case w.key == "POST events" && w.namespace == "landlord-system":
			default:
				t.Errorf("a write after the install: %s", w)
			}
		}
		c.expectCredentialsKept(t, before)
		if v := c.kubectl(t, "get", "events", "-A", "--field-selector=reason=PolicyViolation", "-o", "name"); v != "" {
			t.Errorf("the policy audit found something a tenant did while no operator ran: %s", v)
		}
	})
}

// upgrade runs the previous release's operator, creates the fleet, runs installNew and replaces
// the operator by this checkout's, as a Deployment's rolling update does; and checks what the
// upgrade did to the fleet. It returns the new operator.
func upgrade(t *testing.T, c *cluster, installNew func(t *testing.T)) *operator {
	t.Helper()
	old := c.startOperator(t, previous)
	before := c.createFleet(t, previous)
	t.Logf("the fleet runs %d databases", len(before))
	ready := c.watchReady(t)

	installNew(t)
	old.stop(t)
	from := time.Now()
	op := c.startOperator(t, current)
	c.waitAllReady(t)
	writes := c.settledWrites(t, from)
	c.expectNothingPending(t)
	ready.stop()

	t.Run("the CRDs are this checkout's", func(t *testing.T) {
		c.expectCRDsOf(t, current)
	})
	t.Run("no tenant leaves Ready", func(t *testing.T) {
		if len(ready.left) > 0 {
			t.Errorf("tenants that were not Ready during the upgrade:\n%s", strings.Join(ready.left, "\n"))
		}
		t.Logf("%d states of tenants judged; the API server ended the watch %d times", ready.seen, ready.relists)
	})
	t.Run("no database password changes and every login still works", func(t *testing.T) {
		c.expectCredentialsKept(t, before)
	})
	t.Run("the new operator's writes are the migration docs/upgrading.md announces", func(t *testing.T) {
		expectMigration(t, c, writes)
	})
	t.Run("no DriftRepaired event is raised", func(t *testing.T) {
		events := c.eventsSince(t, from)
		t.Logf("the new operator's events:\n%s", strings.Join(events, "\n"))
		for _, e := range events {
			if strings.HasPrefix(e, "DriftRepaired ") {
				t.Errorf("a repair after the upgrade: %s", e)
			}
		}
	})
	t.Run("a tenant suspended during the upgrade is converged when it is resumed, and a new tenant becomes Ready", func(t *testing.T) {
		c.kubectl(t, "patch", "tenant", "stark", "--type=json", "-p", `[{"op":"remove","path":"/spec/suspend"}]`)
		c.apply(t, `apiVersion: tenancy.landlord.dev/v1alpha1
kind: Tenant
metadata: {name: wayne}
spec:
  databases:
    postgres: [{name: app}]
  components: [{name: web, version: 1.1.0}]
`)
		c.waitAllReady(t)
		c.expectCredentialsKept(t, before)
	})
	t.Run("the first usage sample writes each tenant's status once, and the next one nothing", func(t *testing.T) {
		op = c.restartSamplingUsage(t, op)
	})
	return op
}

// restartSamplingUsage restarts the operator with a usage interval of a minute, and checks what
// docs/upgrading.md says of the first sample after an upgrade: nothing is written before it, it
// writes each tenant's status once (the release before had no status.usage), and the next
// sample writes nothing, no tenant's usage having changed.
func (c *cluster) restartSamplingUsage(t *testing.T, old *operator) *operator {
	t.Helper()
	const interval = time.Minute
	// What the running operator still had to write (a DatabaseServer's count of the tenant
	// just created) is its, not the sample's.
	c.settledWrites(t, old.started)
	old.stop(t)
	op := c.startOperator(t, current, func(cfg string) string {
		return cfg + "\nusage:\n  interval: " + interval.String() + "\n"
	})
	sampled := map[string]bool{}
	for _, tenant := range c.tenants(t) {
		if suspended, _, _ := unstructured.NestedBool(tenant.Object, "spec", "suspend"); !suspended && tenant.GetDeletionTimestamp() == nil {
			sampled[tenant.GetName()] = true
		}
	}
	eventually(t, "every tenant's usage sampled", func() error {
		for _, tenant := range c.tenants(t) {
			if _, found, _ := unstructured.NestedMap(tenant.Object, "status", "usage"); sampled[tenant.GetName()] && !found {
				return fmt.Errorf("tenant %s has no status.usage yet", tenant.GetName())
			}
		}
		return nil
	})
	check := func(writes []write, wantPerTenant int) {
		t.Helper()
		perTenant, events := map[string]int{}, 0
		for _, w := range writes {
			switch {
			case w.key == "PATCH tenants/status":
				perTenant[w.name]++
			case w.key == "POST events" && events == 0:
				// The leader election's event.
				events++
			default:
				t.Errorf("a write other than a tenant's usage: %s", w)
			}
		}
		for name := range sampled {
			if perTenant[name] != wantPerTenant {
				t.Errorf("tenant %s: %d status writes, want %d", name, perTenant[name], wantPerTenant)
			}
		}
	}
	first := c.settledWrites(t, op.started)
	t.Logf("the first sample's writes (%d tenants sampled):\n%s", len(sampled), joinWrites(first))
	check(first, 1)
	// Nothing can be awaited to show that nothing is written: the second sample is due an
	// interval after the first, and its writes, were there any, within a few seconds of it.
	time.Sleep(time.Until(op.started.Add(2*interval + 15*time.Second)))
	check(c.operatorWrites(t, op.started), 1)
	return op
}

// eventsSince are the events recorded from from on, as "Reason Kind/name: note".
func (c *cluster) eventsSince(t *testing.T, from time.Time) []string {
	t.Helper()
	list, err := c.dyn.Resource(schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		at, _, _ := unstructured.NestedString(e.Object, "eventTime")
		if seen, _, _ := unstructured.NestedString(e.Object, "series", "lastObservedTime"); seen != "" {
			at = seen
		}
		if at == "" {
			// Recorded through the core API, as the nodes' events are: not Landlord's.
			continue
		}
		when, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			t.Fatalf("event %s: eventTime %q: %v", e.GetName(), at, err)
		}
		if when.Before(from) {
			continue
		}
		reason, _, _ := unstructured.NestedString(e.Object, "reason")
		kind, _, _ := unstructured.NestedString(e.Object, "regarding", "kind")
		name, _, _ := unstructured.NestedString(e.Object, "regarding", "name")
		note, _, _ := unstructured.NestedString(e.Object, "note")
		out = append(out, fmt.Sprintf("%s %s/%s: %s", reason, kind, name, note))
	}
	sort.Strings(out)
	return out
}

// settledWrites waits until the operator's ServiceAccount has written nothing for a few
// seconds, and returns its writes since from.
func (c *cluster) settledWrites(t *testing.T, from time.Time) []write {
	t.Helper()
	const quiet = 5 * time.Second
	var writes []write
	last, lastChange := -1, time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		writes = c.operatorWrites(t, from)
		if len(writes) != last {
			last, lastChange = len(writes), time.Now()
		}
		return time.Since(lastChange) >= quiet, nil
	})
	if err != nil {
		t.Fatalf("the operator never stopped writing: %v\n%s", err, joinWrites(writes))
	}
	return writes
}

func joinWrites(writes []write) string {
	lines := make([]string, len(writes))
	for i, w := range writes {
		lines[i] = w.String()
	}
	return strings.Join(lines, "\n")
}

// expectNothingPending proves that the writes counted so far are all the operator had to make:
// it asks for a reconcile of every tenant that is not suspended (the annotation kubectl
// landlord reconcile sets) and waits until each says it handled it. Had the operator still owed
// a tenant a write, that reconcile would make it; so the only writes allowed in between are the
// status writes that record the requests handled, one a tenant.
func (c *cluster) expectNothingPending(t *testing.T) {
	t.Helper()
	token := "upgrade-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	from := time.Now()
	var asked []string
	for _, tenant := range c.tenants(t) {
		if suspended, _, _ := unstructured.NestedBool(tenant.Object, "spec", "suspend"); suspended {
			continue
		}
		c.kubectl(t, "annotate", "--overwrite", "tenant", tenant.GetName(), tenancyv1alpha1.ReconcileRequestAnnotation+"="+token)
		asked = append(asked, tenant.GetName())
	}
	eventually(t, "every tenant's reconcile request handled", func() error {
		for _, name := range asked {
			tenant, err := c.dyn.Resource(tenantsGVR).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if handled, _, _ := unstructured.NestedString(tenant.Object, "status", "lastHandledReconcileAt"); handled != token {
				return fmt.Errorf("tenant %s handled %q", name, handled)
			}
		}
		return nil
	})
	statuses := 0
	for _, w := range c.settledWrites(t, from) {
		if w.key == "PATCH tenants/status" {
			statuses++
			continue
		}
		t.Errorf("a write the operator still owed the fleet: %s", w)
	}
	if statuses != len(asked) {
		t.Errorf("%d tenant status writes for %d reconcile requests handled, want one each", statuses, len(asked))
	}
}

// perTenantWrite is a row of docs/upgrading.md's table of the writes the first start of this
// release makes for each tenant with a namespace.
type perTenantWrite struct{ atLeast, atMost int }

// announcedMigration reads that table.
func announcedMigration(t *testing.T) map[string]perTenantWrite {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "upgrading.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "<!-- upgrade-writes:")
	if !ok {
		t.Fatal("docs/upgrading.md has no <!-- upgrade-writes: ... --> table")
	}
	if table, _, ok = strings.Cut(table, "<!-- end upgrade-writes -->"); !ok {
		t.Fatal("docs/upgrading.md has no table of the writes an upgrade makes between <!-- upgrade-writes: ... --> and <!-- end upgrade-writes -->")
	}
	rows := map[string]perTenantWrite{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.Contains(cells[1], "`") {
			continue
		}
		var row perTenantWrite
		if _, err := fmt.Sscan(cells[2], &row.atLeast); err != nil {
			t.Fatalf("docs/upgrading.md: %q: %v", line, err)
		}
		if _, err := fmt.Sscan(cells[3], &row.atMost); err != nil {
			t.Fatalf("docs/upgrading.md: %q: %v", line, err)
		}
		rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = row
	}
	if len(rows) == 0 {
		t.Fatal("docs/upgrading.md's table of the writes an upgrade makes has no row")
	}
	return rows
}

// expectMigration checks the new operator's writes against docs/upgrading.md: the table's
// writes in each namespace of a tenant that has one and is not suspended, each DatabaseServer's
// status once, each admission policy and binding at most three times, the leader election's
// event; and nothing else.
func expectMigration(t *testing.T, c *cluster, writes []write) {
	t.Helper()
	t.Logf("the new operator's writes:\n%s", joinWrites(writes))
	announced := announcedMigration(t)
	namespaces, namespaceOf := map[string]string{}, map[string]string{}
	for _, tenant := range c.tenants(t) {
		ns, _, _ := unstructured.NestedString(tenant.Object, "status", "namespace")
		if suspended, _, _ := unstructured.NestedBool(tenant.Object, "spec", "suspend"); ns != "" && !suspended {
			namespaces[ns] = tenant.GetName()
			namespaceOf[tenant.GetName()] = ns
		}
	}
	perTenant := map[string]map[string]int{}
	fleet := map[string]int{}
	for _, w := range writes {
		res := strings.Fields(w.key)[1]
		switch {
		case strings.HasSuffix(res, "admissionpolicies") || strings.HasSuffix(res, "admissionpolicybindings"):
			fleet[w.key+" "+w.name]++
		case w.key == "POST events" && namespaces[tenantOfEvent(w.name)] != "" || w.namespace != "" && namespaces[w.namespace] != "" ||
			w.key == "PATCH tenants/status" && namespaceOf[w.name] != "":
			// A tenant's own writes: in its namespace, its events, and its status.
			ns := w.namespace
			switch w.key {
			case "POST events":
				ns = tenantOfEvent(w.name)
			case "PATCH tenants/status":
				ns = namespaceOf[w.name]
			}
			if perTenant[ns] == nil {
				perTenant[ns] = map[string]int{}
			}
			perTenant[ns][w.key]++
		default:
			fleet[w.key]++
		}
	}
	for ns, tenant := range namespaces {
		for key, row := range announced {
			if n := perTenant[ns][key]; n < row.atLeast || n > row.atMost {
				t.Errorf("tenant %s: %d× %s, docs/upgrading.md says %d to %d", tenant, n, key, row.atLeast, row.atMost)
			}
		}
		for key, n := range perTenant[ns] {
			if _, ok := announced[key]; !ok {
				t.Errorf("tenant %s: %d× %s, which docs/upgrading.md does not announce", tenant, n, key)
			}
		}
	}
	for key, n := range fleet {
		switch {
		case strings.Contains(key, "admissionpolic"):
			if n > 3 {
				t.Errorf("%d× %s: more than the three docs/upgrading.md allows an admission policy", n, key)
			}
		case key == "PATCH databaseservers/status":
			if n != len(c.servers) {
				t.Errorf("%d× %s, docs/upgrading.md says one for each of the %d DatabaseServers", n, key, len(c.servers))
			}
		case key == "POST events" && n == 1:
			// The leader election's event, in the operator's namespace.
		default:
			t.Errorf("%d× %s, which docs/upgrading.md does not announce", n, key)
		}
	}
}

// tenantOfEvent is the namespace of the tenant an event in default is about: the recorder
// names an event after its object ("acme.18ebe984f55dd7c7"), and a tenant's namespace is
// tenant-<name>.
func tenantOfEvent(name string) string {
	object, _, _ := strings.Cut(name, ".")
	return "tenant-" + object
}

// readyWatch records every tenant that was seen not Ready while it ran.
type readyWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	left   []string
	// seen counts the tenants' states observed: listed and changed.
	seen int
	// relists counts the watches the API server ended: an upgrade of the Tenant CRD replaces
	// its storage, which ends every watch on tenants with "too old resource version".
	relists int
}

// watchReady lists the tenants and watches them, judging each state seen; when the API server
// ends the watch, it lists them again (judging each) and watches on from there.
func (c *cluster) watchReady(t *testing.T) *readyWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &readyWatch{cancel: cancel, done: make(chan struct{})}
	judge := func(how string, u *unstructured.Unstructured) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.seen++
		if ready := condition(u, "Ready"); ready["status"] != "True" {
			w.left = append(w.left, fmt.Sprintf("%s %s: Ready=%v %v: %v", how, u.GetName(), ready["status"], ready["reason"], ready["message"]))
		}
	}
	list := func() (string, error) {
		l, err := c.dyn.Resource(tenantsGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		for i := range l.Items {
			judge("listed", &l.Items[i])
		}
		return l.GetResourceVersion(), nil
	}
	rv, err := list()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			watcher, err := c.dyn.Resource(tenantsGVR).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err == nil {
				for ev := range watcher.ResultChan() {
					if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Error {
						judge(string(ev.Type), u)
						rv = u.GetResourceVersion()
					}
				}
				watcher.Stop()
			}
			if ctx.Err() != nil {
				return
			}
			w.mu.Lock()
			w.relists++
			w.mu.Unlock()
			// Judged again from a list: a state that came and went while no watch ran is
			// missed, for the moment the API server takes to switch the kind's storage.
			if rv, err = list(); err != nil {
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	return w
}

func (w *readyWatch) stop() {
	w.cancel()
	<-w.done
}

func condition(u *unstructured.Unstructured, kind string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == kind {
			return m
		}
	}
	return map[string]any{}
}

// expectCRDsOf checks that every CRD of the release is served with the release's schema.
func (c *cluster) expectCRDsOf(t *testing.T, r release) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(r.tree, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the release's CRDs: %v", err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		want := &unstructured.Unstructured{}
		if err := sigsyaml.Unmarshal(data, &want.Object); err != nil {
			t.Fatal(err)
		}
		got, err := c.dyn.Resource(crds).Get(context.Background(), want.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("CRD %s: %v", want.GetName(), err)
			continue
		}
		wantVersions, _, _ := unstructured.NestedSlice(want.Object, "spec", "versions")
		gotVersions, _, _ := unstructured.NestedSlice(got.Object, "spec", "versions")
		if !reflect.DeepEqual(schemas(wantVersions), schemas(gotVersions)) {
			t.Errorf("CRD %s is not this release's: its schema differs from %s", want.GetName(), filepath.Base(file))
		}
	}
}

// schemas are the versions' names and OpenAPI schemas, in a form that compares.
func schemas(versions []any) map[string]string {
	out := map[string]string{}
	for _, v := range versions {
		m := v.(map[string]any)
		s, _, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema")
		b, _ := json.Marshal(s)
		out[fmt.Sprint(m["name"])] = string(b)
	}
	return out
}

func keep(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
