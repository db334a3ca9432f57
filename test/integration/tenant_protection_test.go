package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/testenv"
)

// operatorClient acts as the operator's ServiceAccount, the one identity Landlord's policies
// let set the labels that carry meaning.
func operatorClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.As(testenv.OperatorUser), client.Options{Scheme: tenancyv1alpha1.Scheme()})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// crdClient is an administrator's client that knows CustomResourceDefinitions.
func crdClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(env.Admin, client.Options{Scheme: scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// installCRD creates a CRD, deletes it when the test ends, and waits until the API server
// serves it.
func installCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	crds := crdClient(t)
	NewWithT(t).Expect(crds.Create(ctx, crd)).To(Succeed())
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crd) })
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(crds.Get(ctx, client.ObjectKeyFromObject(crd), crd)).To(Succeed())
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		}
		g.Expect(established).To(BeTrue())
	}).WithTimeout(timeout).Should(Succeed())
}

// Deleting a Tenant (a file removed from Git and pruned by Flux, a kubectl delete in
// the wrong context) takes a customer's namespace and application down, so an Active or Frozen
// tenant is deleted only when it is Archived first or the deletion is confirmed by name.
func TestDeletingAnActiveTenantIsRefused(t *testing.T) {
	ctx := context.Background()
	for state, article := range map[tenancyv1alpha1.TenantState]string{tenancyv1alpha1.StateActive: "an", tenancyv1alpha1.StateFrozen: "a"} {
		t.Run(article+" "+string(state)+" tenant is not deleted, and the refusal says how", func(t *testing.T) {
			g := NewWithT(t)
			name := "protect-" + strings.ToLower(string(state))
			createTenant(t, newTenant(name, func(t *tenancyv1alpha1.Tenant) { t.Spec.State = state }))
			err := k8s.Delete(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}})
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting a %s tenant: %v", state, err)
			g.Expect(err.Error()).To(And(ContainSubstring("state: Archived"), ContainSubstring(tenancyv1alpha1.DeletionConfirmationAnnotation+": "+name)))

			// A confirmation naming another tenant (copied from another file) confirms nothing.
			annotate(t, name, tenancyv1alpha1.DeletionConfirmationAnnotation, "someone-else")
			g.Expect(apierrors.IsForbidden(k8s.Delete(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(BeTrue())
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{})).To(Succeed())
		})
	}

	t.Run("a customer's tenant carrying a pool label no pool set is not deleted as a spare", func(t *testing.T) {
		// A pool label set by hand before the label policy was installed: the tenant is no
		// pool's spare (no pool controls it), so its deletion needs what any other's does.
		g := NewWithT(t)
		labeled := newTenant("protect-hand-labeled", func(t *tenancyv1alpha1.Tenant) {
			t.Labels = map[string]string{tenancyv1alpha1.PoolLabel: "pool-by-hand"}
		})
		g.Expect(operatorClient(t).Create(ctx, labeled)).To(Succeed())
		t.Cleanup(func() { deleteTenant(t, labeled.Name) })
		err := k8s.Delete(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: labeled.Name}}, client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting a hand-labelled Active tenant: %v", err)
	})

	t.Run("an Archived tenant is deleted", func(t *testing.T) {
		g := NewWithT(t)
		createTenant(t, newTenant("protect-archived"))
		setState(t, "protect-archived", tenancyv1alpha1.StateArchived)
		g.Expect(k8s.Delete(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "protect-archived"}})).To(Succeed())
		waitTenantGone(t, "protect-archived")
	})

	t.Run("an Active tenant whose deletion is confirmed by name is deleted", func(t *testing.T) {
		g := NewWithT(t)
		createTenant(t, newTenant("protect-confirmed"))
		annotate(t, "protect-confirmed", tenancyv1alpha1.DeletionConfirmationAnnotation, "protect-confirmed")
		g.Expect(k8s.Delete(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "protect-confirmed"}})).To(Succeed())
		waitTenantGone(t, "protect-confirmed")
	})
}

// Deleting a CRD deletes every object of its kind, so each of Landlord's CRDs says so to Helm
// and Flux and its deletion is refused while the protection policy is installed. The CRDs are
// read from config/crd/bases, the directory controller-gen writes and the cluster installs, so
// a new kind is checked the day it is added. Deletions are tried as dry runs: admission judges
// them all the same, and nothing is lost if it lets one through.
func TestLandlordsCRDsAreProtected(t *testing.T) {
	ctx := context.Background()
	names := generatedCRDNames(t)
	for _, crdName := range names {
		t.Run(crdName+" is kept by Helm and Flux and its deletion is refused", func(t *testing.T) {
			g := NewWithT(t)
			crds := crdClient(t)
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(crds.Get(ctx, client.ObjectKey{Name: crdName}, crd)).To(Succeed())
			g.Expect(crd.Annotations).To(HaveKeyWithValue(tenancyv1alpha1.HelmResourcePolicyAnnotation, "keep"))
			g.Expect(crd.Annotations).To(HaveKeyWithValue(tenancyv1alpha1.FluxPruneAnnotation, "disabled"))
			g.Eventually(func() bool {
				return apierrors.IsForbidden(crds.Delete(ctx, crd, client.DryRunAll))
			}).WithTimeout(timeout).Should(BeTrue())
			err := crds.Delete(ctx, crd, client.DryRunAll)
			g.Expect(err).To(MatchError(ContainSubstring("landlord-crd-protection")), "the refusal names the binding to remove to uninstall")
		})
	}
	t.Run("the protection policy names exactly the CRDs Landlord generates", func(t *testing.T) {
		// A CRD the policy does not name is refused by nothing; a name the policy keeps after
		// its kind is gone protects nothing.
		NewWithT(t).Expect(policy.CRDNames).To(ConsistOf(names))
	})
}

// generatedCRDNames are the names of the CRDs in config/crd/bases.
func generatedCRDNames(t *testing.T) []string {
	t.Helper()
	g := NewWithT(t)
	dir := filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")
	files, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, f := range files {
		if f.IsDir() || filepath.Ext(f.Name()) != ".yaml" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, f.Name()))
		g.Expect(err).NotTo(HaveOccurred())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(yaml.Unmarshal(raw, crd)).To(Succeed(), f.Name())
		g.Expect(crd.Name).NotTo(BeEmpty(), "%s holds no named CRD", f.Name())
		names = append(names, crd.Name)
	}
	g.Expect(names).NotTo(BeEmpty(), "no CRD in %s", dir)
	return names
}

// Uninstalling the operator's Helm release, or Flux pruning its kustomization, used to remove
// every admission policy at once: in the gap, any tenant admin could create what the policies
// refuse (an ExternalName Service, an Ingress for another tenant's host, a pod on another pool),
// and it stayed after a reinstall. The policies, their bindings and the tenant roles every
// tenant's RoleBindings name are kept by `helm uninstall` and never pruned by Flux, on the
// server as the operator writes them and in what Landlord ships.
func TestIsolationOutlivesAnUninstall(t *testing.T) {
	ctx := context.Background()
	waitPoliciesApplied(t)
	var objs []client.Object
	objs = append(objs, policy.Objects(policy.Operator{})...)
	for _, role := range resources.ClusterRoles() {
		objs = append(objs, role)
	}
	for _, obj := range objs {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		t.Run(kind+" "+obj.GetName()+" is kept by Helm and never pruned by Flux", func(t *testing.T) {
			g := NewWithT(t)
			live := obj.DeepCopyObject().(client.Object)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
			g.Expect(live.GetAnnotations()).To(And(
				HaveKeyWithValue("helm.sh/resource-policy", "keep"),
				HaveKeyWithValue("kustomize.toolkit.fluxcd.io/prune", "disabled")))
		})
	}
}

// Labels that decide what a tenant is (a pool's spare, a customer's tenant, a claim's)
// are the operator's alone: a pool template cannot carry them, and no one else may add or
// remove them on a Tenant.
func TestLabelsThatCarryMeaningAreTheOperators(t *testing.T) {
	ctx := context.Background()

	t.Run("a pool template carrying a reserved label is refused, naming the field", func(t *testing.T) {
		g := NewWithT(t)
		for _, key := range []string{tenancyv1alpha1.AllocatedLabel, tenancyv1alpha1.PoolLabel, tenancyv1alpha1.ClaimUIDLabel} {
			pool := &tenancyv1alpha1.TenantPool{
				ObjectMeta: metav1.ObjectMeta{Name: "reserved-labels"},
				Spec: tenancyv1alpha1.TenantPoolSpec{Replicas: 1, Template: tenancyv1alpha1.TenantTemplate{
					Labels: map[string]string{key: "true"},
				}},
			}
			err := k8s.Create(ctx, pool, client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a template labelled %s: %v", key, err)
			g.Expect(err.Error()).To(ContainSubstring("spec.template.labels"))
		}
	})

	t.Run("a tenant created with the pool label by anyone but the operator is refused", func(t *testing.T) {
		g := NewWithT(t)
		for _, key := range []string{tenancyv1alpha1.PoolLabel, tenancyv1alpha1.AllocatedLabel, tenancyv1alpha1.ClaimUIDLabel} {
			tenant := newTenant("labels-create", func(t *tenancyv1alpha1.Tenant) { t.Labels = map[string]string{key: "x"} })
			err := k8s.Create(ctx, tenant, client.DryRunAll)
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a tenant labelled %s: %v", key, err)
			g.Expect(err.Error()).To(ContainSubstring(key))
		}
		tenant := newTenant("labels-create", func(t *tenancyv1alpha1.Tenant) {
			t.Labels = map[string]string{tenancyv1alpha1.PoolLabel: "x"}
		})
		g.Expect(operatorClient(t).Create(ctx, tenant, client.DryRunAll)).To(Succeed())
	})

	t.Run("a TenantPool owner reference is added by the operator alone, and anyone may remove one", func(t *testing.T) {
		// A pool's controller reference would make a customer's tenant a spare the pool deletes
		// (with its databases) when it shrinks.
		g := NewWithT(t)
		tenant := newTenant("labels-owner")
		createTenant(t, tenant)
		owned := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(
			`{"metadata":{"ownerReferences":[{"apiVersion":%q,"kind":"TenantPool","name":"some-pool","uid":"0f0f0f0f-0000-4000-8000-000000000001","controller":true}]}}`,
			tenancyv1alpha1.GroupVersion.String())))
		err := k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tenant.Name}}, owned, client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "adding a TenantPool owner: %v", err)
		g.Expect(err.Error()).To(ContainSubstring("TenantPool owner reference"))
		g.Expect(operatorClient(t).Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tenant.Name}}, owned)).To(Succeed())

		// Removing it (as the garbage collector orphaning a pool's tenants does) makes the tenant
		// no spare, the safe way, and is not refused.
		orphaned := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"ownerReferences":null}}`))
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tenant.Name}}, orphaned)).To(Succeed())
	})

	t.Run("a customer's tenant keeps its allocation: no one but the operator removes it", func(t *testing.T) {
		g := NewWithT(t)
		tenant := newTenant("labels-allocated", func(t *tenancyv1alpha1.Tenant) {
			t.Labels = map[string]string{tenancyv1alpha1.AllocatedLabel: "true", tenancyv1alpha1.ClaimUIDLabel: "c0ffee"}
			t.Annotations = map[string]string{tenancyv1alpha1.ClaimAnnotation: "default/signup"}
		})
		g.Expect(operatorClient(t).Create(ctx, tenant)).To(Succeed())
		t.Cleanup(func() { deleteTenant(t, tenant.Name) })

		for _, patch := range []string{
			fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, tenancyv1alpha1.AllocatedLabel),
			fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, tenancyv1alpha1.ClaimUIDLabel),
			fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, tenancyv1alpha1.ClaimAnnotation),
			fmt.Sprintf(`{"metadata":{"labels":{%q:"other-pool"}}}`, tenancyv1alpha1.PoolLabel),
		} {
			err := k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tenant.Name}}, client.RawPatch(types.MergePatchType, []byte(patch)))
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "patch %s: %v", patch, err)
		}
		// Everything else on the tenant stays the administrator's to edit.
		annotate(t, tenant.Name, "example.com/owner", "team-a")
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tenant.Name}, got)).To(Succeed())
		g.Expect(got.IsAllocated()).To(BeTrue())
	})
}
