package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// The operator's cache selects on Landlord's managed-by label, so a tenant putting it
// on its own Secrets or ConfigMaps would fill the operator's memory. Only the operator sets,
// changes or removes Landlord's labels in tenant namespaces, on any object and in any pod or
// claim template Kubernetes' controllers copy labels from; those controllers, which copy the
// labels of what the operator made, may.
func TestOnlyTheOperatorSetsLandlordsLabelsInTenantNamespaces(t *testing.T) {
	createTenant(t, newTenant("iso-labels", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "labels-admin"}}
	}))
	const ns = "tenant-iso-labels"
	ctx := context.Background()
	admin := impersonate(t, "labels-admin")
	managed := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}
	waitForRefusal(t, admin, policy.ManagedLabels, labeled(&corev1.Secret{}, ns, "probe", managed))

	refused := []struct {
		name string
		obj  client.Object
	}{
		{"a Secret labeled managed-by landlord", labeled(&corev1.Secret{}, ns, "managed-secret", managed)},
		{"a ConfigMap labeled managed-by landlord", labeled(&corev1.ConfigMap{}, ns, "managed-config", managed)},
		{"a Secret carrying Landlord's tenant label", labeled(&corev1.Secret{}, ns, "tenant-secret", map[string]string{tenancyv1alpha1.TenantLabel: "iso-labels"})},
		{"a ConfigMap carrying a label of Landlord's prefix", labeled(&corev1.ConfigMap{}, ns, "prefixed", map[string]string{"tenancy.landlord.dev/anything": "x"})},
		{"a Deployment whose pods would be labeled managed-by landlord", func() client.Object {
			d := deployment(ns)
			d.Spec.Template.Labels = map[string]string{"app": "web", tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}
			return d
		}()},
		{"a CronJob whose jobs would be labeled with Landlord's tenant label", &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
			Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{tenancyv1alpha1.TenantLabel: "iso-labels"}},
				Spec:       batchv1.JobSpec{Template: restrictedPodTemplate()},
			}},
		}},
	}
	for _, tc := range refused {
		t.Run(tc.name+" is refused, saying what to do", func(t *testing.T) {
			err := admin.Create(ctx, tc.obj)
			NewWithT(t).Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			NewWithT(t).Expect(err.Error()).To(ContainSubstring("only Landlord's operator sets, changes or removes Landlord's labels in " + ns))
		})
	}

	admitted := []struct {
		name string
		obj  client.Object
	}{
		{"a Secret labeled managed-by another tool", labeled(&corev1.Secret{}, ns, "helm-secret", map[string]string{tenancyv1alpha1.ManagedByLabel: "Helm"})},
		{"a ConfigMap with labels of its own", labeled(&corev1.ConfigMap{}, ns, "own-config", map[string]string{"app": "web"})},
		{"a Deployment whose pods carry labels of their own", deployment(ns)},
	}
	for _, tc := range admitted {
		t.Run(tc.name+" is admitted", func(t *testing.T) {
			NewWithT(t).Expect(admin.Create(ctx, tc.obj)).To(Succeed())
		})
	}

	t.Run("adding Landlord's label to a tenant's own ConfigMap is refused, and its other labels stay editable", func(t *testing.T) {
		g := NewWithT(t)
		cm := &corev1.ConfigMap{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "own-config"}, cm)).To(Succeed())
		cm.Labels[tenancyv1alpha1.ManagedByLabel] = tenancyv1alpha1.ManagedByValue
		g.Expect(apierrors.IsForbidden(admin.Update(ctx, cm))).To(BeTrue())
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "own-config"}, cm)).To(Succeed())
		cm.Labels["tier"] = "frontend"
		g.Expect(admin.Update(ctx, cm)).To(Succeed())
	})

	t.Run("the operator sets Landlord's labels, and no one else changes or removes them", func(t *testing.T) {
		g := NewWithT(t)
		made := labeled(&corev1.ConfigMap{}, ns, "landlord-made", managed)
		g.Expect(operatorClient(t).Create(ctx, made)).To(Succeed())
		for _, patch := range []string{
			fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, tenancyv1alpha1.ManagedByLabel),
			fmt.Sprintf(`{"metadata":{"labels":{%q:"someone-else"}}}`, tenancyv1alpha1.ManagedByLabel),
			fmt.Sprintf(`{"metadata":{"labels":{%q:"iso-other"}}}`, tenancyv1alpha1.TenantLabel),
		} {
			err := admin.Patch(ctx, named(&corev1.ConfigMap{}, ns, "landlord-made"), client.RawPatch(types.MergePatchType, []byte(patch)))
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "patch %s: %v", patch, err)
		}
		g.Expect(admin.Patch(ctx, named(&corev1.ConfigMap{}, ns, "landlord-made"),
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"web"}}}`)))).To(Succeed(), "other labels stay editable")
	})

	t.Run("Kubernetes' controllers copy Landlord's labels onto what they create", func(t *testing.T) {
		// The EndpointSlice controller labels a Service's slices with the Service's labels.
		slices := impersonate(t, "system:serviceaccount:kube-system:endpointslice-controller")
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "web-copied", Labels: managed},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
		NewWithT(t).Expect(slices.Create(ctx, slice, client.DryRunAll)).To(Succeed())
	})

	t.Run("an object a tenant creates is never in the operator's cache", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(admin.Create(ctx, labeled(&corev1.Secret{}, ns, "tenant-own", nil))).To(Succeed())
		g.Expect(apierrors.IsForbidden(admin.Create(ctx, labeled(&corev1.Secret{}, ns, "tenant-labeled", managed)))).To(BeTrue())
		// The operator's own Secret, written after the tenant's, shows the cache has seen
		// everything before it.
		g.Expect(operatorClient(t).Create(ctx, labeled(&corev1.Secret{}, ns, "operator-own", managed))).To(Succeed())
		g.Eventually(func() error {
			return op.GetCache().Get(ctx, client.ObjectKey{Namespace: ns, Name: "operator-own"}, &corev1.Secret{})
		}).WithTimeout(timeout).Should(Succeed())
		cached := &corev1.SecretList{}
		g.Expect(op.GetCache().List(ctx, cached, client.InNamespace(ns))).To(Succeed())
		for _, s := range cached.Items {
			g.Expect(s.Name).NotTo(BeElementOf("tenant-own", "tenant-labeled", "helm-secret"), "the operator caches a tenant's Secret")
		}
		g.Expect(apierrors.IsNotFound(op.GetCache().Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-own"}, &corev1.Secret{}))).To(BeTrue())
	})
}

// labeled is obj in the namespace, with the name and labels.
func labeled[T client.Object](obj T, namespace, name string, labels map[string]string) T {
	obj.SetNamespace(namespace)
	obj.SetName(name)
	if labels != nil {
		copied := make(map[string]string, len(labels))
		for k, v := range labels {
			copied[k] = v
		}
		obj.SetLabels(copied)
	}
	return obj
}

// restrictedPodTemplate is a pod template that meets the restricted Pod Security Standard.
func restrictedPodTemplate() corev1.PodTemplateSpec {
	pod := restrictedPod("", "")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	return corev1.PodTemplateSpec{Spec: pod.Spec}
}
