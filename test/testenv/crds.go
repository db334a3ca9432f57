package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// InstallPreviousTenantCRD replaces the Tenant CRD with the previous release's, which lacks
// spec.suspend and status.lastHandledReconcileAt: the cluster a Helm upgrade leaves when it
// upgrades the operator but, as Helm does, not the chart's crds/. It returns once the API
// server drops spec.suspend from a Tenant.
func (e *Env) InstallPreviousTenantCRD(ctx context.Context) error {
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "test", "testenv", "testdata", "tenants-crd-previous-release.yaml"))
	if err != nil {
		return err
	}
	previous := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, previous); err != nil {
		return fmt.Errorf("decoding the previous Tenant CRD: %w", err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(previous)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetAPIVersion(apiextensionsv1.SchemeGroupVersion.String())
	obj.SetKind("CustomResourceDefinition")
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		return err
	}
	crds := dyn.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	current, err := crds.Get(ctx, previous.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(current.GetResourceVersion())
	if _, err := crds.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("installing the previous Tenant CRD: %w", err)
	}
	// The API server serves a CRD's new schema a moment after the update is stored.
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "crd-probe-"},
			Spec:       tenancyv1alpha1.TenantSpec{Organization: "Probe", Email: "ops@probe.example.com", Suspend: true},
		}
		if err := e.AdminClient.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, nil
		}
		return !probe.Spec.Suspend, nil
	})
}

// RemoveCRDs deletes Landlord's CRDs of the plurals named (those a release added, for a
// cluster whose operator was upgraded before its CRDs), and returns once the API server no
// longer serves them.
func (e *Env) RemoveCRDs(ctx context.Context, plurals ...string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(e.Admin)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		return err
	}
	crds := dyn.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	for _, p := range plurals {
		name := p + "." + tenancyv1alpha1.GroupVersion.Group
		if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting CRD %s: %w", name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := dc.ServerResourcesForGroupVersion(tenancyv1alpha1.GroupVersion.String())
		if err != nil {
			return false, nil
		}
		for _, r := range list.APIResources {
			if slices.Contains(plurals, r.Name) {
				return false, nil
			}
		}
		return true, nil
	})
}
