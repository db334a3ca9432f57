package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/test/testenv"
)

// On a machine with no cluster, the operator brings up its own control plane, writes a
// kubeconfig for people, and turns the shipped samples into tenant namespaces.
func TestRunWithoutAClusterStartsAnEmbeddedControlPlane(t *testing.T) {
	root := testenv.RepoRoot()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s", testenv.KubeVersion)
	}
	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, filepath.Join(root, "config", "manager", "landlord.yaml"), config.Overrides{}, "always",
			localcluster.Options{AssetsDir: assets, DataDir: dataDir, CRDDir: filepath.Join(root, "config", "crd", "bases")},
			operator.Options{MetricsAddr: "0", ProbeAddr: "0"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run returned %v", err)
		}
	})

	c := waitForClient(t, filepath.Join(dataDir, "kubeconfig"), done)
	names := applySamples(t, c, filepath.Join(root, "config", "samples", "tenancy_v1alpha1_tenant.yaml"))
	cfg := config.Default()
	for _, name := range names {
		deadline := time.Now().Add(time.Minute)
		for {
			err := c.Get(ctx, client.ObjectKey{Name: cfg.NamespaceName(name)}, &corev1.Namespace{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sample tenant %s got no namespace: %v", name, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// waitForClient polls for the kubeconfig the embedded control plane writes: a person's shell
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

func applySamples(t *testing.T, c client.Client, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var names []string
	for {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Create(context.Background(), u); err != nil {
			t.Fatalf("creating sample %s: %v", u.GetName(), err)
		}
		names = append(names, u.GetName())
	}
	if len(names) == 0 {
		t.Fatal("no samples found")
	}
	return names
}
