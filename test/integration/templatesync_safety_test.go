package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/templatemirror"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/templatesync"
)

// newFileStore is a real file store of its own, empty, as a fresh emptyDir or a wrong bucket
// prefix would be.
func newFileStore(t *testing.T) secret.Store {
	t.Helper()
	dir := t.TempDir()
	s, err := secret.NewFileStore(dir, dir+"/key.json")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return s
}

func putShared(t *testing.T, s secret.Store, namespace string, names ...string) {
	t.Helper()
	for _, name := range names {
		NewWithT(t).Expect(s.Put(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{tenancyv1alpha1.SharedLabel: "true"}},
			Data:       map[string][]byte{"token": []byte(name)},
		})).To(Succeed())
	}
}

// fromStore is the names of the secrets in namespace that came from a store.
func fromStore(g Gomega, namespace string) []string {
	list := &corev1.SecretList{}
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(namespace),
		client.MatchingLabels{tenancyv1alpha1.FromStoreLabel: "true"})).To(Succeed())
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

// recordedStore is the store identity a namespace records.
func recordedStore(g Gomega, namespace string) string {
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: namespace}, ns)).To(Succeed())
	return ns.Annotations[tenancyv1alpha1.SecretStoreAnnotation]
}

func secretNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("shared-%d", i)
	}
	return out
}

// A template namespace mirrored from one store is never emptied by another (a pod
// restarted on an empty emptyDir, a wrong GCS prefix, landlordctl with the wrong config), and
// no single pass deletes most of it.
func TestTemplateSyncDeletesNothingOnAStoreItDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	opts := templatesync.Options{MaxDeletionPercent: 25}

	t.Run("a store other than the recorded one changes nothing in the namespace", func(t *testing.T) {
		g := NewWithT(t)
		ns := "templates-other-store"
		original, empty := newFileStore(t), newFileStore(t)
		putShared(t, original, ns, secretNames(3)...)
		g.Expect(templatesync.Mirror(ctx, k8s, original, ns, opts)).To(Succeed())
		g.Expect(fromStore(g, ns)).To(ConsistOf(secretNames(3)))

		err := templatesync.Mirror(ctx, k8s, empty, ns, opts)
		g.Expect(err).To(MatchError(ContainSubstring("is not the store")), "the sync must refuse and say why")
		g.Expect(fromStore(g, ns)).To(ConsistOf(secretNames(3)))

		// A store holding a secret of the same name is still not the recorded one: it writes nothing.
		other := newFileStore(t)
		putShared(t, other, ns, "shared-0")
		g.Expect(templatesync.Mirror(ctx, k8s, other, ns, opts)).NotTo(Succeed())
		g.Expect(fromStore(g, ns)).To(ConsistOf(secretNames(3)))

		g.Expect(templatesync.Mirror(ctx, k8s, original, ns, opts)).To(Succeed())
		g.Expect(fromStore(g, ns)).To(ConsistOf(secretNames(3)))
	})

	t.Run("a namespace that records no store is not taken over by a store lacking its secrets", func(t *testing.T) {
		// A namespace mirrored before stores had identities, read after an upgrade through an
		// empty store (an emptyDir the upgrade replaced): recording that store would make it the
		// cluster's, and its secrets would then go.
		g := NewWithT(t)
		ns := "templates-unrecorded"
		original, empty := newFileStore(t), newFileStore(t)
		putShared(t, original, ns, secretNames(3)...)
		g.Expect(templatesync.Mirror(ctx, k8s, original, ns, opts)).To(Succeed())
		unrecord := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, tenancyv1alpha1.SecretStoreAnnotation)))
		g.Expect(k8s.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, unrecord)).To(Succeed())

		emptyID, err := empty.Identity(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		err = templatesync.Mirror(ctx, k8s, empty, ns, opts)
		g.Expect(err).To(MatchError(And(ContainSubstring("records no secret store"), ContainSubstring(emptyID))), "the refusal names the store and how to record it")
		g.Expect(fromStore(g, ns)).To(ConsistOf(secretNames(3)))
		g.Expect(recordedStore(g, ns)).To(BeEmpty())

		// Nor by another environment's store holding the same names with other values: its
		// values would overwrite the cluster's in every tenant.
		lookalike := newFileStore(t)
		for _, name := range secretNames(3) {
			g.Expect(lookalike.Put(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{tenancyv1alpha1.SharedLabel: "true"}},
				Data:       map[string][]byte{"token": []byte("staging value of " + name)},
			})).To(Succeed())
		}
		g.Expect(templatesync.Mirror(ctx, k8s, lookalike, ns, opts)).To(MatchError(ContainSubstring("holds other data for, 3 of its 3")))
		g.Expect(recordedStore(g, ns)).To(BeEmpty())
		live := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shared-0"}, live)).To(Succeed())
		g.Expect(string(live.Data["token"])).To(Equal("shared-0"))

		originalID, err := original.Identity(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(templatesync.Mirror(ctx, k8s, original, ns, opts)).To(Succeed())
		g.Expect(recordedStore(g, ns)).To(Equal(originalID))
		g.Expect(fromStore(g, ns)).To(ConsistOf(secretNames(3)))
	})

	t.Run("a pass that would delete more than the allowed share of the secrets deletes none", func(t *testing.T) {
		g := NewWithT(t)
		ns := "templates-mass-delete"
		s := newFileStore(t)
		putShared(t, s, ns, secretNames(8)...)
		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, opts)).To(Succeed())
		for _, name := range secretNames(8)[:4] {
			g.Expect(s.Delete(ctx, ns, name)).To(Succeed())
		}
		err := templatesync.Mirror(ctx, k8s, s, ns, opts)
		g.Expect(err).To(MatchError(ContainSubstring("4 of 8")))
		g.Expect(fromStore(g, ns)).To(ConsistOf(secretNames(8)))

		// The administrator who meant it raises the share for one pass (landlordctl secrets sync
		// --max-deletion-percent 100).
		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, templatesync.Options{MaxDeletionPercent: 100})).To(Succeed())
		g.Expect(fromStore(g, ns)).To(ConsistOf(secretNames(8)[4:]))
	})

	t.Run("one secret removed from the store is removed from the namespace", func(t *testing.T) {
		g := NewWithT(t)
		ns := "templates-one-delete"
		s := newFileStore(t)
		putShared(t, s, ns, secretNames(2)...)
		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, opts)).To(Succeed())
		g.Expect(s.Delete(ctx, ns, "shared-0")).To(Succeed())
		g.Expect(templatesync.Mirror(ctx, k8s, s, ns, opts)).To(Succeed())
		g.Expect(fromStore(g, ns)).To(ConsistOf("shared-1"))
	})
}

// In the operator's sync, a refused pass turns landlord_secret_store_sync_up to 0
// and says why in an event on the template namespace. The suite's operator may remove any share
// (its tests add and remove secrets in twos), so the sync here is the operator's reconciler on
// a namespace of its own, with the shipped share.
func TestARefusedTemplateSyncIsReported(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "templates-reported"
	s := newFileStore(t)
	sync := &templatemirror.Reconciler{
		Client: k8s, Store: s, Namespace: ns, Interval: time.Minute,
		MaxDeletionPercent: 25, Recorder: op.GetEventRecorder("landlord"),
	}
	putShared(t, s, ns, secretNames(8)...)
	g.Expect(sync.Sync(ctx)).To(Succeed())
	g.Expect(gauge("landlord_secret_store_sync_up")).To(Equal(1.0))

	for _, name := range secretNames(8)[:5] {
		g.Expect(s.Delete(ctx, ns, name)).To(Succeed())
	}
	g.Expect(sync.Sync(ctx)).NotTo(Succeed())
	g.Expect(gauge("landlord_secret_store_sync_up")).To(BeZero())
	g.Expect(fromStore(g, ns)).To(ConsistOf(secretNames(8)))
	g.Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		// The namespace is cluster-scoped: its events are in "default".
		g.Expect(k8s.List(ctx, events)).To(Succeed())
		var said []string
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == ns {
				said = append(said, e.Reason+": "+e.Message)
			}
		}
		g.Expect(said).To(ContainElement(And(HavePrefix(templatesync.ReasonDeletionRefused), ContainSubstring("5 of 8"))))
	}).WithTimeout(timeout).Should(Succeed())

	// The operator's own sync sets the gauge back on its next pass.
	op.TemplateSync.Trigger()
	g.Eventually(func() float64 { return gauge("landlord_secret_store_sync_up") }).WithTimeout(timeout).Should(Equal(1.0))
}

// A store that hangs holds no worker past the store deadline the operator is configured with
// (secrets.store.timeout): every call that waited on the hanging store was ended by its
// context's deadline, and that deadline is the configured one, read from the context the store
// was handed.
func TestAHangingStoreIsCutOffByItsDeadline(t *testing.T) {
	g := NewWithT(t)
	configured := opConfig.Secrets.Store.Timeout.Duration
	g.Eventually(func() float64 { return gauge("landlord_secret_store_sync_up") }).WithTimeout(timeout).Should(Equal(1.0))
	earlier := len(store.CutOffs())
	store.SetHanging(true)
	t.Cleanup(func() { store.SetHanging(false); op.TemplateSync.Trigger() })
	op.TemplateSync.Trigger()
	g.Eventually(func() float64 { return gauge("landlord_secret_store_sync_up") }).WithTimeout(timeout).Should(BeZero())
	store.SetHanging(false)

	cutOffs := store.CutOffs()[earlier:]
	g.Expect(cutOffs).NotTo(BeEmpty(), "the failed sync made no call that waited on the hanging store")
	for i, c := range cutOffs {
		g.Expect(c.Err).To(MatchError(context.DeadlineExceeded), "call %d ended by something other than a deadline", i)
		g.Expect(c.HasDeadline).To(BeTrue(), "call %d reached the store without a deadline", i)
		// The deadline is set a moment before the call reaches the store, so it lies at most
		// the configured timeout after the call's arrival, and short of it only by the time a
		// goroutine takes to start: far less than the tolerance, which any other deadline (the
		// reconcile's, which is minutes, or none) falls well outside of.
		const tolerance = 500 * time.Millisecond
		g.Expect(c.Deadline.Sub(c.Arrived)).To(And(BeNumerically("<=", configured), BeNumerically(">", configured-tolerance)),
			"call %d: its deadline is not the configured %s", i, configured)
	}

	op.TemplateSync.Trigger()
	g.Eventually(func() float64 { return gauge("landlord_secret_store_sync_up") }).WithTimeout(timeout).Should(Equal(1.0))
}
