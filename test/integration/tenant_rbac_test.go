package integration

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/resources"
)

// Tenants act through the roles Landlord binds, as real (impersonated) users against the real
// RBAC authorizer: they can run their application, and they can never loosen their isolation.
func TestTenantUsersCannotEditTheirIsolation(t *testing.T) {
	createTenant(t, newTenant("isolated", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "Group", Name: "oidc:isolated.admins"}}
		t.Spec.Access.Operators = []tenancyv1alpha1.Subject{{Kind: "User", Name: "olga"}}
		t.Spec.Access.Viewers = []tenancyv1alpha1.Subject{{Kind: "User", Name: "victor"}}
	}))
	createTenant(t, newTenant("neighbour"))
	const ns = "tenant-isolated"
	ctx := context.Background()

	admin := impersonate(t, "alice", "oidc:isolated.admins")
	operatorUser := impersonate(t, "olga")
	viewer := impersonate(t, "victor")
	labelPatch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`))
	hardPatch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hard":{"pods":"5000"}}}`))

	expectAttempts(t, []attempt{
		{"an admin creates a config map", true, func() error {
			return admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}})
		}},
		{"an admin creates a secret", true, func() error {
			return admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-key"}})
		}},
		{"an operator creates a deployment", true, func() error { return operatorUser.Create(ctx, deployment(ns)) }},
		{"a viewer lists pods", true, func() error { return viewer.List(ctx, &corev1.PodList{}, client.InNamespace(ns)) }},
		{"an admin raises the quota", false, func() error {
			return admin.Patch(ctx, named(&corev1.ResourceQuota{}, ns, resources.QuotaName), hardPatch)
		}},
		{"an admin deletes the limit range", false, func() error {
			return admin.Delete(ctx, named(&corev1.LimitRange{}, ns, resources.LimitRangeName))
		}},
		{"an admin deletes a managed role binding", false, func() error {
			return admin.Delete(ctx, named(&rbacv1.RoleBinding{}, ns, resources.ViewerRole))
		}},
		{"an admin edits a shared tenant role", false, func() error {
			return admin.Patch(ctx, named(&rbacv1.ClusterRole{}, "", resources.ClusterRoleName(resources.ViewerRole)),
				client.RawPatch(types.JSONPatchType, []byte(`[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}}]`)))
		}},
		{"an admin creates a role of its own", false, func() error {
			return admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"}})
		}},
		{"an admin binds itself to another role", false, func() error {
			return admin.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}},
			})
		}},
		{"an admin deletes the default-deny network policy", false, func() error {
			return admin.Delete(ctx, named(&networkingv1.NetworkPolicy{}, ns, resources.DefaultDenyPolicy))
		}},
		{"an admin relabels the namespace", false, func() error {
			return admin.Patch(ctx, named(&corev1.Namespace{}, "", ns), labelPatch)
		}},
		{"an admin deletes the namespace", false, func() error {
			return admin.Delete(ctx, named(&corev1.Namespace{}, "", ns))
		}},
		{"an admin edits its tenant", false, func() error {
			return admin.Patch(ctx, named(&tenancyv1alpha1.Tenant{}, "", "isolated"),
				client.RawPatch(types.MergePatchType, []byte(`{"spec":{"podSecurity":"baseline"}}`)))
		}},
		{"an admin creates a config map in another tenant's namespace", false, func() error {
			return admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-neighbour", Name: "x"}})
		}},
		{"an operator reads secrets", false, func() error { return operatorUser.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)) }},
		{"an operator creates a role binding", false, func() error {
			return operatorUser.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: resources.ClusterRoleName(resources.AdminRole)},
				Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "olga"}},
			})
		}},
		{"a viewer reads secrets", false, func() error { return viewer.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)) }},
		{"a viewer creates a config map", false, func() error {
			return viewer.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"}})
		}},
	}, "")
}

func impersonate(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	return env.Impersonate(t, user, groups...)
}

func deployment(namespace string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1"}}},
			},
		},
	}
}
