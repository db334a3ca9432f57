package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// The operator's cache holds what carries app.kubernetes.io/managed-by=landlord, in every
// namespace. Anyone who may create Secrets in a namespace of their own used to fill the
// operator's heap with labelled Secrets of a MiB each, which it kept whole (no Tenant controls
// them): an out-of-memory loop would stop repair, claims and purges for the whole fleet. Outside
// tenant namespaces (where landlord-managed-labels holds), only the operator, Kubernetes'
// controllers, the platform's trusted tools and administrators now set the label.
func TestOnlyLandlordLabelsObjectsAsLandlordsOutsideTenantNamespaces(t *testing.T) {
	ctx := context.Background()
	const namespace = "cache-stuffing"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	NewWithT(t).Expect(k8s.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ns) })
	NewWithT(t).Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "eve"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "eve"}},
	})).To(Succeed())
	eve := impersonate(t, "eve")
	managed := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}
	secret := func(name string, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
			Data:       map[string][]byte{"filler": make([]byte, 64<<10)},
		}
	}
	// The operator's policies take a moment to be in force after it starts, and this test may
	// be the suite's first.
	NewWithT(t).Eventually(func() error {
		return eve.Create(ctx, secret("probe", managed), client.DryRunAll)
	}).WithTimeout(timeout).ShouldNot(Succeed())
	own := secret("eves-own", map[string]string{tenancyv1alpha1.ManagedByLabel: "helm"})
	NewWithT(t).Expect(eve.Create(ctx, own)).To(Succeed())

	expectAttempts(t, []attempt{
		{"a namespace editor creating a Secret labelled as Landlord's", false, func() error {
			return eve.Create(ctx, secret("stuffing", managed))
		}},
		{"a namespace editor creating a ConfigMap labelled as Landlord's", false, func() error {
			return eve.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "stuffing", Labels: managed}})
		}},
		{"a namespace editor labelling a Secret of its own as Landlord's", false, func() error {
			return eve.Patch(ctx, named(&corev1.Secret{}, namespace, own.Name),
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+tenancyv1alpha1.ManagedByLabel+`":"`+tenancyv1alpha1.ManagedByValue+`"}}}`)))
		}},
		{"a namespace editor creating a Deployment whose pods Kubernetes would label as Landlord's", false, func() error {
			d := deployment(namespace)
			d.Name = "stuffing"
			d.Spec.Template.Labels = map[string]string{"app": "web", tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}
			return eve.Create(ctx, d)
		}},
		{"a namespace editor creating a CronJob whose Jobs Kubernetes would label as Landlord's", false, func() error {
			return eve.Create(ctx, &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "stuffing"},
				Spec: batchv1.CronJobSpec{Schedule: "@daily", JobTemplate: batchv1.JobTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: managed},
					Spec:       batchv1.JobSpec{Template: restrictedPodTemplate()},
				}},
			})
		}},
		{"a namespace editor creating a Secret managed by another tool", true, func() error {
			return eve.Create(ctx, secret("another-tool", map[string]string{tenancyv1alpha1.ManagedByLabel: "helm"}), client.DryRunAll)
		}},
		{"a namespace editor creating a Deployment of its own", true, func() error {
			return eve.Create(ctx, deployment(namespace), client.DryRunAll)
		}},
		{"the platform's administrator creating a Secret labelled as Landlord's", true, func() error {
			return k8s.Create(ctx, secret("by-the-administrator", managed), client.DryRunAll)
		}},
	}, policy.ManagedByLabel)
}

// The platform's namespaces are named in network.platformNamespaceSelector (here telemetry, by
// network.platformServices, and the default ingress-nginx and monitoring), and every tenant lets
// them in. Where one did not exist, whoever may create namespaces created it and reached every
// tenant's pods. Only a cluster administrator (who may create ClusterRoleBindings) now creates
// a namespace of those names.
func TestOnlyAClusterAdministratorCreatesAPlatformNamespace(t *testing.T) {
	ctx := context.Background()
	creator := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "platform-test-namespace-creator"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"create"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: creator.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: creator.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "self-service"}},
	}
	for _, obj := range []client.Object{creator, binding} {
		NewWithT(t).Expect(k8s.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
	}
	selfService := impersonate(t, "self-service")
	namespace := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	NewWithT(t).Eventually(func() error {
		return selfService.Create(ctx, namespace("telemetry"), client.DryRunAll)
	}).WithTimeout(timeout).ShouldNot(Succeed(), "the operator's policies are in force")
	expectAttempts(t, []attempt{
		{"a user who may create namespaces creating the platform's telemetry namespace", false, func() error {
			return selfService.Create(ctx, namespace("telemetry"), client.DryRunAll)
		}},
		{"a user who may create namespaces creating the platform's monitoring namespace", false, func() error {
			return selfService.Create(ctx, namespace("monitoring"), client.DryRunAll)
		}},
		{"a user who may create namespaces creating one of another name", true, func() error {
			return selfService.Create(ctx, namespace("team-checkout"), client.DryRunAll)
		}},
		{"a cluster administrator creating the platform's telemetry namespace", true, func() error {
			return k8s.Create(ctx, namespace("telemetry"), client.DryRunAll)
		}},
	}, policy.PlatformNamespaces)
}
