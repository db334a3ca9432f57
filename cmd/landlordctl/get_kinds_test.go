package main

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// createRollout creates a ComponentRollout of component at version for the tenants labeled
// group=<group>, removed when the test ends, and waits until the operator has planned it.
func createRollout(t *testing.T, c client.Client, name, component, version, group string) {
	t.Helper()
	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: component, Version: version,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"group": group}}},
	}
	if err := c.Create(context.Background(), ro); err != nil {
		t.Fatal(err)
	}
	deleteRollouts(t, c, name)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(ro), ro)).To(Succeed())
		g.Expect(ro.Status.ObservedGeneration).To(Equal(ro.Generation))
	}).WithTimeout(waitLimit).Should(Succeed())
}

// createDatabaseServer creates a DatabaseServer nobody can reach, removed when the test ends:
// enough for it to be listed and described.
func createDatabaseServer(t *testing.T, c client.Client, name string) {
	t.Helper()
	server := &tenancyv1alpha1.DatabaseServer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.DatabaseServerSpec{Engine: tenancyv1alpha1.EnginePostgres, Host: name + ".invalid",
			AdminCredentials: tenancyv1alpha1.SecretReference{Name: name + "-admin"}},
	}
	if err := c.Create(context.Background(), server); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), server) })
}

// header is a table's first line as its column names.
func header(out string) string {
	return strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " ")
}

// Every kind is listed as kubectl lists it: by any of its names, with the columns of its CRD
// (wide adds those of priority 1), by name one a line, and one object asked for by name printed
// as itself.
func TestGetListsEveryKindWithItsColumns(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	ctx := context.Background()
	createTenants(t, c, "kinds", []string{"kinds-a"}, "web=1.0.0")
	createPool(t, c, "kinds-pool", 0)
	createRollout(t, c, "kinds-web-1.1.0", "web", "1.1.0", "kinds-nobody")
	createDatabaseServer(t, c, "kinds-dbs")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kinds-signups"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, _, err := run(t, binaryName, append(customer("kinds-pool", "--name", "kinds-claim", "-n", "kinds-signups"), "--kubeconfig", kubeconfig)...); err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		claim := &tenancyv1alpha1.TenantClaim{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "kinds-signups", Name: "kinds-claim"}, claim)).To(Succeed())
		g.Expect(claim.Status.Reason).To(Equal(tenancyv1alpha1.ReasonNoReadySpare))
	}).WithTimeout(waitLimit).Should(Succeed())

	for _, tc := range []struct {
		kind         string
		args         []string
		header       string
		wide         string
		row          *regexp.Regexp
		name, gvKind string
	}{
		{"tenants", []string{"tnt", "kinds-a"},
			"NAME STATE READY REASON SUSPENDED NAMESPACE VERSIONS AGE",
			"NAME STATE READY REASON SUSPENDED NAMESPACE VERSIONS AGE CLASS ORGANIZATION MESSAGE",
			regexp.MustCompile(`^kinds-a\s+Active\s+True\s+Succeeded\s+false\s+\S+\s+web=1\.0\.0\s`),
			"tenant.tenancy.landlord.dev/kinds-a", "Tenant"},
		{"claims", []string{"tc", "kinds-claim", "-n", "kinds-signups"},
			"NAME POOL PHASE TENANT REASON BOUND AGE",
			"NAME POOL PHASE TENANT REASON BOUND AGE TENANT NAMESPACE MESSAGE",
			regexp.MustCompile(`^kinds-claim\s+kinds-pool\s+Pending\s+<none>\s+NoReadySpare\s+<none>\s`),
			"tenantclaim.tenancy.landlord.dev/kinds-claim", "TenantClaim"},
		{"pools", []string{"tp", "kinds-pool"},
			"NAME REPLICAS READY PROVISIONING ALLOCATED AGE",
			"NAME REPLICAS READY PROVISIONING ALLOCATED SUSPENDED MAX AGE MESSAGE",
			regexp.MustCompile(`^kinds-pool\s+0\s+0\s+0\s+0\s`),
			"tenantpool.tenancy.landlord.dev/kinds-pool", "TenantPool"},
		{"rollouts", []string{"cro", "kinds-web-1.1.0"},
			"NAME COMPONENT VERSION READY REASON DONE FAILED AGE",
			"NAME COMPONENT VERSION READY REASON DONE FAILED AHEAD WAVES AGE MESSAGE",
			regexp.MustCompile(`^kinds-web-1\.1\.0\s+web\s+1\.1\.0\s+True\s+\S+\s+0\s+0\s`),
			"componentrollout.tenancy.landlord.dev/kinds-web-1.1.0", "ComponentRollout"},
		{"database servers", []string{"dbs", "kinds-dbs"},
			"NAME ENGINE HOST READY TENANTS AGE",
			"NAME ENGINE HOST READY TENANTS VERSION AGE MESSAGE",
			regexp.MustCompile(`^kinds-dbs\s+postgres\s+kinds-dbs\.invalid\s+\S+\s+0\s`),
			"databaseserver.tenancy.landlord.dev/kinds-dbs", "DatabaseServer"},
		{"templates", []string{"ct", "web-1.0.0"},
			"NAME COMPONENT VERSION AGE",
			"NAME COMPONENT VERSION AGE",
			regexp.MustCompile(`^web-1\.0\.0\s+web\s+1\.0\.0\s`),
			"componenttemplate.tenancy.landlord.dev/web-1.0.0", "ComponentTemplate"},
	} {
		get := func(t *testing.T, extra ...string) string {
			t.Helper()
			out, stderr, err := run(t, binaryName, append(append([]string{"get", "--kubeconfig", kubeconfig}, tc.args...), extra...)...)
			if err != nil {
				t.Fatalf("get %s %s: %v\n%s", strings.Join(tc.args, " "), strings.Join(extra, " "), err, stderr)
			}
			return out
		}
		t.Run(tc.kind+" are a table with their CRD's columns", func(t *testing.T) {
			out := get(t)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if header(out) != tc.header || len(lines) != 2 || !tc.row.MatchString(lines[1]) {
				t.Errorf("want header %q and a row matching %s:\n%s", tc.header, tc.row, out)
			}
		})
		t.Run(tc.kind+" in wide add the columns of priority 1", func(t *testing.T) {
			if out := get(t, "-o", "wide"); header(out) != tc.wide {
				t.Errorf("want header %q:\n%s", tc.wide, out)
			}
		})
		t.Run(tc.kind+" without headers are their rows alone", func(t *testing.T) {
			if out := get(t, "--no-headers"); !tc.row.MatchString(out) || strings.Count(out, "\n") != 1 {
				t.Errorf("want one row matching %s:\n%s", tc.row, out)
			}
		})
		t.Run(tc.kind+" by name are kind and name", func(t *testing.T) {
			if out := get(t, "-o", "name"); out != tc.name+"\n" {
				t.Errorf("got %q, want %q", out, tc.name)
			}
		})
		t.Run(tc.kind+" asked for by name are printed as the object itself", func(t *testing.T) {
			var obj metav1.PartialObjectMetadata
			if out := get(t, "-o", "yaml"); yaml.Unmarshal([]byte(out), &obj) != nil || obj.Kind != tc.gvKind || obj.APIVersion != tenancyv1alpha1.GroupVersion.String() {
				t.Errorf("want a %s:\n%s", tc.gvKind, out)
			}
		})
	}

	t.Run("labels are shown as kubectl shows them, all or by key", func(t *testing.T) {
		out, _, err := run(t, binaryName, "get", "tenants", "-l", "group=kinds", "--show-labels", "-L", "group", "--kubeconfig", kubeconfig)
		if err != nil || !strings.HasSuffix(header(out), "VERSIONS AGE GROUP LABELS") || !regexp.MustCompile(`(?m)^kinds-a\s.*\skinds\s+group=kinds$`).MatchString(out) {
			t.Errorf("err=%v\n%s", err, out)
		}
	})

	t.Run("a kind with nothing to list says so on stderr, as kubectl does", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "get", "pools", "-l", "group=nobody-has-this", "--kubeconfig", kubeconfig)
		if err != nil || out != "" || stderr != "No pools found.\n" {
			t.Errorf("err=%v out=%q stderr=%q", err, out, stderr)
		}
		out, stderr, err = run(t, binaryName, "get", "claims", "-n", "default", "-l", "group=nobody-has-this", "--kubeconfig", kubeconfig)
		if err != nil || out != "" || stderr != "No claims found in namespace \"default\".\n" {
			t.Errorf("err=%v out=%q stderr=%q", err, out, stderr)
		}
	})

	t.Run("a missing object of a namespaced kind is named with its namespace", func(t *testing.T) {
		_, stderr, err := run(t, binaryName, "get", "claims", "nobody", "kinds-claim", "-n", "kinds-signups", "-o", "name", "--kubeconfig", kubeconfig)
		if err == nil || exitCode(err) != exitError || err.Error() != "1 of 2 claims not found" || stderr != "claim \"nobody\" not found in namespace \"kinds-signups\"\n" {
			t.Errorf("err=%v stderr=%q", err, stderr)
		}
	})
}

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startCommand runs the CLI until ctx ends, as a person would until they press Ctrl-C, and
// returns what it prints and, once it returns, its error.
func startCommand(ctx context.Context, args ...string) (*syncBuffer, <-chan error) {
	out := &syncBuffer{}
	done := make(chan error, 1)
	cmd := newRootCommand(out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	cmd.SetContext(ctx)
	go func() { done <- cmd.Execute() }()
	return out, done
}

// `get --watch` prints the objects, then each change as it happens, until interrupted: as rows
// under the one header, with what each change is (--output-watch-events), or as names without
// the list first (--watch-only). It lists once and then only watches: waiting costs no request.
func TestGetWatchPrintsEachChangeAsItHappens(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	ctx := context.Background()
	createTenants(t, c, "watched", []string{"watched-a"})
	watching, stop := context.WithCancel(ctx)
	defer stop()

	watchers := []struct {
		name string
		args []string
		// before is what it prints before any change; after, once the changes are made.
		before, after []*regexp.Regexp
		out           *syncBuffer
		done          <-chan error
	}{
		{name: "the table gets a row per change under its one header", args: []string{"-w"},
			before: []*regexp.Regexp{regexp.MustCompile(`^NAME\s+STATE\s.*\nwatched-a\s+Active\s`)},
			after: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^watched-b\s+Active\s`),
				regexp.MustCompile(`(?m)^watched-a\s+Active\s+\S+\s+\S+\s+true\s`),
			}},
		{name: "events say what each change is", args: []string{"--watch", "--output-watch-events"},
			before: []*regexp.Regexp{regexp.MustCompile(`^EVENT\s+NAME\s+STATE\s.*\nADDED\s+watched-a\s`)},
			after: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^ADDED\s+watched-b\s`),
				regexp.MustCompile(`(?m)^MODIFIED\s+watched-a\s+Active\s+\S+\s+\S+\s+true\s`),
			}},
		{name: "watch-only prints the changes alone", args: []string{"--watch-only", "-o", "name"},
			before: nil,
			after: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^tenant\.tenancy\.landlord\.dev/watched-b$`),
				regexp.MustCompile(`(?m)^tenant\.tenancy\.landlord\.dev/watched-a$`),
			}},
	}
	for i := range watchers {
		w := &watchers[i]
		w.out, w.done = startCommand(watching, append([]string{"get", "tenants", "-l", "group=watched", "--kubeconfig", kubeconfig}, w.args...)...)
	}
	// One more watch, by the function itself through a client that counts what it asks for.
	counted, requests := countingClient(t)
	var countedOut syncBuffer
	countedDone := make(chan error, 1)
	go func() {
		countedDone <- watchGet(watching, &countedOut, io.Discard, counted, &getOptions{watch: true, output: nameOutput()},
			kindOf("Tenant"), "", labels.SelectorFromSet(labels.Set{"group": "watched"}), nil)
	}()

	g := NewWithT(t)
	for _, w := range watchers {
		for _, want := range w.before {
			g.Eventually(w.out.String).WithTimeout(waitLimit).Should(MatchRegexp(want.String()), w.name)
		}
	}
	g.Eventually(countedOut.String).WithTimeout(waitLimit).Should(ContainSubstring("watched-a"))
	for _, w := range watchers {
		if w.before == nil && w.out.String() != "" {
			t.Errorf("%s: printed %q before any change", w.name, w.out.String())
		}
	}

	// The changes: a tenant created, another suspended.
	if err := c.Create(ctx, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "watched-b", Labels: map[string]string{"group": "watched"}},
		Spec:       tenancyv1alpha1.TenantSpec{Organization: "watched-b Inc.", Email: "ops@watched-b.example.com"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "watched-a"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))); err != nil {
		t.Fatal(err)
	}
	for _, w := range watchers {
		t.Run(w.name, func(t *testing.T) {
			g := NewWithT(t)
			for _, want := range w.after {
				g.Eventually(w.out.String).WithTimeout(waitLimit).Should(MatchRegexp(want.String()))
			}
			if headers := regexp.MustCompile(`(?m)^(EVENT\s+)?NAME\s`).FindAllString(w.out.String(), -1); len(headers) > 1 {
				t.Errorf("the header is printed more than once:\n%s", w.out.String())
			}
		})
	}
	g.Eventually(countedOut.String).WithTimeout(waitLimit).Should(ContainSubstring("watched-b"))

	stop()
	for _, w := range watchers {
		t.Run(w.name+", and ends without an error when interrupted", func(t *testing.T) {
			select {
			case err := <-w.done:
				if err != nil {
					t.Errorf("err = %v", err)
				}
			case <-time.After(waitLimit):
				t.Fatal("still watching")
			}
		})
	}
	t.Run("a watch lists once, and waiting costs no request", func(t *testing.T) {
		if err := <-countedDone; err != nil {
			t.Fatal(err)
		}
		if got, want := requests(), (testenv.Counts{"GET tenants": 1}); !reflect.DeepEqual(got, want) {
			t.Errorf("requests %v, want %v", got, want)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a watch of several names is refused", []string{"get", "tenants", "watched-a", "watched-b", "-w"}, "--watch follows one tenant or all of them"},
		{"events without a watch are refused", []string{"get", "tenants", "--output-watch-events"}, "add --watch"},
		{"a watch of every context is refused", []string{"get", "tenants", "-w", "--all-contexts"}, "leave out --all-contexts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := run(t, binaryName, append(tc.args, "--kubeconfig", kubeconfig)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != exitUsage {
				t.Errorf("err = %v, want a usage error saying %q", err, tc.want)
			}
		})
	}
	t.Run("a watch of a tenant that does not exist says so", func(t *testing.T) {
		_, _, err := run(t, binaryName, "get", "tenant", "nobody", "-w", "--kubeconfig", kubeconfig)
		if err == nil || err.Error() != `tenant "nobody" not found` {
			t.Errorf("err = %v", err)
		}
	})
}

// nameOutput is -o name.
func nameOutput() *outputFlags {
	cmd := &cobra.Command{}
	f := addOutputFlags(cmd, true)
	_ = cmd.Flags().Set("output", "name")
	return f
}
