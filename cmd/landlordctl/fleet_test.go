package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// fleetKubeconfig writes one kubeconfig whose contexts are the given clusters' kubeconfigs (each
// with one context), under the names given, as a person who runs several clusters merges them.
// Each context has its own user entry.
func fleetKubeconfig(t *testing.T, clusters map[string]*clientcmdapi.Config) string {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for name, one := range clusters {
		ctx := one.Contexts[one.CurrentContext]
		merged.Clusters[name] = one.Clusters[ctx.Cluster]
		merged.AuthInfos[name] = one.AuthInfos[ctx.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
		merged.CurrentContext = name
	}
	path := t.TempDir() + "/kubeconfig"
	if err := clientcmd.WriteToFile(*merged, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func loadKubeconfig(t *testing.T, path string) *clientcmdapi.Config {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// withContext writes the kubeconfig at path with one more context.
func withContext(t *testing.T, path, name string, context *clientcmdapi.Context) string {
	t.Helper()
	cfg := loadKubeconfig(t, path)
	cfg.Contexts[name] = context
	out := t.TempDir() + "/kubeconfig"
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// pointedAt is like's kubeconfig naming server instead, trusting caPEM when given.
func pointedAt(t *testing.T, like, server string, caPEM []byte) *clientcmdapi.Config {
	t.Helper()
	cfg := loadKubeconfig(t, like)
	for _, c := range cfg.Clusters {
		c.Server = server
		if caPEM != nil {
			c.CertificateAuthorityData = caPEM
		}
	}
	return cfg
}

// closedPort is the address of a port nothing listens on: a cluster that is down.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// silentServer is a cluster that accepts connections and completes TLS, and then never answers.
// It returns the server's URL and the CA that trusts it.
func silentServer(t *testing.T) (string, []byte) {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// barrierServer is a cluster that holds every request until n are waiting, then fails them all
// with message, which a client shows in the request's error.
func barrierServer(t *testing.T, n int, message string) (string, []byte) {
	t.Helper()
	var mu sync.Mutex
	arrived, met := 0, make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if arrived++; arrived == n {
			close(met)
		}
		mu.Unlock()
		select {
		case <-met:
		case <-r.Context().Done():
			return
		}
		http.Error(w, message, http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// tableRows are the rows of a table as fields, without the header and the AGE column onwards.
func tableRows(out string, width int) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		rows = append(rows, f[:min(width, len(f))])
	}
	return rows
}

func TestGetAllContextsShowsTheFleetAsOneTable(t *testing.T) {
	// Two clusters: the shared one, whose operator makes its tenant Ready, and a second API
	// server with no operator, whose tenant has no status yet.
	eu, euPath := sharedCluster(t)
	createTenants(t, eu, "fleet-view", []string{"fleet-eu"}, "web=1.0.0")
	ns := defaultNamespace("fleet-eu")
	testenv.NeedCluster(t)
	us, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = us.Stop() })
	usTenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-us", Labels: map[string]string{"group": "fleet-view"}},
		Spec: tenancyv1alpha1.TenantSpec{Organization: "fleet-us Inc.", Email: "ops@fleet-us.example.com",
			Components: []tenancyv1alpha1.Component{{Name: "web", Version: "2.0.0"}}},
	}
	if err := us.AdminClient.Create(context.Background(), usTenant); err != nil {
		t.Fatal(err)
	}
	euKube, usKube := loadKubeconfig(t, euPath), loadKubeconfig(t, writeKubeconfig(t, us))
	fleet := fleetKubeconfig(t, map[string]*clientcmdapi.Config{"eu-1": euKube, "us-1": usKube})
	withOneDown := fleetKubeconfig(t, map[string]*clientcmdapi.Config{"eu-1": euKube, "us-1": usKube,
		"down": pointedAt(t, euPath, "https://"+closedPort(t), nil)})
	silentURL, silentCA := silentServer(t)
	withOneSilent := fleetKubeconfig(t, map[string]*clientcmdapi.Config{"eu-1": euKube, "silent": pointedAt(t, euPath, silentURL, silentCA)})
	wantRows := [][]string{
		{"eu-1", "fleet-eu", "Active", "True", "Succeeded", "false", ns, "web=1.0.0"},
		{"us-1", "fleet-us", "Active", "Unknown", "<none>", "false", "<none>", "web=2.0.0"},
	}

	t.Run("every context's tenants are one table, the context first", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--kubeconfig", fleet)
		if err != nil {
			t.Fatalf("err=%v stderr=%q", err, stderr)
		}
		if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(header, " ") != "CONTEXT NAME STATE READY REASON SUSPENDED NAMESPACE VERSIONS AGE" {
			t.Fatalf("table:\n%s", out)
		}
		if got := tableRows(out, 8); !slices.EqualFunc(got, wantRows, slices.Equal) {
			t.Errorf("rows = %q, want %q", got, wantRows)
		}
	})

	t.Run("a context that cannot be read is named and fails the command after the others are printed", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--kubeconfig", withOneDown)
		if err == nil || !strings.Contains(err.Error(), "1 of 3 contexts could not be read: down") {
			t.Errorf("err=%v, want the unreadable context named", err)
		}
		if !strings.Contains(stderr, "context down: ") || !strings.Contains(stderr, "connection refused") {
			t.Errorf("stderr=%q, want the context and why", stderr)
		}
		if got := tableRows(out, 8); !slices.EqualFunc(got, wantRows, slices.Equal) {
			t.Errorf("rows = %q, want the readable contexts' %q", got, wantRows)
		}
	})

	t.Run("a cluster that never answers is given up after 30 seconds by default, or after --request-timeout", func(t *testing.T) {
		// Shortened, so that the test need not wait the default out.
		saved := fleetRequestTimeout
		t.Cleanup(func() { fleetRequestTimeout = saved })
		for _, tc := range []struct {
			name     string
			fallback time.Duration
			args     []string
		}{
			{"the default bound", time.Second, nil},
			{"--request-timeout over the default", time.Hour, []string{"--request-timeout", "1s"}},
		} {
			fleetRequestTimeout = tc.fallback
			args := append([]string{"get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--kubeconfig", withOneSilent}, tc.args...)
			out, stderr, err := run(t, binaryName, args...)
			if err == nil || !strings.Contains(err.Error(), "1 of 2 contexts could not be read: silent") {
				t.Errorf("%s: err=%v", tc.name, err)
			}
			// A request timeout, not a refused connection or a TLS failure. Go words it by where
			// the deadline found the request: awaiting headers ("Client.Timeout exceeded"), or
			// still connecting ("context deadline exceeded").
			timedOut := strings.Contains(stderr, "Client.Timeout exceeded") || strings.Contains(stderr, "context deadline exceeded")
			if !strings.Contains(stderr, "context silent: ") || !timedOut {
				t.Errorf("%s: stderr=%q, want the request timed out", tc.name, stderr)
			}
			if got := tableRows(out, 2); !slices.EqualFunc(got, [][]string{{"eu-1", "fleet-eu"}}, slices.Equal) {
				t.Errorf("%s: rows = %q", tc.name, got)
			}
		}
	})

	t.Run("json says each tenant's context, and what could not be read", func(t *testing.T) {
		out, _, err := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "-o", "json", "--kubeconfig", withOneDown)
		if err == nil {
			t.Error("an unreadable context must fail the command in json too")
		}
		var view fleetView
		if err := json.Unmarshal([]byte(out), &view); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var got []string
		for _, c := range view.Contexts {
			names := []string{}
			for _, tenant := range c.Tenants {
				if tenant.Kind != "Tenant" || len(tenant.ManagedFields) > 0 {
					t.Errorf("%s: kind %q, %d managed fields: want the kind and, as kubectl, no managed fields", tenant.Name, tenant.Kind, len(tenant.ManagedFields))
				}
				names = append(names, tenant.Name)
			}
			got = append(got, c.Context+"="+strings.Join(names, ",")+"/"+map[bool]string{true: "error", false: "ok"}[c.Error != ""])
		}
		if want := []string{"down=/error", "eu-1=fleet-eu/ok", "us-1=fleet-us/ok"}; !slices.Equal(got, want) {
			t.Errorf("contexts = %q, want %q", got, want)
		}
	})

	t.Run("named tenants are found in whichever cluster has them", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "get", "tenants", "fleet-us", "fleet-eu", "nobody", "--all-contexts", "--kubeconfig", fleet)
		if err == nil || !strings.Contains(err.Error(), "1 of 3 tenants not found in any context") || !strings.Contains(stderr, `tenant "nobody" not found in any context`) {
			t.Errorf("err=%v stderr=%q", err, stderr)
		}
		if got := tableRows(out, 8); !slices.EqualFunc(got, wantRows, slices.Equal) {
			t.Errorf("rows = %q, want %q", got, wantRows)
		}
	})

	t.Run("contexts of the same cluster and user are listed once", func(t *testing.T) {
		// As kubectl users keep one context per namespace.
		path := withContext(t, fleet, "eu-1-team-a", &clientcmdapi.Context{Cluster: "eu-1", AuthInfo: "eu-1", Namespace: "team-a"})
		out, stderr, err := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--kubeconfig", path)
		if err != nil || !strings.Contains(stderr, "context eu-1-team-a: the same cluster and user as context eu-1: listed there") {
			t.Errorf("err=%v stderr=%q", err, stderr)
		}
		if got := tableRows(out, 8); !slices.EqualFunc(got, wantRows, slices.Equal) {
			t.Errorf("rows = %q, want %q", got, wantRows)
		}
	})

	t.Run("a context naming a cluster the kubeconfig lacks is an error, never another cluster", func(t *testing.T) {
		path := withContext(t, fleet, "typo", &clientcmdapi.Context{Cluster: "eu-l", AuthInfo: "eu-1"})
		_, stderr, err := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--kubeconfig", path)
		if err == nil || !strings.Contains(stderr, `context typo: the context names cluster "eu-l", which the kubeconfig does not have`) {
			t.Errorf("err=%v stderr=%q", err, stderr)
		}
		// Every command connects through the same check: one context named, or the current one.
		const want = `the context names cluster "eu-l", which the kubeconfig does not have`
		for _, args := range [][]string{
			{"get", "tenants", "--context", "typo"},
			{"suspend", "fleet-eu", "--context", "typo"},
			{"rollout", "--component", "web", "--version", "1.0.0", "--context", "typo"},
		} {
			if _, _, err := run(t, binaryName, append(args, "--kubeconfig", path)...); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: err=%v, want %q", args, err, want)
			}
		}
		current := loadKubeconfig(t, path)
		current.CurrentContext = "typo"
		if err := clientcmd.WriteToFile(*current, path); err != nil {
			t.Fatal(err)
		}
		if _, _, err := run(t, binaryName, "get", "tenants", "--kubeconfig", path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the current context: err=%v, want %q", err, want)
		}
		// --all-contexts does not use the current context: the others are still listed.
		out, _, _ := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--kubeconfig", path)
		if got := tableRows(out, 8); !slices.EqualFunc(got, wantRows, slices.Equal) {
			t.Errorf("rows = %q, want %q", got, wantRows)
		}
	})

	t.Run("contexts are read at the same time, not one after the other", func(t *testing.T) {
		// One server, as two contexts of two users (so neither is listed as the other's
		// duplicate), that answers no request until requests of both are waiting. Read one after
		// the other, the first would time out alone.
		url, ca := barrierServer(t, 2, "both contexts were read at once")
		a, b := pointedAt(t, euPath, url, ca), pointedAt(t, euPath, url, ca)
		path := fleetKubeconfig(t, map[string]*clientcmdapi.Config{"par-a": a, "par-b": b})
		_, stderr, err := run(t, binaryName, "get", "tenants", "--all-contexts", "--request-timeout", "20s", "--kubeconfig", path)
		if err == nil || strings.Count(stderr, "both contexts were read at once") != 2 {
			t.Errorf("err=%v stderr=%q, want both contexts answered by the barrier", err, stderr)
		}
	})

	t.Run("what cannot say a tenant's context, or would give one cluster's setting to all, is refused with the reason", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"-o", "name"}, "with --all-contexts use the table, wide, json or yaml"},
			{[]string{"--context", "eu-1"}, "leave out --context"},
			{[]string{"--server", "https://127.0.0.1:6443"}, "leave out --server"},
			{[]string{"--token", "secret-token"}, "leave out --token"},
			{[]string{"--insecure-skip-tls-verify"}, "leave out --insecure-skip-tls-verify"},
		} {
			args := append([]string{"get", "tenants", "--all-contexts", "--kubeconfig", fleet}, tc.args...)
			_, _, err := run(t, binaryName, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: err=%v, want %q", tc.args, err, tc.want)
			}
		}
		_, _, err := run(t, binaryName, "get", "claims", "--all-contexts", "--kubeconfig", fleet)
		if err == nil || !strings.Contains(err.Error(), "--all-contexts lists tenants only") {
			t.Errorf("get claims --all-contexts: err=%v", err)
		}
	})

	// Last: it removes the second cluster's Tenant API.
	t.Run("a cluster without Landlord is noted and fails nothing", func(t *testing.T) {
		g := NewWithT(t)
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "tenants." + tenancyv1alpha1.GroupVersion.Group}}
		scheme := runtime.NewScheme()
		g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
		crds, err := client.New(us.Admin, client.Options{Scheme: scheme})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(crds.Delete(context.Background(), crd)).To(Succeed())
		g.Eventually(func(g Gomega) {
			out, stderr, err := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--kubeconfig", fleet)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(stderr).To(ContainSubstring("context us-1: Landlord is not installed (the cluster serves no Tenant API)"))
			g.Expect(tableRows(out, 8)).To(Equal(wantRows[:1]))
		}).WithTimeout(time.Minute).Should(Succeed())
	})
}
