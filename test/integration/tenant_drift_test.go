package integration

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/testenv"
)

// additiveEdit is a change a cluster administrator makes beside Landlord's fields, leaving every
// field Landlord set in place, which nevertheless switches isolation off.
type additiveEdit struct {
	name   string
	kind   string
	object client.Object
	// patch is a merge patch, or a JSON patch when it starts with '['.
	patch string
	// undone checks the live object carries nothing of the edit.
	undone func(g Gomega, obj client.Object)
}

func driftRepairs(g Gomega, kind string) float64 {
	v, err := testenv.OperatorMetric("landlord_drift_repairs_total", map[string]string{"kind": kind})
	g.Expect(err).NotTo(HaveOccurred())
	return v
}

// expectRepaired makes the edit as manager, and expects it undone, the manager's ownership gone,
// the repair counted, and a DriftRepaired event about regarding (a Tenant, or the object itself)
// naming the object and the manager.
func expectRepaired(t *testing.T, e additiveEdit, manager, regardingKind, regardingName string) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	patch := client.RawPatch(types.MergePatchType, []byte(e.patch))
	if strings.HasPrefix(e.patch, "[") {
		patch = client.RawPatch(types.JSONPatchType, []byte(e.patch))
	}
	before := driftRepairs(g, e.kind)
	g.Expect(k8s.Patch(ctx, e.object, patch, client.FieldOwner(manager))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(e.object), e.object)).To(Succeed())
		e.undone(g, e.object)
		for _, f := range e.object.GetManagedFields() {
			g.Expect(f.Manager).NotTo(Equal(manager), "the edit's manager still owns fields")
		}
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func() float64 { return driftRepairs(g, e.kind) }).WithTimeout(timeout).Should(BeNumerically(">", before))
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(k8s.List(ctx, events)).To(Succeed())
		var notes []string
		for _, ev := range events.Items {
			if ev.Reason == writes.ReasonDriftRepaired && ev.Regarding.Kind == regardingKind && ev.Regarding.Name == regardingName {
				notes = append(notes, ev.Note)
			}
		}
		g.Expect(notes).To(ContainElement(And(ContainSubstring(e.object.GetName()), ContainSubstring(manager))))
	}).WithTimeout(timeout).Should(Succeed())
}

// A field added to an isolation object beside Landlord's switches isolation off as surely as a
// changed one, so drift repair compares whole objects, not the fields Landlord set. Each edit
// below, made by an administrator under a field manager of their own, is removed within
// seconds, counted in landlord_drift_repairs_total and reported as a DriftRepaired event on the
// tenant naming who made it.
func TestAdditiveEditsToTheIsolationObjectsAreReverted(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("drifting", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "alice"}}
	}))
	const ns = "tenant-drifting"
	edits := []additiveEdit{
		{
			// (A scopeSelector is refused by the API server itself: the quota always caps
			// NodePort and LoadBalancer services, which no scope applies to.)
			name: "a limit added to the quota beside Landlord's", kind: "ResourceQuota",
			object: named(&corev1.ResourceQuota{}, ns, resources.QuotaName),
			patch:  `{"spec":{"hard":{"count/configmaps":"0"}}}`,
			undone: func(g Gomega, obj client.Object) {
				g.Expect(obj.(*corev1.ResourceQuota).Spec.Hard).NotTo(HaveKey(corev1.ResourceName("count/configmaps")))
			},
		},
		{
			name: "an allow-all ingress rule on the default-deny policy", kind: "NetworkPolicy",
			object: named(&networkingv1.NetworkPolicy{}, ns, resources.DefaultDenyPolicy),
			patch:  `{"spec":{"ingress":[{}]}}`,
			undone: func(g Gomega, obj client.Object) {
				g.Expect(obj.(*networkingv1.NetworkPolicy).Spec.Ingress).To(BeEmpty())
			},
		},
		{
			name: "an extra selector key that takes every pod out of the default-deny policy", kind: "NetworkPolicy",
			object: named(&networkingv1.NetworkPolicy{}, ns, resources.DefaultDenyPolicy),
			patch:  `{"spec":{"podSelector":{"matchLabels":{"nobody":"matches"}}}}`,
			undone: func(g Gomega, obj client.Object) {
				g.Expect(obj.(*networkingv1.NetworkPolicy).Spec.PodSelector.MatchLabels).To(BeEmpty())
			},
		},
		{
			name: "a subject added to a tenant role binding", kind: "RoleBinding",
			object: named(&rbacv1.RoleBinding{}, ns, resources.AdminRole),
			patch:  `{"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"alice"},{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"mallory"}]}`,
			undone: func(g Gomega, obj client.Object) {
				g.Expect(obj.(*rbacv1.RoleBinding).Subjects).To(Equal([]rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}}))
			},
		},
	}
	for _, e := range edits {
		t.Run(e.name+" is removed, counted and reported", func(t *testing.T) {
			expectRepaired(t, e, "mallory-edit", "Tenant", "drifting")
		})
	}

	t.Run("a scopeSelector that would narrow the quota is refused by the API server itself", func(t *testing.T) {
		// The quota always caps NodePort and LoadBalancer services, which no scope applies to.
		err := k8s.Patch(ctx, named(&corev1.ResourceQuota{}, ns, resources.QuotaName),
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"scopeSelector":{"matchExpressions":[{"scopeName":"Terminating","operator":"Exists"}]}}}`)), client.FieldOwner("mallory-edit"))
		NewWithT(t).Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
	})

	t.Run("a repaired tenant is converged: a resync makes no request", func(t *testing.T) {
		waitIdle(t)
		before := op.Requests.Snapshot()
		resync(t, "drifting")
		waitIdle(t)
		made := tenantRequests(op.Requests.Snapshot().Sub(before))
		NewWithT(t).Expect(made.Total()).To(BeZero(), "requests: %s", made)
	})
}
