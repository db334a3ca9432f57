package examples_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	kustomizebuild "github.com/landlord-dev/landlord/hack/kustomize/build"
	"github.com/landlord-dev/landlord/test/argocd"
	"github.com/landlord-dev/landlord/test/testenv"
)

// argoDir is the example, as an Argo CD user's fleet repository.
const argoDir = "examples/argocd"

// argoRepositories maps the repository each Application names to where its content is in this
// checkout: the fleet repository is the example itself, and Landlord's release is this tree.
var argoRepositories = map[string]string{
	"https://git.example.com/platform/fleet.git": argoDir,
	"https://github.com/landlord-dev/landlord":   ".",
}

// inCluster is the cluster Argo CD runs in, as Applications name it.
const inCluster = "https://kubernetes.default.svc"

// argoFieldManager is the field manager Argo CD applies with.
const argoFieldManager = "argocd-controller"

// Argo CD's annotations.
const (
	syncWave       = "argocd.argoproj.io/sync-wave"
	syncOptions    = "argocd.argoproj.io/sync-options"
	compareOptions = "argocd.argoproj.io/compare-options"
	// cascade is the finalizer that makes deleting an Application delete what it applied.
	cascade = "resources-finalizer.argocd.argoproj.io"
)

// application is what the test reads of an Argo CD Application. Whether each field is one Argo CD
// knows is the API server's to say, with testdata/argocd-application-crd.yaml.
type application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Project string `json:"project"`
		Source  struct {
			RepoURL        string `json:"repoURL"`
			TargetRevision string `json:"targetRevision"`
			Path           string `json:"path"`
		} `json:"source"`
		Destination struct {
			Server string `json:"server"`
		} `json:"destination"`
		SyncPolicy struct {
			Automated *struct {
				Prune    bool `json:"prune"`
				SelfHeal bool `json:"selfHeal"`
			} `json:"automated"`
		} `json:"syncPolicy"`
	} `json:"spec"`
	raw []byte
}

// wave is the Application's sync wave, 0 when it has none.
func (a *application) wave() (int, error) {
	w, ok := a.Annotations[syncWave]
	if !ok {
		return 0, nil
	}
	return strconv.Atoi(w)
}

// dir is where the Application's source path is in this checkout.
func (a *application) dir() string {
	return filepath.Join(testenv.RepoRoot(), argoRepositories[a.Spec.Source.RepoURL], filepath.FromSlash(a.Spec.Source.Path))
}

// argoExample is the example's root Application and the Applications it syncs, in sync-wave
// order.
type argoExample struct {
	root *application
	apps []*application
}

func loadApplications(t *testing.T, dir string) []*application {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), argoDir, dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var apps []*application
	for _, file := range files {
		for i, doc := range documents(t, file) {
			app := &application{raw: doc}
			if err := yaml.Unmarshal(doc, app); err != nil {
				t.Fatalf("%s #%d: %v", file, i, err)
			}
			if app.GroupVersionKind() != argoApplicationGVK {
				t.Fatalf("%s #%d is a %s, which this test does not know how to check", file, i, app.GroupVersionKind())
			}
			apps = append(apps, app)
		}
	}
	if len(apps) == 0 {
		t.Fatalf("no Applications in %s/%s", argoDir, dir)
	}
	return apps
}

var argoApplicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

func loadArgoExample(t *testing.T) *argoExample {
	t.Helper()
	roots := loadApplications(t, "bootstrap")
	if len(roots) != 1 {
		t.Fatalf("bootstrap/ holds %d Applications, want the root alone", len(roots))
	}
	ex := &argoExample{root: roots[0], apps: loadApplications(t, "apps")}
	var err error
	sort.SliceStable(ex.apps, func(i, j int) bool {
		wi, ei := ex.apps[i].wave()
		wj, ej := ex.apps[j].wave()
		if ei != nil || ej != nil {
			err = fmt.Errorf("a sync wave is not a number: %v %v", ei, ej)
		}
		return wi < wj
	})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// argoBuild builds a kustomize directory with kustomize's library, as Argo CD's repo server
// does, and returns the objects.
func argoBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := kustomizebuild.Dir(dir)
	if err != nil {
		t.Fatal(err)
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

// options are the options of an Argo CD options annotation, as Argo CD splits them.
func options(obj metav1.Object, annotation string) sets.Set[string] {
	s := sets.New[string]()
	for o := range strings.SplitSeq(obj.GetAnnotations()[annotation], ",") {
		if o = strings.TrimSpace(o); o != "" {
			s.Insert(o)
		}
	}
	return s
}

// The example is checked without a cluster first: each failure here names the file to fix.
func TestTheArgoCDExampleIsWellFormed(t *testing.T) {
	root := testenv.RepoRoot()
	ex := loadArgoExample(t)

	t.Run("the root syncs apps/ of the fleet repository, and its waves order CRDs, operator, templates, tenants", func(t *testing.T) {
		if ex.root.Spec.Source.RepoURL != "https://git.example.com/platform/fleet.git" || ex.root.Spec.Source.Path != "apps" {
			t.Errorf("the root syncs %s %s, want the fleet repository's apps", ex.root.Spec.Source.RepoURL, ex.root.Spec.Source.Path)
		}
		var names []string
		waves := map[int]string{}
		for _, app := range ex.apps {
			names = append(names, app.Name)
			w, _ := app.wave()
			// Two Applications in one wave start together: the second waits for nothing.
			if other, ok := waves[w]; ok {
				t.Errorf("%s and %s share sync wave %d", other, app.Name, w)
			}
			waves[w] = app.Name
		}
		if want := []string{"landlord-crds", "landlord", "component-templates", "tenants"}; !slices.Equal(names, want) {
			t.Errorf("the Applications sync in the order %v, want %v", names, want)
		}
	})

	t.Run("every kustomize directory in the example builds, argocd-cm with Argo CD's installation", func(t *testing.T) {
		var dirs []string
		err := filepath.WalkDir(filepath.Join(root, argoDir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "kustomization.yaml" {
				dirs = append(dirs, filepath.Dir(path))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(dirs) < 5 {
			t.Fatalf("found %d kustomize directories under %s, want one per Application and argocd-cm: %v", len(dirs), argoDir, dirs)
		}
		for _, dir := range dirs {
			// A Component builds only inside a kustomization that uses it.
			if filepath.Base(dir) == "argocd-cm" {
				if _, err := argocd.ConfigMap(); err != nil {
					t.Error(err)
				}
				continue
			}
			argoBuild(t, dir)
		}
	})

	t.Run("every Application syncs the fleet repository or Landlord's release, in this cluster, from a path that builds", func(t *testing.T) {
		for _, app := range append([]*application{ex.root}, ex.apps...) {
			src := app.Spec.Source
			if _, ok := argoRepositories[src.RepoURL]; !ok || src.TargetRevision == "" {
				t.Errorf("%s: source %s at %q is neither the fleet repository nor a Landlord release", app.Name, src.RepoURL, src.TargetRevision)
				continue
			}
			if app.Spec.Destination.Server != inCluster || app.Namespace != "argocd" || app.Spec.Project == "" {
				t.Errorf("%s: in namespace %q for %q in project %q, want in argocd for the cluster it runs in", app.Name, app.Namespace, app.Spec.Destination.Server, app.Spec.Project)
			}
			if app.Spec.SyncPolicy.Automated == nil || !app.Spec.SyncPolicy.Automated.SelfHeal {
				t.Errorf("%s does not sync itself and heal drift", app.Name)
			}
			if app == ex.root {
				continue
			}
			if _, err := os.Stat(filepath.Join(app.dir(), "kustomization.yaml")); err != nil {
				t.Errorf("%s: path %s: %v", app.Name, src.Path, err)
				continue
			}
			argoBuild(t, app.dir())
		}
	})

	t.Run("no object is in two Applications, and what must outlive its Application is kept", func(t *testing.T) {
		owner := map[string]string{}
		for _, app := range ex.apps {
			prunes := app.Spec.SyncPolicy.Automated != nil && app.Spec.SyncPolicy.Automated.Prune
			cascades := slices.Contains(app.Finalizers, cascade)
			for _, obj := range argoBuild(t, app.dir()) {
				if other, ok := owner[key(obj)]; ok {
					t.Errorf("%s is in both %s and %s: removed from one, it would be pruned", key(obj), other, app.Name)
				}
				owner[key(obj)] = app.Name
				sync := options(obj, syncOptions)
				kept := sync.Has("Prune=false") && sync.Has("Delete=false")
				switch {
				case obj.GetKind() == "CustomResourceDefinition" && !kept:
					t.Errorf("%s may prune or delete the CRD %s (%s: %v): that deletes every object of its kind", app.Name, obj.GetName(), syncOptions, sets.List(sync))
				case obj.GetAnnotations()[tenancyv1alpha1.FluxPruneAnnotation] == "disabled" && !kept:
					t.Errorf("%s may prune or delete %s, which Landlord tells Flux never to prune (%s: %v)", app.Name, key(obj), syncOptions, sets.List(sync))
				case obj.GetKind() == "ComponentTemplate" && (!kept || !options(obj, compareOptions).Has("IgnoreExtraneous")):
					t.Errorf("%s may prune or delete the template %s, or report it OutOfSync once its file is removed: a tenant may still pin it", app.Name, obj.GetName())
				case obj.GetKind() == "Tenant" && (!sync.Has("Delete=false") || sync.Has("Prune=false") || !prunes):
					t.Errorf("%s: tenant %s must be pruned when its file is removed (once Archived) and never deleted with the Application (%s: %v, prune %t)",
						app.Name, obj.GetName(), syncOptions, sets.List(sync), prunes)
				}
			}
			// Only the operator goes with its Application; its protected objects stay.
			if want := app.Name == "landlord"; cascades != want {
				t.Errorf("%s: deleting it deletes what it applied: %t, want %t", app.Name, cascades, want)
			}
		}
	})

	t.Run("every tenant pins a component version the example publishes", func(t *testing.T) {
		published := sets.New[string]()
		var tenants []*unstructured.Unstructured
		for _, app := range ex.apps {
			for _, obj := range argoBuild(t, app.dir()) {
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
			for _, c := range tenant.Spec.Components {
				if !published.Has(c.Name + "-" + c.Version) {
					t.Errorf("tenant %s pins %s %s, which no ComponentTemplate of the example publishes (%v)", tenant.Name, c.Name, c.Version, sets.List(published))
				}
			}
		}
	})

	t.Run("argocd-cm has a health check for every kind with a status the example applies, and for Application", func(t *testing.T) {
		cm, err := argocd.ConfigMap()
		if err != nil {
			t.Fatal(err)
		}
		checks, err := argocd.Checks(cm)
		if err != nil {
			t.Fatal(err)
		}
		need := sets.New(argoApplicationGVK.GroupKind())
		for _, app := range ex.apps {
			for _, obj := range argoBuild(t, app.dir()) {
				if obj.GroupVersionKind().Group == tenancyv1alpha1.GroupVersion.Group && obj.GetKind() != "ComponentTemplate" {
					need.Insert(obj.GroupVersionKind().GroupKind())
				}
			}
		}
		for gk := range need {
			if checks[gk].Script == "" {
				t.Errorf("argocd-cm has no health check for %s", gk)
			}
		}
	})
}

// The example applied to a local API server as Argo CD applies it, with the example's Argo CD
// objects checked against Argo CD's Application schema (the part of it the example uses). Argo
// CD itself does not run here, and neither does the operator: what is checked is what the API
// server decides, so the API server alone runs. Each Application's objects are applied in sync
// wave order, server-side with Argo CD's field manager; then the tenants, which no operator has
// looked at, are Progressing by the Tenant health check, and Argo CD's prune of an Active tenant
// whose file left Git is refused by Landlord's admission policy, as docs/lifecycle.md says.
func TestTheArgoCDExampleAppliesOnALocalCluster(t *testing.T) {
	RegisterTestingT(t)
	ex := loadArgoExample(t)
	testenv.NeedCluster(t)
	env, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
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
	apply := func(g Gomega, obj *unstructured.Unstructured) {
		g.Eventually(func() error {
			return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(argoFieldManager), client.ForceOwnership)
		}).WithTimeout(time.Minute).Should(Succeed(), "applying %s", key(obj))
	}

	// established waits until the API server serves a CRD.
	established := func(g Gomega, name string) {
		g.Eventually(func(g Gomega) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
			g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, live)).To(Succeed())
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, crd)).To(Succeed())
			g.Expect(crd.Status.Conditions).To(ContainElement(And(HaveField("Type", apiextensionsv1.Established), HaveField("Status", apiextensionsv1.ConditionTrue))))
		}).WithTimeout(time.Minute).Should(Succeed(), "CRD %s", name)
	}

	// What Argo CD's installation brings: its namespace and the Application CRD.
	data, err := os.ReadFile(filepath.Join("testdata", "argocd-application-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		t.Fatal(err)
	}
	apply(NewWithT(t), crd)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}); err != nil {
		t.Fatal(err)
	}
	established(NewWithT(t), crd.GetName())

	t.Run("the root, its Applications and argocd-cm are objects Argo CD accepts", func(t *testing.T) {
		g := NewWithT(t)
		for _, app := range append([]*application{ex.root}, ex.apps...) {
			u := &unstructured.Unstructured{}
			g.Expect(yaml.Unmarshal(app.raw, &u.Object)).To(Succeed())
			apply(g, u)
		}
		cm, err := argocd.ConfigMap()
		g.Expect(err).NotTo(HaveOccurred())
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
		g.Expect(err).NotTo(HaveOccurred())
		apply(g, &unstructured.Unstructured{Object: content})

		// The schema refuses what Argo CD would not know, so the applies above prove something.
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(ex.apps[0].raw, &u.Object)).To(Succeed())
		g.Expect(unstructured.SetNestedField(u.Object, true, "spec", "syncPolicy", "automated", "prun")).To(Succeed())
		err = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(argoFieldManager), client.ForceOwnership, client.DryRunAll)
		g.Expect(err).To(MatchError(ContainSubstring(".spec.syncPolicy.automated.prun: field not declared in schema")))
	})

	var tenants []*unstructured.Unstructured
	for _, app := range ex.apps {
		w, _ := app.wave()
		objs := argoBuild(t, app.dir())
		t.Run(fmt.Sprintf("Argo CD syncs %s in wave %d", app.Name, w), func(t *testing.T) {
			g := NewWithT(t)
			// Argo CD applies namespaces and CRDs before what needs them, then RBAC, then the rest.
			slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return stage(a) - stage(b) })
			for _, obj := range objs {
				apply(g, obj)
				if obj.GetKind() == "Tenant" {
					tenants = append(tenants, obj)
				}
			}
			for _, obj := range objs {
				if obj.GetKind() == "CustomResourceDefinition" {
					established(g, obj.GetName())
				}
			}
		})
		if t.Failed() {
			t.FailNow()
		}
	}

	t.Run("a tenant no operator has looked at is Progressing, never Healthy", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(tenants).NotTo(BeEmpty())
		for _, obj := range tenants {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(obj.GroupVersionKind())
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
			h, err := argocd.HealthOf(live)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h).To(Equal(argocd.Health{Status: argocd.Progressing, Message: "Landlord has not reconciled generation 1 yet"}), "tenant %s", live.GetName())
		}
	})

	// Argo CD prunes with a foreground deletion.
	prune := func(name string, opts ...client.DeleteOption) error {
		tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
		return c.Delete(ctx, tenant, append(opts, client.PropagationPolicy(metav1.DeletePropagationForeground))...)
	}
	name := tenants[0].GetName()

	t.Run("Argo CD's prune of an Active tenant whose file left Git is refused, saying what to do, and the tenant stays", func(t *testing.T) {
		g := NewWithT(t)
		// The policy is in force once the API server has read it: until then a dry run passes.
		g.Eventually(func() error { return prune(name, client.DryRunAll) }).WithTimeout(time.Minute).Should(HaveOccurred())
		err := prune(name)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the prune was not refused: %v", err)
		g.Expect(err.Error()).To(And(
			ContainSubstring("ValidatingAdmissionPolicy 'landlord-tenant-deletion'"),
			ContainSubstring("tenant "+name+" is Active: deleting it would delete its namespace and stop its application now. Set spec.state: Archived first"),
		))
		live := &tenancyv1alpha1.Tenant{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, live)).To(Succeed())
		g.Expect(live.DeletionTimestamp).To(BeNil())
	})

	t.Run("once the tenant is Archived in Git, the prune goes through", func(t *testing.T) {
		g := NewWithT(t)
		archive := []byte(`{"spec":{"state":"Archived"}}`)
		g.Expect(c.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, archive))).To(Succeed())
		g.Expect(prune(name)).To(Succeed())
	})
}
