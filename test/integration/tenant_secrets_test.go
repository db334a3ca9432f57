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
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/test/testenv"
)

// storeShared puts a shared secret into the secret store and syncs the template namespace.
func storeShared(t *testing.T, name, value string, mutate ...func(*corev1.Secret)) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: opConfig.Secrets.TemplateNamespace, Name: name,
			Labels: map[string]string{tenancyv1alpha1.SharedLabel: "true"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte(value)},
	}
	for _, f := range mutate {
		f(s)
	}
	NewWithT(t).Expect(store.Put(context.Background(), s)).To(Succeed())
	op.TemplateSync.Trigger()
}

func unstoreShared(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Expect(store.Delete(context.Background(), opConfig.Secrets.TemplateNamespace, name)).To(Succeed())
	op.TemplateSync.Trigger()
}

// secretValue is the token in a tenant's copy of a secret, or "" when there is none.
func secretValue(g Gomega, tenant, name string) string {
	s := &corev1.Secret{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: opConfig.NamespaceName(tenant), Name: name}, s)
	if apierrors.IsNotFound(err) {
		return ""
	}
	g.Expect(err).NotTo(HaveOccurred())
	return string(s.Data["token"])
}

func TestSharedSecretsReachEveryTenant(t *testing.T) {
	ctx := context.Background()
	tenants := []string{"share-0", "share-1", "share-2"}
	for i, name := range tenants {
		createTenant(t, newTenant(name, func(t *tenancyv1alpha1.Tenant) {
			if i == 0 {
				t.Labels = map[string]string{"plan": "enterprise"}
			}
		}))
	}
	storeShared(t, "api-key", "v1")
	storeShared(t, "enterprise-key", "e1", func(s *corev1.Secret) {
		s.Annotations = map[string]string{tenancyv1alpha1.TenantSelectorAnnotation: "plan=enterprise"}
	})
	storeShared(t, "internal-only", "x", func(s *corev1.Secret) { delete(s.Labels, tenancyv1alpha1.SharedLabel) })
	t.Cleanup(func() {
		for _, n := range []string{"api-key", "enterprise-key", "internal-only"} {
			_ = store.Delete(ctx, opConfig.Secrets.TemplateNamespace, n)
		}
		op.TemplateSync.Trigger()
	})
	// Kinds that are never copied, shared label or not.
	never := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "sa-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
			Type: corev1.SecretTypeServiceAccountToken},
		{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.app.v1"}, Type: "helm.sh/release.v1"},
	}
	for _, s := range never {
		s.Namespace = opConfig.Secrets.TemplateNamespace
		s.Labels = map[string]string{tenancyv1alpha1.SharedLabel: "true"}
		NewWithT(t).Eventually(func() error { return k8s.Create(ctx, s) }).WithTimeout(timeout).Should(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, s) })
	}

	t.Run("a shared secret in the store reaches every tenant", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			for _, name := range tenants {
				g.Expect(secretValue(g, name, "api-key")).To(Equal("v1"))
			}
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a secret with a tenant selector reaches only the tenants it selects", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) { g.Expect(secretValue(g, "share-0", "enterprise-key")).To(Equal("e1")) }).WithTimeout(timeout).Should(Succeed())
		g.Expect(secretValue(g, "share-1", "enterprise-key")).To(BeEmpty())
	})

	t.Run("unshared secrets, service-account tokens and Helm releases are never copied", func(t *testing.T) {
		g := NewWithT(t)
		waitIdle(t)
		for _, name := range []string{"internal-only", "sa-token", "sh.helm.release.v1.app.v1"} {
			g.Expect(secretValue(g, "share-0", name)).To(BeEmpty(), name)
		}
	})

	t.Run("a sync leaves template secrets that did not come from the store alone", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(op.TemplateSync.Sync(ctx)).To(Succeed())
		for _, s := range never {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{})).To(Succeed())
		}
	})

	t.Run("a copy says where it came from and is reported in SecretsReady", func(t *testing.T) {
		g := NewWithT(t)
		s := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "tenant-share-1", Name: "api-key"}, s)).To(Succeed())
		g.Expect(s.Annotations).To(HaveKeyWithValue(tenancyv1alpha1.SourceAnnotation, opConfig.Secrets.TemplateNamespace+"/api-key"))
		g.Expect(s.Annotations).To(HaveKey(tenancyv1alpha1.SourceHashAnnotation))
		g.Expect(s.Labels).To(HaveKeyWithValue(tenancyv1alpha1.SharedCopyLabel, "true"))
		tenant := waitReady(t, "share-1")
		g.Expect(condition(tenant, tenancyv1alpha1.SecretsReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	})

	t.Run("a change fans out to every tenant by watch, one write per tenant", func(t *testing.T) {
		g := NewWithT(t)
		waitIdle(t)
		before := op.Requests.Snapshot()
		storeShared(t, "api-key", "v2")
		g.Eventually(func(g Gomega) {
			for _, name := range tenants {
				g.Expect(secretValue(g, name, "api-key")).To(Equal("v2"))
			}
		}).WithTimeout(timeout).Should(Succeed())
		waitIdle(t)
		made := tenantRequests(op.Requests.Snapshot().Sub(before))
		// One write of the template secret by the sync, then one per tenant copy; nothing else.
		g.Expect(made).To(Equal(testenv.Counts{"PATCH secrets": 1 + len(tenants)}), "requests: %s", made)
	})

	t.Run("a deleted copy is restored", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Delete(ctx, named(&corev1.Secret{}, "tenant-share-2", "api-key"))).To(Succeed())
		g.Eventually(func(g Gomega) { g.Expect(secretValue(g, "share-2", "api-key")).To(Equal("v2")) }).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a tenant relabeled out of a selector loses the secret", func(t *testing.T) {
		g := NewWithT(t)
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "share-0"}, tenant)).To(Succeed())
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Labels = nil
		g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
		g.Eventually(func(g Gomega) { g.Expect(secretValue(g, "share-0", "enterprise-key")).To(BeEmpty()) }).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a secret removed from the store is removed from every tenant", func(t *testing.T) {
		unstoreShared(t, "api-key")
		NewWithT(t).Eventually(func(g Gomega) {
			for _, name := range tenants {
				g.Expect(secretValue(g, name, "api-key")).To(BeEmpty())
			}
		}).WithTimeout(timeout).Should(Succeed())
	})
}

// While the store is down, the template namespace and every tenant keep what they have, and new
// tenants still get the shared secrets already in the cluster.
func TestStoreOutageBlocksNothingAndRemovesNothing(t *testing.T) {
	g := NewWithT(t)
	storeShared(t, "outage-key", "kept")
	t.Cleanup(func() { unstoreShared(t, "outage-key") })
	createTenant(t, newTenant("before-outage"))
	g.Eventually(func(g Gomega) { g.Expect(secretValue(g, "before-outage", "outage-key")).To(Equal("kept")) }).WithTimeout(timeout).Should(Succeed())

	store.SetDown(true)
	t.Cleanup(func() { store.SetDown(false); op.TemplateSync.Trigger() })
	op.TemplateSync.Trigger()
	g.Eventually(func() float64 { return gauge("landlord_secret_store_sync_up") }).WithTimeout(timeout).Should(BeZero())

	createTenant(t, newTenant("during-outage"))
	g.Eventually(func(g Gomega) { g.Expect(secretValue(g, "during-outage", "outage-key")).To(Equal("kept")) }).WithTimeout(timeout).Should(Succeed())
	g.Expect(secretValue(g, "before-outage", "outage-key")).To(Equal("kept"))

	store.SetDown(false)
	op.TemplateSync.Trigger()
	g.Eventually(func() float64 { return gauge("landlord_secret_store_sync_up") }).WithTimeout(timeout).Should(Equal(1.0))
}

func gauge(name string) float64 {
	families, _ := ctrlmetrics.Registry.Gather()
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// The Secrets Landlord writes into a tenant's namespace (copies of shared secrets, databases'
// credentials) are the platform's: a tenant admin, who writes Secrets of its own, cannot change
// or delete them. Landlord puts back what is changed in them, but not what it does not set: a
// tenant that took a copy's controller reference off, or added a finalizer of its own, would
// keep a secret no longer shared with it. And a reference taken off anyway (by the platform, or
// by a tenant before the policy), or a finalizer on a Secret of the tenant's own that Landlord's
// copy took over, does not keep one either: Landlord knows its Secrets by its labels, which only
// the operator sets or removes, and sets no finalizer on them, so a secret no longer shared with
// the tenant, and the credentials of a database taken out of its spec, leave its namespace all
// the same. (What the tenant read while it had them it may have kept: revoking that takes a new
// value at the source.)
func TestATenantAdminCannotKeepWhatLandlordTakesAway(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	const name, secret = "share-kept", "revoked-key"
	createTenant(t, newTenant(name, func(t *tenancyv1alpha1.Tenant) {
		t.Labels = map[string]string{"share": name}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "Group", Name: "oidc:" + name + ".admins"}}
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "dropped"}}
	}))
	ns := opConfig.NamespaceName(name)
	admin := impersonate(t, "mallory", "oidc:"+name+".admins")
	// Before the secret is shared, the tenant admin makes a Secret of its own under the copy's
	// name, held by a finalizer: Landlord's copy takes it over, finalizer and all.
	g.Expect(admin.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret, Finalizers: []string{"example.com/keep"}},
		StringData: map[string]string{"token": "mine"},
	})).To(Succeed())
	storeShared(t, secret, "r1", func(s *corev1.Secret) {
		s.Annotations = map[string]string{tenancyv1alpha1.TenantSelectorAnnotation: "share=" + name}
	})
	t.Cleanup(func() {
		_ = store.Delete(ctx, opConfig.Secrets.TemplateNamespace, secret)
		op.TemplateSync.Trigger()
	})
	g.Eventually(func(g Gomega) { g.Expect(secretValue(g, name, secret)).To(Equal("r1")) }).WithTimeout(timeout).Should(Succeed())
	copied := named(&corev1.Secret{}, ns, secret)
	credentials := named(&corev1.Secret{}, ns, tenancyv1alpha1.DatabaseSecretName("dropped"))
	merge := func(doc string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(doc)) }
	unowned := merge(`{"metadata":{"ownerReferences":null}}`)

	expectAttempts(t, []attempt{
		{"a tenant admin taking a copy's controller reference off", false, func() error { return admin.Patch(ctx, copied.DeepCopy(), unowned) }},
		{"a tenant admin holding a copy with a finalizer of its own", false, func() error {
			return admin.Patch(ctx, copied.DeepCopy(), merge(`{"metadata":{"finalizers":["example.com/keep"]}}`))
		}},
		{"a tenant admin changing a database's credentials", false, func() error {
			return admin.Patch(ctx, credentials.DeepCopy(), merge(`{"stringData":{"password":"guessed"}}`))
		}},
		{"a tenant admin deleting a database's credentials", false, func() error { return admin.Delete(ctx, credentials.DeepCopy()) }},
		{"a tenant admin writing a Secret of its own", true, func() error {
			own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenants-own"}, StringData: map[string]string{"k": "v"}}
			if err := admin.Create(ctx, own); err != nil {
				return err
			}
			if err := admin.Patch(ctx, own, unowned); err != nil {
				return err
			}
			return admin.Delete(ctx, own)
		}},
		{"the platform's administrator changing a copy", true, func() error {
			return k8s.Patch(ctx, copied.DeepCopy(), merge(`{"metadata":{"annotations":{"example.com/seen":"yes"}}}`), client.DryRunAll)
		}},
	}, policy.ManagedSecrets)

	// Suspended, the tenant gets no write of Landlord's: the references stay off while what the
	// Secrets were for goes.
	setSuspend(g, name, true)
	waitSuspended(t, name)
	taken := map[string]*corev1.Secret{
		"a copy of a secret no longer shared leaves":                copied,
		"the credentials of a database taken out of the spec leave": credentials,
	}
	for _, s := range taken {
		g.Expect(k8s.Patch(ctx, s, unowned)).To(Succeed())
		g.Expect(s.OwnerReferences).To(BeEmpty())
		g.Expect(s.Labels).To(HaveKeyWithValue(tenancyv1alpha1.TenantLabel, name))
		// The operator's cache has seen the change: a Secret read from before it still names
		// the tenant its controller, and would be deleted on that word.
		g.Eventually(func(g Gomega) {
			cached := &corev1.Secret{}
			g.Expect(op.GetCache().Get(ctx, client.ObjectKeyFromObject(s), cached)).To(Succeed())
			g.Expect(cached.OwnerReferences).To(BeEmpty())
		}).WithTimeout(timeout).Should(Succeed())
	}

	unstoreShared(t, secret)
	// Gone from the template namespace, as the operator's cache sees it, before the tenant is
	// reconciled again: otherwise that reconcile may still copy it, and put the reference back.
	g.Eventually(func() bool {
		err := op.GetCache().Get(ctx, client.ObjectKey{Namespace: opConfig.Secrets.TemplateNamespace, Name: secret}, &corev1.Secret{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(timeout).Should(BeTrue())
	g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
		merge(`{"spec":{"suspend":false,"databases":{"postgres":null}}}`))).To(Succeed())
	waitReady(t, name)
	g.Expect(copied.Finalizers).To(ConsistOf("example.com/keep"), "the copy took the tenant's Secret over, finalizer and all")
	for what, s := range taken {
		t.Run(what+" the namespace without their controller reference, whatever finalizer they carry", func(t *testing.T) {
			NewWithT(t).Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}))
			}).WithTimeout(timeout).Should(BeTrue(), "the tenant kept %s", s.Name)
		})
	}
}

// A Secret is deleted by its labels as they were read: one rewritten since without them (the
// name now holds a database's credentials, written by the same operator) is not deleted on the
// word of a stale read; read again, it is judged again.
func TestASecretIsDeletedByItsLabelsOnlyAsTheyWereRead(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "labelled-deletes"}}
	g.Expect(k8s.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	copyLabels := map[string]string{tenancyv1alpha1.SharedCopyLabel: "true", tenancyv1alpha1.TenantLabel: "acme"}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db-app", Labels: copyLabels}}
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	read := s.DeepCopy()

	s.Labels = map[string]string{tenancyv1alpha1.TenantLabel: "acme", tenancyv1alpha1.DatabaseEngineLabel: "postgres"}
	g.Expect(k8s.Update(ctx, s)).To(Succeed())
	deleted, err := writes.DeleteIfLabelled(ctx, k8s, k8s, read, copyLabels)
	g.Expect(deleted).To(BeFalse(), "deleted on labels it no longer carries")
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "want a conflict to retry on, got %v", err)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{})).To(Succeed())

	deleted, err = writes.DeleteIfLabelled(ctx, k8s, k8s, s, map[string]string{tenancyv1alpha1.DatabaseEngineLabel: "postgres"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(BeTrue())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}))).To(BeTrue())
}
