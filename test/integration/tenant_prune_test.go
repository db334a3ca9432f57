package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// twoSettings renders settingsManifests' ConfigMap, which stays, and, while .Values.extra is
// set, one that goes.
const twoSettings = settingsManifests + `{{- if .Values.extra }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra-settings
data:
  level: debug
{{- end }}
`

// A pruned object is deleted whether or not the operator's cache holds it. The cache may not
// have seen it yet (the reconcile before created it, and the watch is behind), or may have lost
// it (someone took the label the cache selects on off): either way, forgetting it from the
// inventory would leave it in the tenant's namespace for good.
func TestAPrunedObjectTheCacheDoesNotHoldIsDeletedAllTheSame(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	const name = "prune-uncached"
	publish(t, "settings", "1.0.0", twoSettings, `{"extra": true}`)
	publish(t, "settings", "1.1.0", twoSettings, `{"extra": false}`)
	createTenant(t, newTenant(name, pin("settings", "1.0.0", "")))
	waitReady(t, name)
	extra := named(&corev1.ConfigMap{}, opConfig.NamespaceName(name), "extra-settings")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(extra), extra)).To(Succeed())

	// Suspended, the tenant gets no write of Landlord's that would put the label back. Only a
	// principal the isolation trusts may take one of Landlord's labels off.
	setSuspend(g, name, true)
	waitSuspended(t, name)
	trusted := impersonate(t, "system:serviceaccount:velero:velero", "system:masters")
	g.Expect(trusted.Patch(ctx, extra, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+tenancyv1alpha1.ManagedByLabel+`":null}}}`)))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(op.GetCache().Get(ctx, client.ObjectKeyFromObject(extra), &corev1.ConfigMap{}))
	}).WithTimeout(timeout).Should(BeTrue(), "the cache still holds the ConfigMap")

	g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"suspend":false,"components":[{"name":"settings","version":"1.1.0"}]}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := waitReady(t, name)
		g.Expect(got.Status.Components).To(HaveLen(1))
		g.Expect(got.Status.Components[0].Version).To(Equal("1.1.0"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(extra), &corev1.ConfigMap{}))
	}).WithTimeout(timeout).Should(BeTrue(), "the ConfigMap the new version no longer renders is still there")
}
