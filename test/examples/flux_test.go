// Package examples checks the repository layouts users copy from examples/: that every Flux object
// in them is one Flux accepts, that every kustomize directory builds, and that the whole example,
// applied layer by layer as Flux would, ends with every tenant Ready on a whole local cluster; and
// that the Argo CD example's Applications are ones Argo CD accepts, in sync waves that apply in
// order, with what must outlive them kept (argocd_test.go).
package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

// fluxDir is the example, as a Flux user's fleet repository.
const fluxDir = "examples/flux"

// clusterDir is the directory `flux bootstrap --path` points at: the Flux objects themselves.
const clusterDir = fluxDir + "/clusters/production"

// bootstrapSource is the GitRepository `flux bootstrap` creates for the fleet repository; the
// example uses it without declaring it.
const bootstrapSource = "flux-system"

// sourceDirs maps each GitRepository the example uses to where its content is in this checkout:
// the fleet repository is the example itself, and the pinned Landlord release is this tree.
var sourceDirs = map[string]string{bootstrapSource: fluxDir, "landlord": "."}

// fieldManager is the manager kustomize-controller applies with, so ownership in the test cluster
// looks as it does under Flux.
const fieldManager = "kustomize-controller"

// example is the parsed Flux objects of the example.
type example struct {
	kustomizations map[string]*kustomizev1.Kustomization
	repositories   map[string]*sourcev1.GitRepository
}

// loadExample decodes every object under clusterDir strictly into Flux's typed API, so a
// misspelt or misplaced field fails here rather than in a user's cluster.
func loadExample(t *testing.T) *example {
	t.Helper()
	root := testenv.RepoRoot()
	ex := &example{kustomizations: map[string]*kustomizev1.Kustomization{}, repositories: map[string]*sourcev1.GitRepository{}}
	files, err := filepath.Glob(filepath.Join(root, clusterDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no Flux objects in %s", clusterDir)
	}
	for _, file := range files {
		for i, doc := range documents(t, file) {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s #%d: %v", file, i, err)
			}
			switch meta.GroupVersionKind() {
			case kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind):
				ks := &kustomizev1.Kustomization{}
				if err := yaml.UnmarshalStrict(doc, ks); err != nil {
					t.Fatalf("%s #%d is not a Flux Kustomization: %v", file, i, err)
				}
				ex.kustomizations[ks.Name] = ks
			case sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind):
				repo := &sourcev1.GitRepository{}
				if err := yaml.UnmarshalStrict(doc, repo); err != nil {
					t.Fatalf("%s #%d is not a Flux GitRepository: %v", file, i, err)
				}
				ex.repositories[repo.Name] = repo
			default:
				t.Fatalf("%s #%d is a %s, which this test does not know how to check", file, i, meta.GroupVersionKind())
			}
		}
	}
	return ex
}

// documents splits a YAML file into its non-empty documents.
func documents(t *testing.T, file string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return splitYAML(t, data)
}

func splitYAML(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			docs = append(docs, doc)
		}
	}
}

// dir is where a Kustomization's path is in this checkout.
func (ex *example) dir(ks *kustomizev1.Kustomization) string {
	return filepath.Join(testenv.RepoRoot(), sourceDirs[ks.Spec.SourceRef.Name], filepath.FromSlash(ks.Spec.Path))
}

// order returns the Kustomizations so that each comes after those it depends on, or an error
// naming an unknown dependency or a cycle.
func (ex *example) order() ([]*kustomizev1.Kustomization, error) {
	var out []*kustomizev1.Kustomization
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		ks, ok := ex.kustomizations[name]
		if !ok {
			return fmt.Errorf("%s depends on %s, which the example does not declare", path[len(path)-1], name)
		}
		switch state[name] {
		case 1:
			return fmt.Errorf("dependency cycle: %s", strings.Join(append(path, name), " → "))
		case 2:
			return nil
		}
		state[name] = 1
		for _, dep := range ks.Spec.DependsOn {
			if dep.Namespace != "" && dep.Namespace != ks.Namespace {
				return fmt.Errorf("%s depends on %s/%s, outside the example's namespace", name, dep.Namespace, dep.Name)
			}
			if err := visit(dep.Name, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		out = append(out, ks)
		return nil
	}
	names := make([]string, 0, len(ex.kustomizations))
	for name := range ex.kustomizations {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := visit(name, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kubectl is the local cluster's kubectl, which embeds the kustomize Flux's kustomize-controller
// builds with.
func kubectl() string {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(testenv.RepoRoot(), "bin", "k8s", testenv.KubeVersion)
	}
	return filepath.Join(assets, "kubectl")
}

// build runs `kubectl kustomize dir` and returns the objects.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(kubectl(), "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	for _, doc := range splitYAML(t, out) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		t.Fatalf("%s builds to nothing", dir)
	}
	return objs
}

func key(u *unstructured.Unstructured) string {
	return u.GetObjectKind().GroupVersionKind().GroupKind().String() + " " + u.GetNamespace() + "/" + u.GetName()
}

// The example is checked without a cluster first: each failure here names the file to fix.
func TestTheFluxExampleIsWellFormed(t *testing.T) {
	root := testenv.RepoRoot()
	ex := loadExample(t)

	t.Run("it declares the layers CRDs, operator, templates and tenants", func(t *testing.T) {
		for _, name := range []string{"landlord-crds", "landlord", "component-templates", "tenants"} {
			if ex.kustomizations[name] == nil {
				t.Errorf("no Kustomization %s in %s", name, clusterDir)
			}
		}
	})

	t.Run("every kustomize directory in the example builds", func(t *testing.T) {
		var dirs []string
		err := filepath.WalkDir(filepath.Join(root, fluxDir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "kustomization.yaml" {
				dirs = append(dirs, filepath.Dir(path))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(dirs) < 4 {
			t.Fatalf("found %d kustomize directories under %s, want one per layer: %v", len(dirs), fluxDir, dirs)
		}
		for _, dir := range dirs {
			build(t, dir)
		}
	})

	t.Run("every Kustomization names a known source and an existing path, applies something and waits", func(t *testing.T) {
		for name, ks := range ex.kustomizations {
			ref := ks.Spec.SourceRef
			if ref.Kind != sourcev1.GitRepositoryKind || (ex.repositories[ref.Name] == nil && ref.Name != bootstrapSource) {
				t.Errorf("%s: source %s %s is neither declared in the example nor the bootstrap's %s", name, ref.Kind, ref.Name, bootstrapSource)
				continue
			}
			if _, err := os.Stat(filepath.Join(ex.dir(ks), "kustomization.yaml")); err != nil {
				t.Errorf("%s: path %s of %s: %v", name, ks.Spec.Path, ref.Name, err)
				continue
			}
			build(t, ex.dir(ks))
			// A layer that does not wait lets the next one start before its objects are usable,
			// and dependsOn then orders nothing.
			if !ks.Spec.Wait {
				t.Errorf("%s: wait is not true, so the layers after it may start before it is Ready", name)
			}
		}
	})

	t.Run("dependsOn names resolve and order CRDs, operator, templates, tenants without a cycle", func(t *testing.T) {
		order, err := ex.order()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ks := range order {
			names = append(names, ks.Name)
		}
		want := []string{"landlord-crds", "landlord", "component-templates", "tenants"}
		if !slices.Equal(names, want) {
			t.Errorf("the layers apply in the order %v, want %v", names, want)
		}
	})

	t.Run("no object is applied by two layers, and neither the CRDs nor the secret store are ever pruned", func(t *testing.T) {
		owner := map[string]string{}
		for name, ks := range ex.kustomizations {
			objs := build(t, ex.dir(ks))
			// The namespaces holding a PersistentVolumeClaim (the secret store's): pruning one
			// deletes the claim with it, whatever the claim's own annotation says.
			holdsData := sets.New[string]()
			for _, obj := range objs {
				if obj.GetKind() == "PersistentVolumeClaim" {
					holdsData.Insert(obj.GetNamespace())
				}
			}
			for _, obj := range objs {
				if other, ok := owner[key(obj)]; ok {
					t.Errorf("%s is applied by both %s and %s: the one removed from Git would prune it", key(obj), other, name)
				}
				owner[key(obj)] = name
				kept := !ks.Spec.Prune || obj.GetAnnotations()["kustomize.toolkit.fluxcd.io/prune"] == "disabled"
				switch {
				case obj.GetKind() == "CustomResourceDefinition" && !kept:
					t.Errorf("%s prunes the CRD %s: removing it deletes every object of its kind", name, obj.GetName())
				case obj.GetKind() == "PersistentVolumeClaim" && !kept:
					t.Errorf("%s prunes the claim %s: removing it deletes the data on it", name, key(obj))
				case obj.GetKind() == "Namespace" && holdsData.Has(obj.GetName()) && !kept:
					t.Errorf("%s prunes the namespace %s, and with it the claims in it", name, obj.GetName())
				}
			}
		}
		if len(owner) == 0 {
			t.Fatal("the example applies nothing")
		}
	})

	t.Run("every tenant pins a component version the example publishes", func(t *testing.T) {
		published := sets.New[string]()
		var tenants []*unstructured.Unstructured
		for _, ks := range ex.kustomizations {
			for _, obj := range build(t, ex.dir(ks)) {
				switch obj.GetKind() {
				case "ComponentTemplate":
					published.Insert(obj.GetName())
				case "Tenant":
					tenants = append(tenants, obj)
				}
			}
		}
		if len(tenants) == 0 {
			t.Fatal("the example has no tenants")
		}
		for _, obj := range tenants {
			tenant := &tenancyv1alpha1.Tenant{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, tenant); err != nil {
				t.Fatal(err)
			}
			if len(tenant.Spec.Components) == 0 {
				t.Errorf("tenant %s runs no component: the example should show one rolled out", tenant.Name)
			}
			for _, c := range tenant.Spec.Components {
				if !published.Has(c.Name + "-" + c.Version) {
					t.Errorf("tenant %s pins %s %s, which no ComponentTemplate of the example publishes (%v)", tenant.Name, c.Name, c.Version, sets.List(published))
				}
			}
		}
	})
}

// The example applied to a whole local cluster as Flux applies it: layer after layer in dependsOn
// order, each with kustomize-controller's field manager and forced ownership, and each waited for
// until every object it applied is Current by kstatus, as `wait: true` does. The tenants end
// Ready with their components' Deployments rolled out by kube-controller-manager and their pods
// Running on kwok's nodes.
func TestTheFluxExampleBecomesReadyOnALocalCluster(t *testing.T) {
	RegisterTestingT(t)
	ex := loadExample(t)
	order, err := ex.order()
	if err != nil {
		t.Fatal(err)
	}
	testenv.NeedCluster(t)
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	c := env.AdminClient

	// The cluster's storage for the operator's secret store claim: a cluster without a
	// provisioner offers a volume made for it (a real one has a default StorageClass).
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "landlord-secrets"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
			StorageClassName:       "",
			ClaimRef:               &corev1.ObjectReference{Namespace: "landlord-system", Name: "landlord-secrets"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/landlord-secrets"}},
		},
	}
	if err := c.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}

	var op *testenv.Operator
	t.Cleanup(func() {
		if op != nil {
			if err := op.Stop(); err != nil {
				t.Error(err)
			}
		}
	})
	var tenants []string
	for _, ks := range order {
		objs := build(t, ex.dir(ks))
		t.Run("Flux applies "+ks.Name+" and it becomes Ready", func(t *testing.T) {
			g := NewWithT(t)
			// Flux applies cluster-wide definitions first (CRDs, namespaces, cluster roles), then
			// the rest, so that a namespaced object never races its namespace.
			slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return stage(a) - stage(b) })
			for _, obj := range objs {
				g.Eventually(func() error {
					return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(fieldManager), client.ForceOwnership)
				}).WithTimeout(time.Minute).Should(Succeed(), "applying %s", key(obj))
				if obj.GetKind() == "Tenant" {
					tenants = append(tenants, obj.GetName())
				}
			}
			// The operator's Deployment applies and rolls out on kwok's nodes, whose pods run no
			// container; the operator itself runs in this process, as the shipped ServiceAccount
			// and under the RBAC this layer just applied.
			if slices.ContainsFunc(objs, isOperatorDeployment) {
				dir := t.TempDir()
				store, err := secret.NewFileStore(dir, filepath.Join(dir, "key.json"))
				if err != nil {
					t.Fatal(err)
				}
				if op, err = env.StartOperator(config.Default(), store); err != nil {
					t.Fatal(err)
				}
			}
			for _, obj := range objs {
				g.Eventually(func() (status.Status, error) {
					live := &unstructured.Unstructured{}
					live.SetGroupVersionKind(obj.GroupVersionKind())
					if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
						return "", err
					}
					if err := observed(live); err != nil {
						return "", err
					}
					res, err := status.Compute(live)
					if err != nil {
						return "", err
					}
					return res.Status, nil
				}).WithTimeout(layerTimeout(ks)).Should(Equal(status.CurrentStatus), "%s of %s", key(obj), ks.Name)
			}
		})
		if t.Failed() {
			t.FailNow()
		}
	}

	t.Run("every tenant is Ready with its components rolled out and its pods Running", func(t *testing.T) {
		if len(tenants) < 2 {
			t.Fatalf("the example applied %d tenants, want at least 2", len(tenants))
		}
		cfg := config.Default()
		for _, name := range tenants {
			tenant := &tenancyv1alpha1.Tenant{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, tenant); err != nil {
				t.Fatal(err)
			}
			if len(tenant.Spec.Components) == 0 {
				t.Fatalf("tenant %s has no components", name)
			}
			for _, want := range tenant.Spec.Components {
				i := slices.IndexFunc(tenant.Status.Components, func(s tenancyv1alpha1.ComponentStatus) bool { return s.Name == want.Name })
				if i < 0 || tenant.Status.Components[i].Version != want.Version || !tenant.Status.Components[i].Ready {
					t.Errorf("tenant %s reports component %s as %+v, want version %s ready", name, want.Name, tenant.Status.Components, want.Version)
				}
			}
			ns := cfg.NamespaceName(name)
			deploy := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, deploy); err != nil {
				t.Fatal(err)
			}
			want := *deploy.Spec.Replicas
			if deploy.Status.AvailableReplicas != want || want == 0 {
				t.Errorf("tenant %s: web has %d of %d replicas available", name, deploy.Status.AvailableReplicas, want)
			}
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"}); err != nil {
				t.Fatal(err)
			}
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
					running++
				}
			}
			if running != int(want) {
				t.Errorf("tenant %s: %d web pods Running on a node, want %d", name, running, want)
			}
		}
	})

	t.Run("the tenants layer's health checks hold a new tenant in progress and pass a Ready one", func(t *testing.T) {
		var exprs []kustomize.CustomHealthCheck
		for _, ks := range order {
			for _, e := range ks.Spec.HealthCheckExprs {
				if e.Kind == "Tenant" {
					exprs = append(exprs, e)
				}
			}
		}
		if len(exprs) != 1 {
			t.Fatalf("the example has %d health check expressions for Tenants, want 1", len(exprs))
		}
		fresh := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "tenancy.landlord.dev/v1alpha1", "kind": "Tenant",
			"metadata": map[string]any{"name": "new", "generation": int64(1)}, "spec": map[string]any{},
		}}
		if got := healthOf(t, exprs[0], fresh); got == "current" {
			t.Errorf("a tenant with no status yet is %s, want anything but current", got)
		}
		fresh.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
		if got := healthOf(t, exprs[0], fresh); got != "inProgress" {
			t.Errorf("a tenant whose status has no observed generation is %s, want inProgress", got)
		}
		for _, name := range tenants {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind("Tenant"))
			if err := c.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
				t.Fatal(err)
			}
			if got := healthOf(t, exprs[0], live); got != "current" {
				t.Errorf("Ready tenant %s is %s, want current", name, got)
			}
		}
	})

	t.Run("landlordctl rollout leaves a tenant whose version Git pins alone and writes no tenant", func(t *testing.T) {
		before := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: "globex"}, before); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(t.TempDir(), "landlordctl")
		build := exec.Command("go", "build", "-o", bin, "./cmd/landlordctl")
		build.Dir = testenv.RepoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/landlordctl: %v\n%s", err, out)
		}
		kubeconfig := writeKubeconfig(t, env)
		landlordctl := func(args ...string) string {
			t.Helper()
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("landlordctl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		out := landlordctl("rollout", "--component", "web", "--version", "1.1.0", "--selector", "plan=trial", "--dry-run")
		if want := "skip globex: component web is pinned (it does not set followRollouts)"; !strings.Contains(out, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out)
		}
		out = landlordctl("rollout", "--component", "web", "--version", "1.1.0", "--selector", "plan=trial")
		if want := ": done: 0 of 0 waves released"; !strings.Contains(out, want) {
			t.Errorf("the rollout does not say %q:\n%s", want, out)
		}
		t.Cleanup(func() {
			_ = c.Delete(ctx, &tenancyv1alpha1.ComponentRollout{ObjectMeta: metav1.ObjectMeta{Name: "web-1.1.0"}})
		})
		after := &tenancyv1alpha1.Tenant{}
		if err := c.Get(ctx, client.ObjectKey{Name: "globex"}, after); err != nil {
			t.Fatal(err)
		}
		if after.Generation != before.Generation || after.Spec.Components[0].Version != before.Spec.Components[0].Version {
			t.Errorf("globex changed: generation %d → %d, web %s → %s", before.Generation, after.Generation,
				before.Spec.Components[0].Version, after.Spec.Components[0].Version)
		}
		if got := after.Status.Components[0].Version; got != before.Spec.Components[0].Version {
			t.Errorf("globex runs web %s, want Git's %s", got, before.Spec.Components[0].Version)
		}
	})
}

func writeKubeconfig(t *testing.T, env *testenv.Env) string {
	t.Helper()
	path, err := env.WriteKubeconfig(t.TempDir(), "local")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// stage orders objects the way Flux's server-side apply stages them.
func stage(u *unstructured.Unstructured) int {
	switch u.GetKind() {
	case "CustomResourceDefinition", "Namespace":
		return 0
	case "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Role", "RoleBinding":
		return 1
	}
	return 2
}

func isOperatorDeployment(u *unstructured.Unstructured) bool {
	return u.GetKind() == "Deployment" && u.GetNamespace() == "landlord-system"
}

// layerTimeout is how long a layer may take: its own timeout, as Flux gives it, plus a minute for
// this machine, which runs other tests beside this one.
func layerTimeout(ks *kustomizev1.Kustomization) time.Duration {
	d := 5 * time.Minute
	if ks.Spec.Timeout != nil {
		d = ks.Spec.Timeout.Duration
	}
	return d + time.Minute
}

// observed fails until the controller of a Tenant or Deployment has reported on the object's
// current generation. kstatus counts an object with no status yet as Current, and a wait that
// ended before the operator or kube-controller-manager looked would prove nothing.
func observed(u *unstructured.Unstructured) error {
	switch u.GetKind() {
	case "Tenant", "Deployment":
	default:
		return nil
	}
	got, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if err != nil {
		return err
	}
	if !found || got != u.GetGeneration() {
		return fmt.Errorf("%s: status.observedGeneration is %d, generation %d", key(u), got, u.GetGeneration())
	}
	return nil
}

// healthOf evaluates a Kustomization's health check expressions on an object as Flux's
// kustomize-controller does (github.com/fluxcd/pkg/runtime/cel, RFC 0009): an observed generation
// behind the object's is in progress; then inProgress, failed and current are tried in that order
// on the object's content, parsed rather than compiled against declared variables. An expression
// that cannot be evaluated (an object with no status at all) leaves the status unknown, which
// Flux's wait does not count as current.
func healthOf(t *testing.T, check kustomize.CustomHealthCheck, obj *unstructured.Unstructured) string {
	t.Helper()
	observed, ok, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if err == nil && ok && observed != obj.GetGeneration() {
		return "inProgress"
	}
	env, err := cel.NewEnv(cel.HomogeneousAggregateLiterals(), cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true), cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(),
		ext.Strings(), ext.Sets(), ext.Encoders())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, expr string }{{"inProgress", check.InProgress}, {"failed", check.Failed}, {"current", check.Current}} {
		if c.expr == "" {
			continue
		}
		ast, iss := env.Parse(c.expr)
		if iss.Err() != nil {
			t.Fatalf("%s expression %q: %v", c.name, c.expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(obj.Object)
		if err != nil {
			return "unknown"
		}
		if out.Value() == true {
			return c.name
		}
	}
	return "inProgress"
}
