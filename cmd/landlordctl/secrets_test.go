package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/test/testenv"
)

// landlordctl runs the CLI with a file store in dir and returns what it printed.
func landlordctl(t *testing.T, configPath string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCommand(&out)
	cmd.SetArgs(append([]string{"--config", configPath}, args...))
	cmd.SetContext(context.Background())
	err := cmd.Execute()
	return out.String(), err
}

func fileStoreConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "landlord.yaml")
	doc := "secrets:\n  store:\n    backend: file\n    file: {dir: " + filepath.Join(dir, "store") + "}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSecretsCommands(t *testing.T) {
	cfg := fileStoreConfig(t)
	valueFile := filepath.Join(t.TempDir(), "cert.pem")
	_ = os.WriteFile(valueFile, []byte("-----BEGIN CERTIFICATE-----"), 0o600)

	t.Run("put stores literal and file values", func(t *testing.T) {
		out, err := landlordctl(t, cfg, "secrets", "put", "stripe", "--from-literal", "token=sk_live_123",
			"--from-file", "ca.pem="+valueFile, "--shared", "--tenant-selector", "plan=enterprise")
		if err != nil || !strings.Contains(out, "landlord-templates/stripe stored (2 keys)") {
			t.Fatalf("out=%q err=%v", out, err)
		}
	})

	t.Run("get shows keys but never values unless asked", func(t *testing.T) {
		out, err := landlordctl(t, cfg, "secrets", "get", "stripe")
		if err != nil || strings.Contains(out, "sk_live_123") || !strings.Contains(out, "token: 11 bytes") || !strings.Contains(out, "shared:    plan=enterprise") {
			t.Fatalf("out=%q err=%v", out, err)
		}
		out, err = landlordctl(t, cfg, "secrets", "get", "stripe", "--show")
		if err != nil || !strings.Contains(out, "token: sk_live_123") {
			t.Fatalf("out=%q err=%v", out, err)
		}
	})

	t.Run("list names the secrets without values", func(t *testing.T) {
		out, err := landlordctl(t, cfg, "secrets", "list")
		if err != nil || !strings.Contains(out, "stripe") || !strings.Contains(out, "ca.pem,token") || strings.Contains(out, "sk_live") {
			t.Fatalf("out=%q err=%v", out, err)
		}
	})

	t.Run("delete removes a secret, and a second delete says it is not there", func(t *testing.T) {
		if _, err := landlordctl(t, cfg, "secrets", "delete", "stripe"); err != nil {
			t.Fatal(err)
		}
		_, err := landlordctl(t, cfg, "secrets", "delete", "stripe")
		if err == nil || !strings.Contains(err.Error(), "not found") {
			t.Fatalf("err=%v", err)
		}
	})

	t.Run("--namespace names another store namespace; the kubeconfig's namespace does not", func(t *testing.T) {
		// A kubeconfig whose context defaults to a namespace: the store is not the cluster.
		kc := clientcmdapi.NewConfig()
		kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
		kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", Namespace: "team-a"}
		kc.CurrentContext = "c"
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
			t.Fatal(err)
		}
		out, err := landlordctl(t, cfg, "secrets", "put", "webhook", "-n", "team-b", "--from-literal", "token=x")
		if err != nil || !strings.Contains(out, "secret team-b/webhook stored (1 keys)") {
			t.Fatalf("out=%q err=%v", out, err)
		}
		for _, tc := range []struct {
			args []string
			want bool
		}{
			{[]string{"secrets", "list", "-n", "team-b"}, true},
			{[]string{"-n", "team-b", "secrets", "list"}, true},
			{[]string{"secrets", "list", "--kubeconfig", kubeconfig}, false},
		} {
			out, err := landlordctl(t, cfg, tc.args...)
			if err != nil || strings.Contains(out, "webhook") != tc.want {
				t.Errorf("%v: err=%v, lists webhook: %t, want %t\n%s", tc.args, err, !tc.want, tc.want, out)
			}
		}
	})

	t.Run("bad input is refused with a reason", func(t *testing.T) {
		for args, want := range map[string]string{
			"secrets put empty":                                     "nothing to store",
			"secrets put x --from-literal novalue":                  "want KEY=VALUE",
			"secrets put x --from-literal a=b --tenant-selector ==": "--tenant-selector",
			"secrets put Bad_Name --from-literal a=b":               "invalid secret name",
			"secrets get missing":                                   "not found",
		} {
			_, err := landlordctl(t, cfg, strings.Fields(args)...)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err=%v, want %q", args, err, want)
			}
		}
	})
}

func TestSecretsSyncWritesTheTemplateNamespace(t *testing.T) {
	// Its own API server, with no operator syncing the template namespace on its own: only
	// the CLI can have written the secret found there.
	testenv.NeedCluster(t)
	env, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := writeKubeconfig(t, env)
	cfg := fileStoreConfig(t)

	if _, err := landlordctl(t, cfg, "secrets", "put", "api-key", "--from-literal", "token=v1", "--shared"); err != nil {
		t.Fatal(err)
	}
	out, err := landlordctl(t, cfg, "secrets", "sync", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("out=%q err=%v", out, err)
	}
	s := &corev1.Secret{}
	if err := env.AdminClient.Get(context.Background(), client.ObjectKey{Namespace: "landlord-templates", Name: "api-key"}, s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["token"]) != "v1" || s.Labels["tenancy.landlord.dev/shared"] != "true" {
		t.Errorf("template secret = %+v", s)
	}
}

func writeKubeconfig(t *testing.T, env *testenv.Env) string {
	t.Helper()
	path, err := env.WriteKubeconfig(t.TempDir(), "envtest")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// With secrets.sharedSource Namespace another tool writes the template namespace: a shared
// secret put into the store's template namespace would reach no tenant, so it is refused, and
// the store still takes secrets under any other namespace.
func TestSecretsPutIntoTheTemplateNamespaceIsRefusedWhenAnotherToolFeedsIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "landlord.yaml")
	doc := "secrets:\n  sharedSource: Namespace\n  store:\n    backend: file\n    file: {dir: " + filepath.Join(dir, "store") + "}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("a put into the template namespace says where the secret belongs", func(t *testing.T) {
		_, err := landlordctl(t, path, "secrets", "put", "stripe", "--from-literal", "token=sk_live_123", "--shared")
		if err == nil || !strings.Contains(err.Error(), "secrets.sharedSource is Namespace") || !strings.Contains(err.Error(), "tenancy.landlord.dev/shared=true") {
			t.Fatalf("err=%v", err)
		}
		if out, err := landlordctl(t, path, "secrets", "list"); err != nil || strings.Contains(out, "stripe") {
			t.Fatalf("the store holds the refused secret: out=%q err=%v", out, err)
		}
	})
	t.Run("a put into another namespace is stored", func(t *testing.T) {
		out, err := landlordctl(t, path, "secrets", "put", "extra", "-n", "tenant-acme", "--from-literal", "token=x")
		if err != nil || !strings.Contains(out, "tenant-acme/extra stored (1 keys)") {
			t.Fatalf("out=%q err=%v", out, err)
		}
	})
}
