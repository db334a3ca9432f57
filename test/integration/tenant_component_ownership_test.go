package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/policy"
)

// The objects Landlord renders for a tenant's components are the platform's, as its quota and
// roles are: a tenant admin, who may edit every Deployment of its own, cannot change, relabel or
// delete them. A tenant admin used to mark Landlord's Deployment healthy (the health annotation
// came back in the next apply's answer, and its component then counted as rolled out, deciding
// its own rollout wave), or add to its pod template to make it fail a rollout on purpose. The
// objects the workloads make (pods, ReplicaSets) stay the tenant's to restart, and the
// platform's administrator may still change anything.
func TestTenantUsersCannotChangeLandlordsComponentObjects(t *testing.T) {
	ctx := context.Background()
	publish(t, "owned", "1.0.0", webManifests, `{"replicas": 1}`)
	createTenant(t, newTenant("owned-acme", pin("owned", "1.0.0", ""), func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "Group", Name: "oidc:owned-acme.admins"}}
	}))
	rolledOut(t, "owned-acme", "web")
	ns := opConfig.NamespaceName("owned-acme")
	admin := impersonate(t, "alice", "oidc:owned-acme.admins")
	own := deployment(ns)
	own.Name = "tenants-own"
	NewWithT(t).Expect(admin.Create(ctx, own)).To(Succeed())

	merge := func(doc string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(doc)) }
	healthy := merge(`{"metadata":{"annotations":{"` + apply.HealthAnnotation + `":"{\"ready\":true}"}}}`)
	envPatch := merge(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example.com/owned:1.0.0","env":[{"name":"CRASH","value":"1"}]}]}}}}`)
	redirect := merge(`{"spec":{"selector":{"app":"tenants-own"}}}`)
	expectAttempts(t, []attempt{
		{"a tenant admin marking Landlord's Deployment healthy", false, func() error {
			return admin.Patch(ctx, named(&appsv1.Deployment{}, ns, "web"), healthy)
		}},
		{"a tenant admin adding to the pod template of Landlord's Deployment", false, func() error {
			return admin.Patch(ctx, named(&appsv1.Deployment{}, ns, "web"), envPatch)
		}},
		{"a tenant admin pointing Landlord's Service at pods of its own", false, func() error {
			return admin.Patch(ctx, named(&corev1.Service{}, ns, "web"), redirect)
		}},
		{"a tenant admin deleting Landlord's Service", false, func() error {
			return admin.Delete(ctx, named(&corev1.Service{}, ns, "web"))
		}},
		{"a tenant admin changing a Deployment of its own", true, func() error {
			return admin.Patch(ctx, named(&appsv1.Deployment{}, ns, own.Name), healthy)
		}},
		{"a tenant admin restarting a pod of Landlord's Deployment", true, func() error {
			pods := &corev1.PodList{}
			if err := admin.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"}); err != nil {
				return err
			}
			for _, p := range pods.Items {
				if len(p.OwnerReferences) > 0 && p.OwnerReferences[0].Kind == "ReplicaSet" {
					return admin.Delete(ctx, &p, client.DryRunAll)
				}
			}
			return apierrors.NewNotFound(corev1.Resource("pods"), "web-*")
		}},
		{"the platform's administrator changing Landlord's Deployment", true, func() error {
			return k8s.Patch(ctx, named(&appsv1.Deployment{}, ns, "web"), healthy, client.DryRunAll)
		}},
	}, policy.ComponentObjects)
}
