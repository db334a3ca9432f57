package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/resources"
)

// The operator's cache keeps a tenant's objects as their metadata and a digest of their content.
// These are the promises that rest on it: the body is gone from memory, a controller writing an
// object's status costs the operator nothing, and an edit is still found and repaired.
func TestTheCacheKeepsATenantsObjectsAsMetadataAndADigest(t *testing.T) {
	ctx := context.Background()
	const name, ns = "digested", "tenant-digested"
	createTenant(t, newTenant(name, func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Operators = []tenancyv1alpha1.Subject{{Kind: "User", Name: "dora"}}
	}))
	waitReady(t, name)

	t.Run("a tenant's network policy is cached without its spec, with a digest in its place", func(t *testing.T) {
		g := NewWithT(t)
		cached := &networkingv1.NetworkPolicy{}
		g.Expect(op.GetCache().Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.DefaultDenyPolicy}, cached)).To(Succeed())
		g.Expect(apply.CachedDigest(cached)).NotTo(BeEmpty())
		g.Expect(cached.Annotations).To(BeEmpty(), "the applied digest is kept in the cache's record, with no annotations map")
		g.Expect(cached.Spec.PolicyTypes).To(BeEmpty())
		live := &networkingv1.NetworkPolicy{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.DefaultDenyPolicy}, live)).To(Succeed())
		g.Expect(live.Spec.PolicyTypes).NotTo(BeEmpty(), "the API server's object has its spec")
		g.Expect(apply.CachedDigest(live)).To(BeEmpty(), "the digest is the cache's, never the server's")
		g.Expect(live.Annotations).To(HaveKey(apply.HashAnnotation))
		// A read ahead of the cache is remembered by this digest, worked out from the API
		// server's JSON rather than the watch's protobuf: the two must agree.
		read := &unstructured.Unstructured{}
		read.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.DefaultDenyPolicy}, read)).To(Succeed())
		g.Expect(read.GetResourceVersion()).To(Equal(cached.ResourceVersion), "the policy changed while it was compared")
		typed := &networkingv1.NetworkPolicy{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(read.Object, typed)).To(Succeed())
		g.Expect(apply.ContentDigest(typed)).To(Equal(apply.CachedDigest(cached)))
		g.Expect(cached.UID).To(BeEmpty(), "the cache kept the UID of an object it holds without its body")
		g.Expect(live.UID).NotTo(BeEmpty())
	})

	// A delete of what the cache holds without a UID (a shared secret's copy no one shares any
	// more, a component's object no version renders) looks the name up first: it removes the
	// tenant's object standing there, however often it was written since it was read (a tenant
	// may scale a Deployment in a loop), and never one the tenant does not control.
	t.Run("an object the cache holds without its UID is deleted only while the tenant controls it", func(t *testing.T) {
		g := NewWithT(t)
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
		elsewhere := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "uidless-reads"}}
		g.Expect(k8s.Create(ctx, elsewhere)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, elsewhere) })
		key := client.ObjectKey{Namespace: elsewhere.Name, Name: "pruned"}
		owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(tenant, tenancyv1alpha1.GroupVersion.WithKind("Tenant"))}}}
		g.Expect(k8s.Create(ctx, owned)).To(Succeed())
		read := owned.DeepCopy()
		digest, err := apply.ContentDigest(read)
		g.Expect(err).NotTo(HaveOccurred())
		apply.KeepInCache(read, digest)
		g.Expect(read.UID).To(BeEmpty(), "kept as the cache keeps it")

		owned.Data = map[string]string{"written": "since"}
		g.Expect(k8s.Update(ctx, owned)).To(Succeed())
		deleted, err := writes.DeleteIfControlled(ctx, k8s, k8s, read, tenant)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(deleted).To(BeTrue(), "the tenant's object, written since it was read, was kept")
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key, &corev1.ConfigMap{}))).To(BeTrue())

		foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		g.Expect(k8s.Create(ctx, foreign)).To(Succeed())
		deleted, err = writes.DeleteIfControlled(ctx, k8s, k8s, read, tenant)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(deleted).To(BeFalse(), "someone else's object under the name was deleted")
		g.Expect(k8s.Get(ctx, key, &corev1.ConfigMap{})).To(Succeed())
		g.Expect(k8s.Delete(ctx, foreign)).To(Succeed())

		// The tenant's, already being deleted and held by a finalizer: no second delete.
		held := owned.DeepCopy()
		held.ResourceVersion, held.UID, held.Finalizers = "", "", []string{"example.com/hold"}
		g.Expect(k8s.Create(ctx, held)).To(Succeed())
		g.Expect(k8s.Delete(ctx, held)).To(Succeed())
		deleted, err = writes.DeleteIfControlled(ctx, k8s, k8s, read, tenant)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(deleted).To(BeFalse(), "a delete was sent for an object already being deleted")
		g.Expect(k8s.Get(ctx, key, held)).To(Succeed())
		held.Finalizers = nil
		g.Expect(k8s.Update(ctx, held)).To(Succeed())
	})

	t.Run("the quota controller counting a pod costs the operator no request", func(t *testing.T) {
		g := NewWithT(t)
		waitIdle(t)
		before := op.Requests.Snapshot()
		reconciles := tenantReconciles.of(name)
		g.Expect(impersonate(t, "dora").Create(ctx, restrictedPod(ns, "counted"))).To(Succeed())
		// kube-controller-manager writes the quota's status; the event reaches the tenant.
		g.Eventually(func(g Gomega) {
			quota := &corev1.ResourceQuota{}
			g.Expect(op.GetCache().Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, quota)).To(Succeed())
			g.Expect(quota.Status.Used.Pods().Value()).To(BeEquivalentTo(1))
		}).WithTimeout(timeout).Should(Succeed())
		g.Eventually(func() int { return tenantReconciles.of(name) }).WithTimeout(timeout).Should(BeNumerically(">", reconciles))
		waitIdle(t)
		made := tenantRequests(op.Requests.Snapshot().Sub(before))
		g.Expect(made.Total()).To(BeZero(), "requests made after a status write: %s", made)
	})

	t.Run("a field removed by hand moves the digest: the quota is read whole and repaired", func(t *testing.T) {
		g := NewWithT(t)
		waitIdle(t)
		before := op.Requests.Snapshot()
		quota := &corev1.ResourceQuota{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, quota)).To(Succeed())
		want := quota.Spec.Hard[corev1.ResourcePods]
		// A removal leaves no other field manager behind: only the digest shows it.
		delete(quota.Spec.Hard, corev1.ResourcePods)
		g.Expect(k8s.Update(ctx, quota)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, quota)).To(Succeed())
			g.Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourcePods, want))
		}).WithTimeout(timeout).Should(Succeed())
		waitIdle(t)
		made := tenantRequests(op.Requests.Snapshot().Sub(before))
		// Once for the edit; once more at most, when the quota controller's status write of the
		// edited quota reaches the cache after Landlord's repair was answered.
		g.Expect(made["GET resourcequotas"]).To(BeNumerically(">=", 1), "the edited quota was not read whole: %s", made)
		g.Expect(made["GET resourcequotas"]).To(BeNumerically("<=", 2), "%s", made)
	})
}
