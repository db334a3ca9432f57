package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/templatesync"
	"github.com/landlord-dev/landlord/test/testenv"
)

// secretWrites are the requests in counts that wrote Secrets.
func secretWrites(counts testenv.Counts) testenv.Counts {
	out := testenv.Counts{}
	for k, v := range counts {
		verb, resource, _ := strings.Cut(k, " ")
		if resource == "secrets" && verb != "GET" && verb != "LIST" && verb != "WATCH" {
			out[k] = v
		}
	}
	return out
}

// resourceVersions are the resourceVersions of Secrets, by namespace/name.
func resourceVersions(g Gomega, keys ...client.ObjectKey) map[string]string {
	out := map[string]string{}
	for _, key := range keys {
		out[key.String()] = liveSecret(g, key.Namespace, key.Name).ResourceVersion
	}
	return out
}

// With secrets.sharedSource Namespace another tool writes the template namespace's Secrets, here
// as External Secrets Operator does (its own ServiceAccount and field manager), and Landlord
// copies the labelled ones into every tenant without ever writing one of them; the store keeps
// the tenants' database credentials.
func TestSharedSecretsWrittenByAnotherToolReachEveryTenant(t *testing.T) {
	ctx := context.Background()
	ns := opConfig.Secrets.TemplateNamespace
	eso := asExternalSecrets(t, ns)
	source := client.ObjectKey{Namespace: ns, Name: "vault-api-key"}

	t.Run("with the store as the source, a Secret of the other tool's under a name the store holds is left as it wrote it", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(eso.Create(ctx, externalSecret(ns, "vault-api-key", "v1"))).To(Succeed())
		g.Expect(eso.Create(ctx, externalSecret(ns, "vault-internal", "x", tenancyv1alpha1.SharedLabel, "false"))).To(Succeed())
		storeShared(t, "vault-api-key", "from-the-store")
		// Read through the operator's cache, which keeps only its record of who else wrote it.
		g.Eventually(func(g Gomega) {
			var refused *templatesync.RefusedError
			err := op.TemplateSync.Sync(ctx)
			g.Expect(errors.As(err, &refused)).To(BeTrue(), "sync: %v", err)
			g.Expect(refused.Reason).To(Equal(templatesync.ReasonForeignSecret))
		}).WithTimeout(timeout).Should(Succeed())
		live := liveSecret(g, ns, "vault-api-key")
		g.Expect(string(live.Data["token"])).To(Equal("v1"))
		g.Expect(fieldManagers(live)).To(ConsistOf(externalSecretsManager))
	})

	native := opConfig
	native.Secrets.SharedSource = config.SharedFromNamespace
	restartOperator(t, native)
	// Before the suite's operator, which mirrors the store, is started again.
	t.Cleanup(func() {
		for _, name := range []string{"vault-api-key", "vault-internal"} {
			_ = eso.Delete(ctx, named(&corev1.Secret{}, ns, name))
		}
		for _, name := range []string{"vault-api-key", "store-only"} {
			_ = store.Delete(ctx, ns, name)
		}
	})
	tenants := []string{"native-0", "native-1"}

	t.Run("nothing of the store is written into the template namespace", func(t *testing.T) {
		g := NewWithT(t)
		before := resourceVersions(g, source)
		storeShared(t, "store-only", "s")
		g.Expect(op.TemplateSync.Sync(ctx)).To(Succeed())
		g.Expect(gauge("landlord_secret_store_sync_up")).To(Equal(1.0))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "store-only"}, &corev1.Secret{})).To(MatchError(ContainSubstring("not found")))
		g.Expect(resourceVersions(g, source)).To(Equal(before))
	})

	// The tenants live for the whole test, and go before the sources.
	createTenant(t, newTenant(tenants[0], func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	}))
	createTenant(t, newTenant(tenants[1]))

	t.Run("the other tool's shared Secret reaches every tenant, and the store keeps their credentials", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			for _, name := range tenants {
				g.Expect(secretValue(g, name, "vault-api-key")).To(Equal("v1"))
			}
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(secretValue(g, tenants[0], "vault-internal")).To(BeEmpty(), "a Secret not labelled shared is not copied")
		stored, err := store.List(ctx, opConfig.NamespaceName(tenants[0]))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored).NotTo(BeEmpty(), "the database credentials are kept in the store")
	})

	t.Run("a change by the other tool reaches every tenant, one write per tenant and none of the source", func(t *testing.T) {
		g := NewWithT(t)
		waitIdle(t)
		before := op.Requests.Snapshot()
		rewriteAsExternalSecrets(g, eso, ns, "vault-api-key", "v2")
		g.Eventually(func(g Gomega) {
			for _, name := range tenants {
				g.Expect(secretValue(g, name, "vault-api-key")).To(Equal("v2"))
			}
		}).WithTimeout(timeout).Should(Succeed())
		waitIdle(t)
		made := tenantRequests(op.Requests.Snapshot().Sub(before))
		g.Expect(made).To(Equal(testenv.Counts{"PATCH secrets": len(tenants)}), "requests: %s", made)
		g.Expect(fieldManagers(liveSecret(g, ns, "vault-api-key"))).To(ConsistOf(externalSecretsManager))
	})

	copies := []client.ObjectKey{
		{Namespace: opConfig.NamespaceName(tenants[0]), Name: "vault-api-key"},
		{Namespace: opConfig.NamespaceName(tenants[1]), Name: "vault-api-key"},
	}

	t.Run("a resync and a sync write nothing", func(t *testing.T) {
		g := NewWithT(t)
		waitIdle(t)
		versions := resourceVersions(g, append(copies, source)...)
		before := op.Requests.Snapshot()
		resync(t, tenants...)
		g.Expect(op.TemplateSync.Sync(ctx)).To(Succeed())
		made := tenantRequests(op.Requests.Snapshot().Sub(before))
		g.Expect(made).To(BeEmpty(), "requests: %s", made)
		g.Expect(resourceVersions(g, append(copies, source)...)).To(Equal(versions))
	})

	t.Run("a restart changes nothing", func(t *testing.T) {
		g := NewWithT(t)
		versions := resourceVersions(g, append(copies, source)...)
		restartOperator(t, native)
		// Each tenant reconciled by the new operator, and its sync run.
		resync(t, tenants...)
		g.Expect(op.TemplateSync.Sync(ctx)).To(Succeed())
		g.Expect(secretWrites(op.Requests.Snapshot())).To(BeEmpty(), "the restarted operator wrote Secrets")
		g.Expect(resourceVersions(g, append(copies, source)...)).To(Equal(versions))
		g.Expect(fieldManagers(liveSecret(g, ns, "vault-api-key"))).To(ConsistOf(externalSecretsManager))
	})

	t.Run("a source the other tool deletes is removed from every tenant, and the tenants stay Ready", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(eso.Delete(ctx, named(&corev1.Secret{}, ns, "vault-api-key"))).To(Succeed())
		g.Eventually(func(g Gomega) {
			for _, name := range tenants {
				g.Expect(secretValue(g, name, "vault-api-key")).To(BeEmpty())
			}
		}).WithTimeout(timeout).Should(Succeed())
		for _, name := range tenants {
			waitReady(t, name)
		}
	})
}
