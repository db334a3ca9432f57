package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// Labels of Landlord's prefix on a namespace say what it is to Landlord (a tenant's, its node
// pool, its shard), and in earlier releases let a namespace reach every tenant's pods; the
// allowance annotations say what a tenant may do, and another records the node pool its pods
// were placed on. A user who may edit namespaces, short of a cluster administrator, may not
// add, change or remove any of them; the operator may.
func TestOnlyTheOperatorSetsLandlordsLabelsOnNamespaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	createTenant(t, newTenant("iso-nslabels", func(t *tenancyv1alpha1.Tenant) { t.Spec.NodePool = "pool-nslabels" }))
	waitReady(t, "iso-nslabels")
	const tenantNS, plainNS = "tenant-iso-nslabels", "iso-nslabels-team"
	g := NewWithT(t)
	g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plainNS}})).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, named(&corev1.Namespace{}, "", plainNS))
		waitNamespaceGone(t, plainNS)
	})
	// A platform engineer who may create and edit namespaces, as many clusters allow a team lead.
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "iso-nslabels-editor"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create", "update", "patch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "iso-nslabels-editor"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ns-editor"}},
	}
	for _, obj := range []client.Object{role, binding} {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
	}
	editor := impersonate(t, "ns-editor")
	// edit patches the metadata field (labels, annotations) of namespace ns as the editor, as a
	// dry run when asked.
	edit := func(field, ns, values string) func(dryRun bool) error {
		return func(dryRun bool) error {
			var opts []client.PatchOption
			if dryRun {
				opts = append(opts, client.DryRunAll)
			}
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"`+field+`":`+values+`}}`))
			return editor.Patch(ctx, named(&corev1.Namespace{}, "", ns), patch, opts...)
		}
	}
	relabel := func(ns, labels string) func(dryRun bool) error { return edit("labels", ns, labels) }

	refused := []struct {
		name string
		do   func(dryRun bool) error
	}{
		{"labelling a namespace tenancy.landlord.dev/platform=true", relabel(plainNS, `{"tenancy.landlord.dev/platform":"true"}`)},
		{"labelling a namespace as a tenant's", relabel(plainNS, `{"`+tenancyv1alpha1.TenantLabel+`":"iso-nslabels"}`)},
		{"moving a tenant namespace to another node pool", relabel(tenantNS, `{"`+tenancyv1alpha1.NodePoolLabel+`":"pool-other"}`)},
		{"removing a tenant namespace's node pool", relabel(tenantNS, `{"`+tenancyv1alpha1.NodePoolLabel+`":null}`)},
		{"letting a tenant's pods tolerate the control plane's taint by its namespace's annotation",
			edit("annotations", tenantNS, `{"`+tenancyv1alpha1.TolerationsAnnotation+`":"node-role.kubernetes.io/control-plane"}`)},
		{"changing which node pool a tenant namespace's pods were placed on, which would have them all deleted",
			edit("annotations", tenantNS, `{"`+tenancyv1alpha1.PodsPoolAnnotation+`":"pool-other"}`)},
		{"creating a namespace with a label of Landlord's prefix", func(dryRun bool) error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "iso-nslabels-new", Labels: map[string]string{"tenancy.landlord.dev/anything": "x"}}}
			var opts []client.CreateOption
			if dryRun {
				opts = append(opts, client.DryRunAll)
			}
			return editor.Create(ctx, ns, opts...)
		}},
	}
	for _, tc := range refused {
		t.Run(tc.name+" is refused, saying what to do", func(t *testing.T) {
			g := NewWithT(t)
			// The API server acts on a policy the operator has just written a moment later.
			g.Eventually(func() error { return tc.do(true) }).WithTimeout(timeout).
				Should(MatchError(ContainSubstring("ValidatingAdmissionPolicy '" + policy.NamespaceLabels + "'")))
			err := tc.do(false)
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("only Landlord's operator adds, changes or removes labels tenancy.landlord.dev/*"))
		})
	}

	t.Run("a label of the editor's own on a namespace is admitted", func(t *testing.T) {
		NewWithT(t).Expect(relabel(plainNS, `{"team":"web"}`)(false)).To(Succeed())
	})
	t.Run("the operator's own labels on the tenant namespace are still in place", func(t *testing.T) {
		ns := namespace(t, "iso-nslabels")
		NewWithT(t).Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.NodePoolLabel, "pool-nslabels"))
		NewWithT(t).Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.TenantLabel, "iso-nslabels"))
	})
}
