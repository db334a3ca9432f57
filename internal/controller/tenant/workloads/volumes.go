package workloads

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/databases"
)

// A tenant's persistent volumes outlive its namespace. Deleting a namespace deletes its claims,
// and with the usual Delete reclaim policy the disks behind them; so before Landlord deletes the
// namespace of a tenant that is not Purged (Archived, or deleted), every bound volume is switched
// to Retain and marked with the tenant's UID and the claim's name. The volume is then Released
// and bound to nothing: no other claim, in any namespace, can take it. When the tenant of that
// UID (or one adopting its data) is Active again, the volume is reserved for the claim of the
// same name in the new namespace (a claimRef without a UID), and kube-controller-manager's
// binder binds that claim to it. Purged restores the reclaim policy and deletes the volumes.
//
// Volumes are read live (APIReader) and only on these transitions: caching every
// PersistentVolume of the cluster would cost memory on every tenant's behalf.

// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;patch;delete

// volumesRecord is the name of the stored record of a tenant's kept volumes. It carries the
// UID: records are kept per namespace name, and an earlier tenant of the same name keeps its own.
func volumesRecord(t *tenancyv1alpha1.Tenant) string { return volumesRecordPrefix + string(t.UID) }

const volumesRecordPrefix = "landlord-volumes-"

// KeepVolumes switches the volumes bound to the claims in the tenant namespace to Retain, marks
// them, and records them in the status draft (when status is) and in the secret store.
func (e *Engine) KeepVolumes(ctx context.Context, s Scope) error {
	t := s.Tenant
	claims := &corev1.PersistentVolumeClaimList{}
	if err := e.APIReader.List(ctx, claims, client.InNamespace(s.Namespace)); err != nil {
		return fmt.Errorf("listing the claims in namespace %s: %w", s.Namespace, err)
	}
	kept := slices.Clone(s.Status.Volumes)
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := e.APIReader.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID {
			continue
		}
		orig := pv.DeepCopy()
		if pv.Annotations[tenancyv1alpha1.ReclaimPolicyAnnotation] == "" {
			metav1.SetMetaDataAnnotation(&pv.ObjectMeta, tenancyv1alpha1.ReclaimPolicyAnnotation, string(pv.Spec.PersistentVolumeReclaimPolicy))
		}
		metav1.SetMetaDataAnnotation(&pv.ObjectMeta, tenancyv1alpha1.VolumeClaimAnnotation, pvc.Name)
		metav1.SetMetaDataLabel(&pv.ObjectMeta, tenancyv1alpha1.TenantUIDLabel, string(t.UID))
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		// A retried archive finds the volume kept already: no write.
		if !equality.Semantic.DeepEqual(orig, pv) {
			if err := e.Client.Patch(ctx, pv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("keeping volume %s of claim %s: %w", pv.Name, pvc.Name, err)
			}
		}
		kept = setVolume(kept, tenancyv1alpha1.VolumeStatus{Claim: pvc.Name, Volume: pv.Name})
	}
	if len(kept) == 0 {
		return nil
	}
	if err := e.saveVolumesRecord(ctx, s.Namespace, t, kept); err != nil {
		return err
	}
	s.Status.Volumes = kept
	names := make([]string, 0, len(kept))
	for _, v := range kept {
		names = append(names, v.Claim+"="+v.Volume)
	}
	e.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonVolumesKept, "Keep",
		"volumes switched to Retain and kept while the namespace is gone: %s", strings.Join(names, ", "))
	return nil
}

func setVolume(list []tenancyv1alpha1.VolumeStatus, v tenancyv1alpha1.VolumeStatus) []tenancyv1alpha1.VolumeStatus {
	list = slices.DeleteFunc(list, func(o tenancyv1alpha1.VolumeStatus) bool { return o.Claim == v.Claim })
	list = append(list, v)
	slices.SortFunc(list, func(a, b tenancyv1alpha1.VolumeStatus) int { return cmp.Compare(a.Claim, b.Claim) })
	return list
}

// saveVolumesRecord keeps the list of kept volumes in the secret store too, marked with the
// tenant's UID: the tenant's status goes when the tenant is deleted.
func (e *Engine) saveVolumesRecord(ctx context.Context, namespace string, t *tenancyv1alpha1.Tenant, kept []tenancyv1alpha1.VolumeStatus) error {
	data, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	rec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   namespace,
			Name:        volumesRecord(t),
			Annotations: map[string]string{tenancyv1alpha1.TenantUIDLabel: string(t.UID)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"volumes": data},
	}
	if err := e.Secrets.Save(ctx, rec); err != nil {
		return fmt.Errorf("recording kept volumes in the secret store: %w", err)
	}
	return nil
}

// tenantVolumes lists the volumes marked with the tenant's UID, or with the UID of the tenant
// whose data it adopts, that were bound in the tenant's namespace. Like stored records, which
// are kept by namespace name, kept volumes pass only to a tenant of the same namespace: an
// adoption annotation naming the UID of another, living tenant (an Archived one, whose volumes
// are Released too) takes nothing of it.
func (e *Engine) tenantVolumes(ctx context.Context, t *tenancyv1alpha1.Tenant, namespace string) ([]corev1.PersistentVolume, error) {
	uids := []string{string(t.UID)}
	if adopt := databases.AdoptedUID(t); adopt != "" {
		uids = append(uids, adopt)
	}
	req, err := labels.NewRequirement(tenancyv1alpha1.TenantUIDLabel, selection.In, uids)
	if err != nil {
		return nil, err
	}
	pvs := &corev1.PersistentVolumeList{}
	if err := e.APIReader.List(ctx, pvs, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}); err != nil {
		return nil, fmt.Errorf("listing the tenant's kept volumes: %w", err)
	}
	return slices.DeleteFunc(pvs.Items, func(pv corev1.PersistentVolume) bool {
		return pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != namespace
	}), nil
}

// restoreVolumes reserves each kept volume of the tenant for the claim of the same name in its
// namespace, once the namespace exists again. It costs nothing for a tenant without kept
// volumes that adopts nothing and is not coming back from Archived.
func (e *Engine) restoreVolumes(ctx context.Context, s Scope) error {
	t := s.Tenant
	// The status lists kept volumes; a tenant back from Archived (no namespace in status, but
	// reconciled before) looks once more, in case that list was never written.
	back := t.Status.Namespace == "" && t.Status.ObservedGeneration > 0
	if len(t.Status.Volumes) == 0 && databases.AdoptedUID(t) == "" && !back {
		return nil
	}
	pvs, err := e.tenantVolumes(ctx, t, s.Namespace)
	if err != nil {
		return err
	}
	for i := range pvs {
		pv := &pvs[i]
		claim := pv.Annotations[tenancyv1alpha1.VolumeClaimAnnotation]
		// Only a volume whose claim is gone is reserved again: a bound one, or one the binder is
		// binding (Available, with the claim's UID), or one reserved already, is left alone.
		if claim == "" || (pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed) {
			continue
		}
		orig := pv.DeepCopy()
		metav1.SetMetaDataLabel(&pv.ObjectMeta, tenancyv1alpha1.TenantUIDLabel, string(t.UID))
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: s.Namespace, Name: claim}
		if err := e.Client.Patch(ctx, pv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("reserving volume %s for claim %s: %w", pv.Name, claim, err)
		}
		log.FromContext(ctx).Info("reserved a kept volume for its claim", "volume", pv.Name, "claim", claim)
	}
	s.Status.Volumes = nil
	return nil
}

// PurgeVolumes deletes the tenant's kept volumes, with the reclaim policy they had before they
// were kept, so a dynamically provisioned disk goes with its volume as it would have.
func (e *Engine) PurgeVolumes(ctx context.Context, s Scope) error {
	t := s.Tenant
	pvs, err := e.tenantVolumes(ctx, t, s.Namespace)
	if err != nil {
		return err
	}
	for i := range pvs {
		pv := &pvs[i]
		if policy := corev1.PersistentVolumeReclaimPolicy(pv.Annotations[tenancyv1alpha1.ReclaimPolicyAnnotation]); policy != "" && policy != pv.Spec.PersistentVolumeReclaimPolicy {
			orig := pv.DeepCopy()
			pv.Spec.PersistentVolumeReclaimPolicy = policy
			if err := e.Client.Patch(ctx, pv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("restoring the reclaim policy of volume %s: %w", pv.Name, err)
			}
		}
		uid := pv.UID
		if err := e.Client.Delete(ctx, pv, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting volume %s: %w", pv.Name, err)
		}
		e.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonVolumesDeleted, "Purge",
			"deleted volume %s of claim %s", pv.Name, pv.Annotations[tenancyv1alpha1.VolumeClaimAnnotation])
	}
	s.Status.Volumes = nil
	// The records of the volumes just deleted: the tenant's own, and the adopted tenant's.
	for _, uid := range []string{string(t.UID), databases.AdoptedUID(t)} {
		if uid == "" {
			continue
		}
		if err := e.Secrets.Delete(ctx, s.Namespace, volumesRecordPrefix+uid, uid); err != nil {
			return err
		}
	}
	return nil
}
