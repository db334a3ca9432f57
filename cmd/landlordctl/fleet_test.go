package main

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// fleetKubeconfig writes one kubeconfig whose contexts are the given clusters' kubeconfigs (each
// with one context), under the names given, as a person who runs several clusters merges them.
func fleetKubeconfig(t *testing.T, clusters map[string]string) string {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for name, path := range clusters {
		one, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
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

// unreachableKubeconfig is like's kubeconfig pointed at server instead.
func unreachableKubeconfig(t *testing.T, like, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(like)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	path := t.TempDir() + "/kubeconfig"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGetAllContextsShowsTheFleetAsOneTable(t *testing.T) {
	// Two clusters: the shared one, whose operator makes its tenant Ready, and a second API
	// server with no operator, whose tenant has no status yet.
	eu, euKubeconfig := sharedCluster(t)
	createTenants(t, eu, "fleet-view", []string{"fleet-eu"}, "web=1.0.0")
	ns := defaultNamespace("fleet-eu")
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
	usKubeconfig := writeKubeconfig(t, us)
	fleet := fleetKubeconfig(t, map[string]string{"eu-1": euKubeconfig, "us-1": usKubeconfig})
	// A cluster that is down: nothing listens on its port.
	withOneDown := fleetKubeconfig(t, map[string]string{"eu-1": euKubeconfig, "us-1": usKubeconfig, "down": unreachableKubeconfig(t, usKubeconfig, "https://127.0.0.1:1")})
	// A cluster that does not answer: connections are accepted and never served.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	withOneSilent := fleetKubeconfig(t, map[string]string{"eu-1": euKubeconfig, "silent": unreachableKubeconfig(t, usKubeconfig, "https://"+silent.Addr().String())})

	t.Run("every context's tenants are one table, the context first", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--kubeconfig", fleet)
		if err != nil {
			t.Fatalf("err=%v stderr=%q", err, stderr)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "CONTEXT NAME STATE READY REASON SUSPENDED NAMESPACE VERSIONS AGE" {
			t.Fatalf("table:\n%s", out)
		}
		for i, want := range [][]string{
			{"eu-1", "fleet-eu", "Active", "True", "Succeeded", "false", ns, "web=1.0.0"},
			{"us-1", "fleet-us", "Active", "Unknown", "<none>", "false", "<none>", "web=2.0.0"},
		} {
			if row := strings.Fields(lines[i+1]); len(row) < len(want) || !slices.Equal(row[:len(want)], want) {
				t.Errorf("row %d = %q, want %q", i+1, row, want)
			}
		}
	})

	t.Run("a context that cannot be read is named and fails the command after the others are printed", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--kubeconfig", withOneDown)
		if err == nil || !strings.Contains(err.Error(), "1 of 3 contexts could not be read: down") {
			t.Errorf("err=%v, want the unreadable context named", err)
		}
		if !strings.Contains(stderr, "context down: ") || !strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("stderr=%q, want the context and why", stderr)
		}
		if !strings.Contains(out, "fleet-eu") || !strings.Contains(out, "fleet-us") {
			t.Errorf("the reachable contexts' tenants are missing:\n%s", out)
		}
	})

	t.Run("--request-timeout bounds the wait for a cluster that does not answer", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "get", "tenants", "--all-contexts", "-l", "group=fleet-view", "--request-timeout", "2s", "--kubeconfig", withOneSilent)
		if err == nil || !strings.Contains(err.Error(), "1 of 2 contexts could not be read: silent") || !strings.Contains(stderr, "context silent: ") {
			t.Errorf("err=%v stderr=%q", err, stderr)
		}
		if !strings.Contains(out, "fleet-eu") {
			t.Errorf("the answering context's tenants are missing:\n%s", out)
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
				if tenant.Kind != "Tenant" {
					t.Errorf("%s: kind %q", tenant.Name, tenant.Kind)
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
		if !strings.Contains(out, "eu-1") || !strings.Contains(out, "fleet-eu") || !strings.Contains(out, "us-1") || !strings.Contains(out, "fleet-us") {
			t.Errorf("table:\n%s", out)
		}
	})

	t.Run("what cannot say a tenant's context is refused with the reason", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"get", "tenants", "--all-contexts", "-o", "name"}, "with --all-contexts use the table, wide, json or yaml"},
			{[]string{"get", "tenants", "--all-contexts", "--context", "eu-1"}, "leave out --context"},
			{[]string{"get", "claims", "--all-contexts"}, "--all-contexts lists tenants only"},
		} {
			_, _, err := run(t, binaryName, append(tc.args, "--kubeconfig", fleet)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: err=%v, want %q", tc.args, err, tc.want)
			}
		}
	})
}
