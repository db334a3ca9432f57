package integration

import (
	"context"
	"errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/templatesync"
)

// The identity and field manager External Secrets Operator writes its Secrets with: the tests
// feed template namespaces as it would, through the API server, under a ServiceAccount of its
// own that a Role in the namespace lets write Secrets.
const (
	externalSecretsUser    = "system:serviceaccount:external-secrets:external-secrets"
	externalSecretsManager = "external-secrets"
)

// asExternalSecrets is a client that writes Secrets in namespace as External Secrets Operator
// does, creating the namespace if it is missing and granting the tool's ServiceAccount what its
// chart grants it there.
func asExternalSecrets(t *testing.T, namespace string) client.Client {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "external-secrets"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "external-secrets"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "external-secrets"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "external-secrets", Name: "external-secrets"}},
		},
	}
	for _, obj := range objs {
		if err := k8s.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	c, err := client.New(env.As(externalSecretsUser, "system:serviceaccounts", "system:serviceaccounts:external-secrets", "system:authenticated"),
		client.Options{Scheme: tenancyv1alpha1.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	return client.WithFieldOwner(c, externalSecretsManager)
}

// externalSecret is a Secret as External Secrets Operator writes it for an ExternalSecret whose
// target template labels it shared.
func externalSecret(namespace, name, token string, labels ...string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			tenancyv1alpha1.SharedLabel:             "true",
			"reconcile.external-secrets.io/managed": "true",
		}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte(token)},
	}
	for i := 0; i+1 < len(labels); i += 2 {
		s.Labels[labels[i]] = labels[i+1]
	}
	return s
}

// rewriteAsExternalSecrets changes a Secret's token as External Secrets Operator does when the
// provider's value changes: a read, then an update of the data.
func rewriteAsExternalSecrets(g Gomega, eso client.Client, namespace, name, token string) {
	s := &corev1.Secret{}
	g.Expect(eso.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, s)).To(Succeed())
	s.Data = map[string][]byte{"token": []byte(token)}
	g.Expect(eso.Update(context.Background(), s)).To(Succeed())
}

// liveSecret is a Secret as the API server holds it, managed fields and all.
func liveSecret(g Gomega, namespace, name string) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, s)).To(Succeed())
	return s
}

// fieldManagers are the managers the API server records on an object.
func fieldManagers(obj client.Object) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager)
	}
	return out
}

// Secrets in the template namespace that another tool wrote (External Secrets Operator, the
// Sealed Secrets controller, Flux's kustomize-controller decrypting SOPS) are never rewritten or
// removed by the store's mirror, whatever their names and labels.
func TestTheMirrorNeverRewritesOrRemovesASecretAnotherToolWrote(t *testing.T) {
	ctx := context.Background()
	opts := templatesync.Options{MaxDeletionPercent: 100}

	t.Run("a secret of the same name as one in the store is left as the other tool wrote it", func(t *testing.T) {
		g := NewWithT(t)
		ns := "templates-foreign-name"
		eso := asExternalSecrets(t, ns)
		g.Expect(eso.Create(ctx, externalSecret(ns, "api-token", "from-vault"))).To(Succeed())
		s := newFileStore(t)
		putShared(t, s, ns, "api-token", "other")

		err := templatesync.Mirror(ctx, k8s, s, ns, opts)
		live := liveSecret(g, ns, "api-token")
		g.Expect(live.Data).To(Equal(map[string][]byte{"token": []byte("from-vault")}))
		g.Expect(live.Labels).NotTo(HaveKey(tenancyv1alpha1.FromStoreLabel))
		g.Expect(fieldManagers(live)).To(ConsistOf(externalSecretsManager), "Landlord took no field of it")
		g.Expect(err).To(MatchError(And(ContainSubstring("api-token"), ContainSubstring(externalSecretsManager))), "the pass says which secret it left, and who wrote it")
		var refused *templatesync.RefusedError
		g.Expect(errors.As(err, &refused)).To(BeTrue())
		g.Expect(refused.Reason).To(Equal(templatesync.ReasonForeignSecret))
		g.Expect(fromStore(g, ns)).To(ConsistOf("other"), "the rest of the store is mirrored")

		// The store's secret of that name goes: the other tool's stays.
		g.Expect(s.Delete(ctx, ns, "api-token")).To(Succeed())
		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, opts)).To(Succeed())
		g.Expect(liveSecret(g, ns, "api-token").Data).To(Equal(map[string][]byte{"token": []byte("from-vault")}))
	})

	t.Run("a secret another tool applied with the very values Landlord had is the tool's too: neither rewritten nor removed", func(t *testing.T) {
		// As Flux's kustomize-controller applies a SOPS-decrypted Secret server-side: values equal
		// to Landlord's make it their owner beside Landlord, which the cache's record of foreign
		// fields does not show.
		g := NewWithT(t)
		ns := "templates-foreign-coowner"
		s := newFileStore(t)
		putShared(t, s, ns, "co-owned", "other")
		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, opts)).To(Succeed())
		mirrored := liveSecret(g, ns, "co-owned")
		same := corev1ac.Secret("co-owned", ns).WithLabels(mirrored.Labels).WithData(mirrored.Data)
		g.Expect(k8s.Apply(ctx, same, client.FieldOwner("kustomize-controller"))).To(Succeed())
		coOwned := liveSecret(g, ns, "co-owned")
		g.Expect(fieldManagers(coOwned)).To(ContainElement("kustomize-controller"))
		g.Expect(templatesync.Landlords(coOwned)).To(BeTrue(), "the tool owns no field Landlord does not: by its fields it passes for Landlord's")

		// The store's value changes: the tool's Secret is not rewritten.
		g.Expect(s.Put(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "co-owned", Labels: map[string]string{tenancyv1alpha1.SharedLabel: "true"}},
			Data:       map[string][]byte{"token": []byte("changed-in-store")},
		})).To(Succeed())
		err := templatesync.Mirror(ctx, k8s, s, ns, opts)
		g.Expect(liveSecret(g, ns, "co-owned").Data).To(Equal(mirrored.Data), "the tool's values were overwritten")
		var refused *templatesync.RefusedError
		g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
		g.Expect(refused.Reason).To(Equal(templatesync.ReasonForeignSecret))
		g.Expect(err).To(MatchError(ContainSubstring("co-owned")))

		// The name leaves the store: the tool's Secret stays, and the pass says so.
		g.Expect(s.Delete(ctx, ns, "co-owned")).To(Succeed())
		err = templatesync.Mirror(ctx, k8s, s, ns, opts)
		g.Expect(liveSecret(g, ns, "co-owned").Data).To(Equal(mirrored.Data), "the tool's Secret was removed")
		g.Expect(err).To(MatchError(And(ContainSubstring("co-owned"), ContainSubstring("kustomize-controller"))))
		g.Expect(fromStore(g, ns)).To(ContainElement("other"))
	})

	t.Run("a secret carrying the store's label that the store lacks is not removed", func(t *testing.T) {
		// As an export of a mirrored secret re-applied by another tool would carry it.
		g := NewWithT(t)
		ns := "templates-foreign-label"
		eso := asExternalSecrets(t, ns)
		s := newFileStore(t)
		putShared(t, s, ns, "mirrored")
		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, opts)).To(Succeed())
		g.Expect(eso.Create(ctx, externalSecret(ns, "copied", "from-vault", tenancyv1alpha1.FromStoreLabel, "true"))).To(Succeed())

		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, opts)).To(Succeed())
		g.Expect(liveSecret(g, ns, "copied").Data).To(Equal(map[string][]byte{"token": []byte("from-vault")}))
		g.Expect(fromStore(g, ns)).To(ConsistOf("mirrored", "copied"))
	})

	t.Run("a mirrored secret another tool has since written to is neither reverted nor removed", func(t *testing.T) {
		g := NewWithT(t)
		ns := "templates-foreign-takeover"
		eso := asExternalSecrets(t, ns)
		s := newFileStore(t)
		putShared(t, s, ns, "db-proxy", "other")
		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, opts)).To(Succeed())
		rewriteAsExternalSecrets(g, eso, ns, "db-proxy", "rotated-in-vault")

		err := templatesync.Mirror(ctx, k8s, s, ns, opts)
		g.Expect(liveSecret(g, ns, "db-proxy").Data).To(Equal(map[string][]byte{"token": []byte("rotated-in-vault")}))
		g.Expect(err).To(MatchError(And(ContainSubstring("db-proxy"), ContainSubstring(externalSecretsManager))))

		g.Expect(s.Delete(ctx, ns, "db-proxy")).To(Succeed())
		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, opts)).To(Succeed())
		g.Expect(liveSecret(g, ns, "db-proxy").Data).To(Equal(map[string][]byte{"token": []byte("rotated-in-vault")}))
	})
}

// staleCache reads as a cache that has not yet seen one Secret: the other tool created it a
// moment before the mirror's pass.
type staleCache struct {
	client.Client
	unseen string
}

func (c staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok && key.Name == c.unseen {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c staleCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if secrets, ok := list.(*corev1.SecretList); ok {
		secrets.Items = slices.DeleteFunc(secrets.Items, func(s corev1.Secret) bool { return s.Name == c.unseen })
	}
	return nil
}

// A Secret the other tool creates just before the mirror first writes that name, which the
// mirror's cache has not seen yet, is not taken over: the write of a name the cache does not hold
// takes no field from anyone.
func TestTheMirrorDoesNotTakeOverASecretItsCacheHasNotSeen(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "templates-foreign-race"
	eso := asExternalSecrets(t, ns)
	s := newFileStore(t)
	putShared(t, s, ns, "api-token", "other")
	g.Expect(eso.Create(ctx, externalSecret(ns, "api-token", "from-vault"))).To(Succeed())

	err := templatesync.Mirror(ctx, staleCache{Client: k8s, unseen: "api-token"}, s, ns, templatesync.Options{})
	live := liveSecret(g, ns, "api-token")
	g.Expect(live.Data).To(Equal(map[string][]byte{"token": []byte("from-vault")}))
	g.Expect(fieldManagers(live)).To(ConsistOf(externalSecretsManager))
	g.Expect(err).To(HaveOccurred(), "the pass says it could not write the name")
	g.Expect(fromStore(g, ns)).To(ConsistOf("other"))
}

// With secrets.sharedSource Namespace the template namespace's pass writes no Secret: it only
// records the store tenants' credentials go to, and refuses any other, as the mirror does.
func TestRecordingTheStoreWritesNoSecret(t *testing.T) {
	ctx := context.Background()

	t.Run("a new template namespace is created and records the store, and holds no Secret of Landlord's", func(t *testing.T) {
		g := NewWithT(t)
		ns := "templates-record-only"
		s := newFileStore(t)
		putShared(t, s, ns, "in-the-store")
		g.Expect(templatesync.RecordStore(ctx, k8s, s, ns)).To(Succeed())
		id, err := s.Identity(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(recordedStore(g, ns)).To(Equal(id))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "in-the-store"}, &corev1.Secret{})).To(MatchError(ContainSubstring("not found")))
	})

	t.Run("the other tool's Secrets are left as they are, pass after pass", func(t *testing.T) {
		g := NewWithT(t)
		ns := "templates-record-only-fed"
		eso := asExternalSecrets(t, ns)
		g.Expect(eso.Create(ctx, externalSecret(ns, "api-token", "from-vault"))).To(Succeed())
		before := liveSecret(g, ns, "api-token")
		s := newFileStore(t)
		putShared(t, s, ns, "api-token")
		for range 2 {
			g.Expect(templatesync.RecordStore(ctx, k8s, s, ns)).To(Succeed())
		}
		after := liveSecret(g, ns, "api-token")
		g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the Secret was written")
		g.Expect(fieldManagers(after)).To(ConsistOf(externalSecretsManager))
	})

	t.Run("a store other than the recorded one is refused", func(t *testing.T) {
		g := NewWithT(t)
		ns := "templates-record-only-other"
		g.Expect(templatesync.RecordStore(ctx, k8s, newFileStore(t), ns)).To(Succeed())
		err := templatesync.RecordStore(ctx, k8s, newFileStore(t), ns)
		var refused *templatesync.RefusedError
		g.Expect(errors.As(err, &refused)).To(BeTrue(), "got %v", err)
		g.Expect(refused.Reason).To(Equal(templatesync.ReasonStoreMismatch))
	})
}
