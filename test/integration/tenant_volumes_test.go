package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Deleting a tenant namespace deletes its claims, and with the usual Delete reclaim policy the
// disks behind them: the tenant's volumes are kept when its namespace goes. The PersistentVolume
// here is static; the PV binder that binds and releases it is kube-controller-manager's.
func TestVolumesOutliveTheTenantNamespace(t *testing.T) {
	// Its tenant is its own, and it asserts nothing of the cluster at large: it runs beside
	// the other parallel tests, once the serial ones (restarts, request counts) are done.
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	tenant := createTenant(t, newTenant("vol-keeper"))
	ns := opConfig.NamespaceName(tenant.Name)
	class := "landlord-test-static"
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "vol-keeper-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/landlord-test/vol-keeper"},
			},
		},
	}
	g.Expect(k8s.Create(ctx, pv)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, pv) })
	claim := func() *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
	}
	waitBoundTo := func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			got := &corev1.PersistentVolumeClaim{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(corev1.ClaimBound))
			g.Expect(got.Spec.VolumeName).To(Equal(pv.Name))
		}).WithTimeout(timeout).Should(Succeed())
	}
	g.Expect(k8s.Create(ctx, claim())).To(Succeed())
	waitBoundTo(t)

	t.Run("archiving keeps the volume, switched to Retain and recorded", func(t *testing.T) {
		g := NewWithT(t)
		setState(t, tenant.Name, tenancyv1alpha1.StateArchived)
		waitNamespaceGone(t, ns)
		archived := waitReady(t, tenant.Name)
		g.Expect(archived.Status.Volumes).To(ConsistOf(tenancyv1alpha1.VolumeStatus{Claim: "data", Volume: pv.Name}))
		got := &corev1.PersistentVolume{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		g.Expect(got.UID).To(Equal(pv.UID))
		g.Expect(got.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain))
		g.Expect(got.DeletionTimestamp).To(BeNil())
		g.Expect(got.Labels[tenancyv1alpha1.TenantUIDLabel]).To(Equal(string(tenant.UID)))
		record, err := store.Get(ctx, ns, "landlord-volumes-"+string(tenant.UID))
		g.Expect(err).NotTo(HaveOccurred(), "the kept volumes are not recorded in the store")
		g.Expect(string(record.Data["volumes"])).To(ContainSubstring(pv.Name))
	})

	t.Run("another tenant naming this one's UID for adoption takes none of its volumes", func(t *testing.T) {
		g := NewWithT(t)
		thief := newTenant("vol-thief")
		thief.Annotations = map[string]string{tenancyv1alpha1.AdoptDataAnnotation: string(tenant.UID)}
		createTenant(t, thief)
		got := &corev1.PersistentVolume{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		g.Expect(got.Spec.ClaimRef.Namespace).To(Equal(ns))
		g.Expect(got.Spec.ClaimRef.UID).NotTo(BeEmpty(), "the volume was reserved for a claim")
		g.Expect(got.Labels[tenancyv1alpha1.TenantUIDLabel]).To(Equal(string(tenant.UID)))
	})

	t.Run("made Active again, a claim of the same name is bound to the very same volume", func(t *testing.T) {
		g := NewWithT(t)
		setState(t, tenant.Name, tenancyv1alpha1.StateActive)
		active := waitReady(t, tenant.Name)
		g.Expect(active.Status.Volumes).To(BeEmpty())
		g.Expect(k8s.Create(ctx, claim())).To(Succeed())
		waitBoundTo(t)
		got := &corev1.PersistentVolume{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		g.Expect(got.UID).To(Equal(pv.UID))
		g.Expect(got.Spec.ClaimRef.Namespace).To(Equal(ns))
	})

	t.Run("a deleted tenant's volume is kept for a tenant that adopts its data", func(t *testing.T) {
		g := NewWithT(t)
		deleteTenant(t, tenant.Name)
		got := &corev1.PersistentVolume{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		g.Expect(got.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain))

		// A new tenant of the same name without the annotation cannot claim it.
		stranger := newTenant(tenant.Name)
		g.Expect(k8s.Create(ctx, stranger)).To(Succeed())
		waitReady(t, stranger.Name)
		g.Expect(k8s.Create(ctx, claim())).To(Succeed())
		resync(t, stranger.Name)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(corev1.VolumeReleased), "claimRef: %+v", got.Spec.ClaimRef)
		deleteTenant(t, stranger.Name)

		heir := newTenant(tenant.Name)
		heir.Annotations = map[string]string{tenancyv1alpha1.AdoptDataAnnotation: string(tenant.UID)}
		// Not createTenant: the heir outlives this subtest, and the test's cleanup deletes it.
		g.Expect(k8s.Create(ctx, heir)).To(Succeed())
		waitReady(t, heir.Name)
		g.Expect(k8s.Create(ctx, claim())).To(Succeed())
		waitBoundTo(t)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		g.Expect(got.UID).To(Equal(pv.UID))
		g.Expect(got.Labels[tenancyv1alpha1.TenantUIDLabel]).To(Equal(string(heir.UID)))
		tenant = heir
	})

	t.Run("purging the tenant deletes its kept volume", func(t *testing.T) {
		setState(t, tenant.Name, tenancyv1alpha1.StatePurged)
		NewWithT(t).Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(pv), &corev1.PersistentVolume{}))
		}).WithTimeout(timeout).Should(BeTrue())
		stored, err := store.List(ctx, ns)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		for _, rec := range stored {
			// Neither the heir's record nor the adopted one of the tenant before it.
			NewWithT(t).Expect(rec.Name).NotTo(HavePrefix("landlord-volumes-"), "a record of the purged volumes was kept")
		}
	})
}
