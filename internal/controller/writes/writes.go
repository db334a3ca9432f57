// Package writes holds the writes every reconciler makes the same way: a status patched only
// when it changed, a delete only of what the owner controls (or Landlord's labels mark) as it
// was read, a conflict retried rather than logged, and a repaired drift counted, logged and
// recorded as an event; and the names (log keys, references in messages) those writes give the
// objects they touch.
package writes

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// PatchStatus sets *field, obj's status, to status and patches it, only when it differs: a
// reconcile that changed nothing writes nothing. An object deleted meanwhile is no error.
func PatchStatus[S any](ctx context.Context, c client.Client, obj client.Object, field *S, status S, opts ...client.MergeFromOption) error {
	if equality.Semantic.DeepEqual(*field, status) {
		return nil
	}
	orig, _ := obj.DeepCopyObject().(client.Object)
	*field = status
	return client.IgnoreNotFound(c.Status().Patch(ctx, obj, client.MergeFromWithOptions(orig, opts...)))
}

// DeleteIfControlled deletes obj when owner controls it, and reports whether it sent the
// delete. The UID precondition means an object re-created under the same name since it was read
// (by someone else, for something else) is never deleted in its place; one already gone is no
// error. An object the operator's cache keeps without its UID (apply.KeepInCache) is looked up
// on the API server first (its metadata, through reader): the object standing under the name
// now is deleted if owner controls it, by its UID. Not by the resourceVersion read: any write
// since (a status, a scale, which a tenant may make) would refuse that delete, again and again.
func DeleteIfControlled(ctx context.Context, c client.Client, reader client.Reader, obj client.Object, owner metav1.Object) (bool, error) {
	return deleteIf(ctx, c, reader, obj, func(o metav1.Object) bool { return metav1.IsControlledBy(o, owner) }, false)
}

// DeleteIfLabelled is DeleteIfControlled for an object Landlord marks as its own by labels that
// only its operator may set, change or remove in a tenant namespace (the managed-labels
// policy): one that carries every label of labels is deleted, whatever its owner references
// say, and whatever finalizers it carries. Landlord sets none on what it labels: one there was
// put by someone else (a tenant's Secret of the same name that Landlord's apply took over, or
// an edit from before the policies guarded it) to keep the object, and is taken off first,
// under the object's resourceVersion as read, so that the object does go.
//
// The delete stands on that resourceVersion too: labels are judged as they were read, and a
// name rewritten since (by the operator itself, for another of its objects, as a cache behind
// may not show yet) is refused with a conflict, and judged again on the next read. Only the
// operator and the platform write these objects (the managed-secrets policy), so no tenant can
// hold the delete off by writing.
func DeleteIfLabelled(ctx context.Context, c client.Client, reader client.Reader, obj client.Object, labels map[string]string) (bool, error) {
	ours := func(o metav1.Object) bool {
		for k, v := range labels {
			if got, ok := o.GetLabels()[k]; !ok || got != v {
				return false
			}
		}
		return len(labels) > 0
	}
	if ours(obj) && len(obj.GetFinalizers()) > 0 {
		orig, _ := obj.DeepCopyObject().(client.Object)
		obj.SetFinalizers(nil)
		if err := c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("taking the finalizers off %s: %w", ObjectRef(obj), err)
		}
	}
	return deleteIf(ctx, c, reader, obj, ours, true)
}

// deleteIf deletes obj, as it was read or as it stands now under its name, when ours says so of
// it (see DeleteIfControlled), by the UID of what was judged; asRead also by its resourceVersion.
func deleteIf(ctx context.Context, c client.Client, reader client.Reader, obj client.Object, ours func(metav1.Object) bool, asRead bool) (bool, error) {
	if !ours(obj) {
		return false, nil
	}
	var judged metav1.Object = obj
	if obj.GetUID() == "" {
		if reader == nil {
			return false, fmt.Errorf("deleting %s: it was read without its UID, and there is no reader to look it up", ObjectRef(obj))
		}
		gvk, err := apiutil.GVKForObject(obj, c.Scheme())
		if err != nil {
			return false, err
		}
		live := &metav1.PartialObjectMetadata{}
		live.SetGroupVersionKind(gvk)
		if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if !ours(live) || !live.GetDeletionTimestamp().IsZero() {
			// Someone else's, or already going (a finalizer holds it): nothing to send.
			return false, nil
		}
		judged = live
	}
	uid, version := judged.GetUID(), judged.GetResourceVersion()
	pre := client.Preconditions{UID: &uid}
	if asRead {
		pre.ResourceVersion = &version
	}
	if err := c.Delete(ctx, obj, pre); client.IgnoreNotFound(err) != nil {
		return false, err
	}
	return true, nil
}
