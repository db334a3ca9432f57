package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// The test operator allows components to render Gadgets, so that a Gadget reaches the question
// whether the operator may watch the kind, rather than stopping at the allowlist.
func init() {
	opConfig.Components.AllowedKinds = append(opConfig.Components.AllowedKinds,
		metav1.GroupKind{Group: "kinds.example.com", Kind: "Gadget"}, metav1.GroupKind{Group: "kinds.example.com", Kind: "Widget"})
}

// gadgetCRD is a kind the operator's role does not grant: nothing in config/rbac names it.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition { return exampleCRD("Gadget") }

// exampleCRD is a namespaced kind of kinds.example.com that holds anything.
func exampleCRD(kind string) *apiextensionsv1.CustomResourceDefinition {
	singular := strings.ToLower(kind)
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: singular + "s.kinds.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kinds.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: singular + "s", Singular: singular, Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

const gadgetManifests = `apiVersion: kinds.example.com/v1
kind: Gadget
metadata:
  name: gadget
spec:
  size: 1
`

const settingsManifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  organization: {{ .Tenant.Organization | quote }}
`

// An informer on a kind the operator may not list never syncs, and waiting for it while holding
// the lock every other tenant's components wait on would hold them all. A component rendering
// such a kind stalls that one tenant, naming the kind, and every other tenant goes on.
func TestAKindTheOperatorMayNotWatchStallsOnlyItsTenant(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	installCRD(t, gadgetCRD())
	publish(t, "gadget", "1.0.0", gadgetManifests, "")
	publish(t, "settings", "1.0.0", settingsManifests, "")

	blocked := newTenant("kinds-gadget", pin("gadget", "1.0.0", ""))
	g.Expect(k8s.Create(ctx, blocked)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, blocked.Name) })

	t.Run("the tenant rendering the kind stalls with a message naming it", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			got := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: blocked.Name}, got)).To(Succeed())
			c := condition(got, tenancyv1alpha1.StalledCondition)
			g.Expect(c).NotTo(BeNil(), "conditions: %+v", got.Status.Conditions)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(And(ContainSubstring("gadgets.kinds.example.com"), ContainSubstring("may not")))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("another tenant's component rolls out meanwhile", func(t *testing.T) {
		createTenant(t, newTenant("kinds-settings", pin("settings", "1.0.0", "")))
	})
}

// A kind the operator may watch but not write is no better than one it may not watch: every
// apply would be refused, and retried for ever as a failure the next attempt might mend. The
// tenant stalls instead, naming the kind and what the operator may not do with it.
func TestAKindTheOperatorMayWatchButNotWriteStallsItsTenant(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	installCRD(t, exampleCRD("Widget"))
	read := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "landlord-test-widgets-read"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"kinds.example.com"}, Resources: []string{"widgets"}, Verbs: []string{"list", "watch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: read.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: read.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: testenv.OperatorUser}},
	}
	for _, obj := range []client.Object{read, binding} {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	}
	publish(t, "widget", "1.0.0", strings.ReplaceAll(gadgetManifests, "Gadget", "Widget"), "")
	name := "kinds-widget"
	g.Expect(k8s.Create(ctx, newTenant(name, pin("widget", "1.0.0", "")))).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, name) })

	msg := waitComponentsStalled(t, name, tenancyv1alpha1.ReasonKindNotAllowed)
	g.Expect(msg).To(And(ContainSubstring("widgets.kinds.example.com"), ContainSubstring("may not get, create, patch and delete")))
}

// RBAC, NetworkPolicies, quotas and limit ranges in the tenant namespace are what the tenant's
// roles promise it never controls, so a component must not render them. A template
// rendering a kind components may not render stalls its tenant, naming the kind and saying how to
// allow it, or that it never can be; nothing of that component is applied.
func TestAComponentRenderingARefusedKindStallsItsTenant(t *testing.T) {
	cases := []struct {
		name, kind string
		object     string
		want       []string
	}{
		{
			name: "a Role", kind: "Role",
			object: "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: grab\nrules:\n- apiGroups: ['']\n  resources: [resourcequotas]\n  verbs: ['*']\n",
			want:   []string{"Role grab", "may never render Role.rbac.authorization.k8s.io"},
		},
		{
			name: "a NetworkPolicy", kind: "NetworkPolicy",
			object: "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: open\nspec:\n  podSelector: {}\n  ingress: [{}]\n",
			want:   []string{"NetworkPolicy open", "may never render NetworkPolicy.networking.k8s.io"},
		},
		{
			name: "a ResourceQuota", kind: "ResourceQuota",
			object: "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: more\nspec:\n  hard: {pods: '1000'}\n",
			want:   []string{"ResourceQuota more", "may never render ResourceQuota"},
		},
		{
			name: "a LimitRange", kind: "LimitRange",
			object: "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: none\nspec:\n  limits: []\n",
			want:   []string{"LimitRange none", "may never render LimitRange"},
		},
		{
			name: "a Pod", kind: "Pod",
			object: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bare\nspec:\n  containers: [{name: c, image: busybox}]\n",
			want:   []string{"Pod bare", "not among the kinds components may render", "components.allowedKinds"},
		},
		{
			name: "a Namespace", kind: "Namespace",
			object: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: escape\n",
			want:   []string{"Namespace escape is cluster-scoped"},
		},
	}
	for i, tc := range cases {
		t.Run("a template rendering "+tc.name+" stalls its tenant, and applies nothing", func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			g := NewWithT(t)
			comp := fmt.Sprintf("refused-%d", i)
			// A ConfigMap first, so that the refused kind is not the first object applied.
			publish(t, comp, "1.0.0", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: before\n---\n"+tc.object, "")
			name := fmt.Sprintf("kinds-refused-%d", i)
			g.Expect(k8s.Create(ctx, newTenant(name, pin(comp, "1.0.0", "")))).To(Succeed())
			t.Cleanup(func() { deleteTenant(t, name) })

			msg := waitComponentsStalled(t, name, tenancyv1alpha1.ReasonKindNotAllowed)
			g.Expect(msg).To(ContainSubstring("component " + comp + " version 1.0.0"))
			for _, w := range tc.want {
				g.Expect(msg).To(ContainSubstring(w))
			}
			err := k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.NamespaceName(name), Name: "before"}, &corev1.ConfigMap{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the component's ConfigMap was applied: %v", err)
		})
	}
}
