package install_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/test/testenv"
)

// TestTheInstallersApplyToALocalCluster installs Landlord as a platform team would, on a whole
// local cluster with nothing of Landlord's in it: the chart with every optional value on
// (server-side dry run), the chart with its defaults over the CRDs an older chart left (helm
// install, then helm uninstall), and the release installer dist/install.yaml (kubectl apply
// --server-side) over what the uninstall kept. kwok runs the operator's pod, so each Deployment really becomes Available
// (the image is never pulled).
func TestTheInstallersApplyToALocalCluster(t *testing.T) {
	testenv.NeedCluster(t)
	kubectlBin, helmBin := kubectlPath(t), helmPath(t)
	dir := t.TempDir()
	cluster, err := localcluster.Start(localcluster.Options{AssetsDir: assets(), DataDir: filepath.Join(dir, "cluster")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Error(err)
		}
	})
	// Helm keeps its caches under the test's directory, not the user's home.
	env := []string{"KUBECONFIG=" + cluster.KubeconfigPath, "HELM_CACHE_HOME=" + filepath.Join(dir, "helm", "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(dir, "helm", "config"), "HELM_DATA_HOME=" + filepath.Join(dir, "helm", "data")}
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		return run(t, env, kubectlBin, args...)
	}
	helm := func(t *testing.T, args ...string) string {
		t.Helper()
		return run(t, env, helmBin, args...)
	}
	writeFile := func(t *testing.T, name string, objects []object) string {
		t.Helper()
		var docs []string
		for _, obj := range objects {
			data, err := sigsyaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(data))
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	chart := filepath.Join(root, "charts", "landlord")

	// Helm installs into a namespace that exists; docs/getting-started.md creates it with its Pod Security
	// label, as config/default's Namespace has it. A dry run of namespaced objects needs it too.
	kubectl(t, "create", "namespace", "landlord-system")
	kubectl(t, "label", "namespace", "landlord-system", "pod-security.kubernetes.io/enforce=restricted")

	t.Run("the chart with every optional value on is accepted by the API server in a server-side dry run", func(t *testing.T) {
		objects := render(t, chart, everyValueOn...)
		// The ServiceMonitor and PrometheusRule need the Prometheus Operator's CRDs, which this
		// cluster does not have: they are left out of the dry run, and nothing else is.
		var accepted []object
		left := 0
		for _, obj := range objects {
			if strings.HasPrefix(str(obj["apiVersion"]), "monitoring.coreos.com/") {
				left++
				continue
			}
			accepted = append(accepted, obj)
		}
		t.Logf("%d objects applied in a dry run, %d Prometheus Operator objects left out", len(accepted), left)
		out := kubectl(t, "apply", "--server-side", "--dry-run=server", "-f", writeFile(t, "chart-all-values.yaml", accepted))
		if n := strings.Count(out, "serverside-applied (server dry run)"); n != len(accepted) {
			t.Errorf("the API server accepted %d objects of %d:\n%s", n, len(accepted), out)
		}
		if out := kubectl(t, "get", "crd", "-o", "name"); strings.Contains(out, "tenancy.landlord.dev") {
			t.Errorf("a dry run created CRDs: %s", out)
		}
	})

	// The store's claim binds to a volume made for it, as a cluster without a provisioner would
	// offer one.
	kubectl(t, "apply", "-f", writeFile(t, "volume.yaml", decode(t, `apiVersion: v1
kind: PersistentVolume
metadata: {name: landlord-secrets}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOncePod]
  storageClassName: ""
  claimRef: {namespace: landlord-system, name: landlord-secrets}
  hostPath: {path: /var/lib/install-test/landlord-secrets}
`)))

	// A release of the chart as it was, with its CRDs in crds/: Helm created them (config/crd
	// verbatim) without its ownership metadata, and never counted them as the release's.
	crdsDir := filepath.Join(dir, "crds")
	if err := os.MkdirAll(crdsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "create", "-f", writeFile(t, filepath.Join("crds", "crds.yaml"), decode(t, run(t, nil, kubectlBin, "kustomize", filepath.Join(root, "config", "crd")))))

	t.Run("CRDs an older chart created from crds/ are refused by helm install, then adopted once labelled and annotated as docs/upgrading.md says", func(t *testing.T) {
		_, err := runErr(env, helmBin, "install", "landlord", chart, "--namespace", "landlord-system")
		if err == nil || !strings.Contains(err.Error(), "invalid ownership metadata") {
			t.Fatalf("helm install over CRDs Helm did not template: %v; want a refusal for invalid ownership metadata", err)
		}
		// docs/upgrading.md, "From a chart whose CRDs sat in crds/".
		kubectl(t, append(append([]string{"label", "crd"}, policy.CRDNames...), "app.kubernetes.io/managed-by=Helm", "--overwrite")...)
		kubectl(t, append(append([]string{"annotate", "crd"}, policy.CRDNames...),
			"meta.helm.sh/release-name=landlord", "meta.helm.sh/release-namespace=landlord-system", "--overwrite")...)
	})

	t.Run("the chart with its defaults installs with helm, owns the CRDs, and its Deployment becomes Available", func(t *testing.T) {
		helm(t, "install", "landlord", chart, "--namespace", "landlord-system", "--wait", "--timeout", "3m")
		kubectl(t, "wait", "--for=condition=Established", "crd", "--all", "--timeout=1m")
		for _, name := range policy.CRDNames {
			// Helm's upgrade of a CRD writes its labels: the chart's version label proves it.
			if got := kubectl(t, "get", "crd", name, "-o", "jsonpath={.metadata.labels.helm\\.sh/chart}"); got != "landlord-"+strings.TrimPrefix(releaseVersion(t), "v") {
				t.Errorf("CRD %s has helm.sh/chart %q: the release did not take it over", name, got)
			}
		}
		kubectl(t, "-n", "landlord-system", "wait", "--for=condition=Available", "deployment/landlord-controller-manager", "--timeout=2m")
		release := object{}
		if err := sigsyaml.Unmarshal([]byte(helm(t, "status", "landlord", "--namespace", "landlord-system", "-o", "json")), &release); err != nil {
			t.Fatal(err)
		}
		if status := field(release, "info", "status"); status != "deployed" {
			t.Errorf("helm status %v, want deployed", status)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("helm uninstall removes the operator and keeps the CRDs, the store's claim, the roles tenants are bound to and their isolation", func(t *testing.T) {
		helm(t, "uninstall", "landlord", "--namespace", "landlord-system", "--wait", "--timeout", "2m")
		crds := strings.Fields(kubectl(t, "get", "crd", "-o", "name"))
		var want []string
		for _, name := range policy.CRDNames {
			want = append(want, "customresourcedefinition.apiextensions.k8s.io/"+name)
		}
		if slices.Sort(crds); !slices.Equal(crds, slices.Sorted(slices.Values(want))) {
			t.Errorf("CRDs after uninstall: %v, want Landlord's: %v", crds, want)
		}
		if phase := kubectl(t, "-n", "landlord-system", "get", "pvc", "landlord-secrets", "-o", "jsonpath={.status.phase}"); phase != "Bound" {
			t.Errorf("the store's claim is %q after uninstall, want kept and Bound", phase)
		}
		for _, role := range []string{"landlord-tenant-admin", "landlord-tenant-operator", "landlord-tenant-viewer"} {
			if out, err := runErr(env, kubectlBin, "get", "clusterrole", role, "--ignore-not-found", "-o", "name"); err != nil || strings.TrimSpace(out) != "clusterrole.rbac.authorization.k8s.io/"+role {
				t.Errorf("ClusterRole %s after uninstall: %q, %v; want it kept, as every tenant's RoleBindings name it", role, out, err)
			}
		}
		// Every tenant's isolation rests on the admission policies: what a tenant could create
		// while they were gone would outlive a reinstall.
		for _, kept := range [][]string{
			{"get", "validatingadmissionpolicy", policy.IngressHosts},
			{"get", "validatingadmissionpolicybinding", policy.IngressHosts},
			{"get", "validatingadmissionpolicy", policy.ComponentObjects},
		} {
			if out, err := runErr(env, kubectlBin, append(kept, "--ignore-not-found", "-o", "name")...); err != nil || out == "" {
				t.Errorf("kubectl %s: %q, %v; want it kept", strings.Join(kept, " "), out, err)
			}
		}
		for _, gone := range [][]string{
			{"-n", "landlord-system", "get", "deployment", "landlord-controller-manager"},
			{"get", "clusterrole", "landlord-manager"},
		} {
			if out, err := runErr(env, kubectlBin, append(gone, "--ignore-not-found", "-o", "name")...); err != nil || out != "" {
				t.Errorf("kubectl %s: %q, %v; want it gone", strings.Join(gone, " "), out, err)
			}
		}
	})

	t.Run("dist/install.yaml for an image applies with server-side apply and its Deployment rolls out", func(t *testing.T) {
		installer := filepath.Join(dir, "dist", "install.yaml")
		run(t, nil, filepath.Join(root, "hack", "build-installer.sh"), "registry.example.com/landlord:v9.9.9", installer)
		data, err := os.ReadFile(installer)
		if err != nil {
			t.Fatal(err)
		}
		objects := decode(t, string(data))
		kinds := map[string]int{}
		for _, obj := range objects {
			kinds[str(obj["kind"])]++
		}
		if kinds["CustomResourceDefinition"] != len(policy.CRDNames) || kinds["Deployment"] != 1 || kinds["ClusterRole"] == 0 || kinds["ValidatingAdmissionPolicy"] == 0 {
			t.Fatalf("the installer holds %v; want the CRDs, RBAC, policies and the Deployment", kinds)
		}
		// The tenant roles the uninstall kept carry Helm's managed-by label, owned by Helm: moving
		// from the chart to the installer takes them over.
		out := kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", installer)
		if n := strings.Count(out, "serverside-applied"); n != len(objects) {
			t.Errorf("%d of the installer's %d objects applied:\n%s", n, len(objects), out)
		}
		kubectl(t, "-n", "landlord-system", "rollout", "status", "deployment/landlord-controller-manager", "--timeout=2m")
		if image := kubectl(t, "-n", "landlord-system", "get", "deployment", "landlord-controller-manager", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); image != "registry.example.com/landlord:v9.9.9" {
			t.Errorf("the Deployment runs %q, want the installer's image", image)
		}
		if names := strings.Fields(kubectl(t, "get", "-f", installer, "-o", "name")); len(names) != len(objects) {
			t.Errorf("%d of the installer's %d objects exist", len(names), len(objects))
		}
	})
}
