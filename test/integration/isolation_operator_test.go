package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// Defence in depth: the operator's RBAC lets it write Secrets, ConfigMaps and
// workloads in every namespace, since tenant namespaces come and go. Admission confines its
// namespaced writes to tenant namespaces and its own (the template and credentials namespaces),
// so a bug or a stolen token cannot reach kube-system or the platform's namespaces. Events and
// leases go where they must (a cluster-scoped Tenant's events go to default).
func TestTheOperatorWritesOnlyInTenantNamespacesAndItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	createTenant(t, newTenant("iso-confine"))
	const tenantNS, elsewhere, lookalike = "tenant-iso-confine", "iso-confine-platform", "iso-confine-lookalike"
	for name, labels := range map[string]map[string]string{
		elsewhere: nil,
		// Labeled as a tenant's, but not named as the tenant's namespace is.
		lookalike: {tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.TenantLabel: "iso-confine"},
	} {
		NewWithT(t).Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})).To(Succeed())
		t.Cleanup(func() {
			_ = k8s.Delete(ctx, named(&corev1.Namespace{}, "", name))
			waitNamespaceGone(t, name)
		})
	}
	NewWithT(t).Expect(k8s.Create(ctx, labeled(&corev1.Secret{}, elsewhere, "platform-secret", nil))).To(Succeed())
	operator := operatorClient(t)
	waitForRefusal(t, operator, policy.OperatorNamespaces, labeled(&corev1.Secret{}, elsewhere, "probe", nil))

	refused := []struct {
		name      string
		namespace string
		do        func() error
	}{
		{"creating a Secret in a namespace that is no tenant's", elsewhere, func() error {
			return operator.Create(ctx, labeled(&corev1.Secret{}, elsewhere, "written", nil), client.DryRunAll)
		}},
		{"creating a ConfigMap in kube-system", "kube-system", func() error {
			return operator.Create(ctx, labeled(&corev1.ConfigMap{}, "kube-system", "written", nil), client.DryRunAll)
		}},
		{"creating a Secret in a namespace labeled as a tenant's but not named as one", lookalike, func() error {
			return operator.Create(ctx, labeled(&corev1.Secret{}, lookalike, "written", nil), client.DryRunAll)
		}},
		{"changing a Secret in a namespace that is no tenant's", elsewhere, func() error {
			return operator.Patch(ctx, named(&corev1.Secret{}, elsewhere, "platform-secret"),
				client.RawPatch(types.MergePatchType, []byte(`{"stringData":{"password":"stolen"}}`)), client.DryRunAll)
		}},
		{"deleting a Secret in a namespace that is no tenant's", elsewhere, func() error {
			return operator.Delete(ctx, named(&corev1.Secret{}, elsewhere, "platform-secret"), client.DryRunAll)
		}},
	}
	for _, tc := range refused {
		t.Run("the operator "+tc.name+" is refused, naming the namespace", func(t *testing.T) {
			err := tc.do()
			NewWithT(t).Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			NewWithT(t).Expect(err.Error()).To(And(ContainSubstring("ValidatingAdmissionPolicy '"+policy.OperatorNamespaces+"'"),
				ContainSubstring("not in "+tc.namespace+":")))
		})
	}

	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "iso-confine-platform-disk"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/platform"}},
		},
	}
	NewWithT(t).Expect(k8s.Create(ctx, pv)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, pv) })
	clusterRefused := []struct {
		name, want string
		do         func() error
	}{
		{"deleting a namespace that is no tenant's", "namespace " + elsewhere, func() error {
			return operator.Delete(ctx, named(&corev1.Namespace{}, "", elsewhere), client.DryRunAll)
		}},
		{"relabelling a namespace that is no tenant's", "namespace " + elsewhere, func() error {
			return operator.Patch(ctx, named(&corev1.Namespace{}, "", elsewhere),
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"landlord"}}}`)), client.DryRunAll)
		}},
		{"deleting a volume that is no tenant's", "PersistentVolume " + pv.Name, func() error {
			return operator.Delete(ctx, named(&corev1.PersistentVolume{}, "", pv.Name), client.DryRunAll)
		}},
	}
	for _, tc := range clusterRefused {
		t.Run("the operator "+tc.name+" is refused, naming it", func(t *testing.T) {
			err := tc.do()
			NewWithT(t).Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			NewWithT(t).Expect(err.Error()).To(And(ContainSubstring("ValidatingAdmissionPolicy '"+policy.OperatorNamespaces+"'"), ContainSubstring(tc.want)))
		})
	}

	admitted := []struct {
		name string
		do   func() error
	}{
		{"the operator creating a Secret in a tenant namespace", func() error {
			return operator.Create(ctx, labeled(&corev1.Secret{}, tenantNS, "written", nil), client.DryRunAll)
		}},
		{"the operator creating a Secret in the template namespace", func() error {
			return operator.Create(ctx, labeled(&corev1.Secret{}, opConfig.Secrets.TemplateNamespace, "written", nil), client.DryRunAll)
		}},
		{"the operator creating a Secret in the credentials namespace", func() error {
			return operator.Create(ctx, labeled(&corev1.Secret{}, opConfig.Databases.CredentialsNamespace, "written", nil), client.DryRunAll)
		}},
		{"the operator reporting an event about a Tenant in default", func() error {
			return operator.Create(ctx, &eventsv1.Event{
				ObjectMeta:          metav1.ObjectMeta{Namespace: "default", Name: "iso-confine.event"},
				EventTime:           metav1.NewMicroTime(time.Now()),
				ReportingController: "landlord", ReportingInstance: "landlord-test",
				Action: "Reconcile", Reason: "Probe", Type: corev1.EventTypeNormal,
				Regarding: corev1.ObjectReference{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: "Tenant", Name: "iso-confine"},
			}, client.DryRunAll)
		}},
		{"the operator relabelling a tenant namespace", func() error {
			return operator.Patch(ctx, named(&corev1.Namespace{}, "", tenantNS),
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"landlord"}}}`)), client.DryRunAll)
		}},
		{"an administrator changing a Secret in a namespace that is no tenant's", func() error {
			return k8s.Patch(ctx, named(&corev1.Secret{}, elsewhere, "platform-secret"),
				client.RawPatch(types.MergePatchType, []byte(`{"stringData":{"password":"rotated"}}`)), client.DryRunAll)
		}},
	}
	for _, tc := range admitted {
		t.Run(tc.name+" is admitted", func(t *testing.T) {
			NewWithT(t).Expect(tc.do()).To(Succeed())
		})
	}
}
