// Package writes holds the writes every reconciler makes the same way: a status patched only
// when it changed, a delete only of what the owner controls, as it was read, a conflict retried
// rather than logged, and a repaired drift counted, logged and recorded as an event; and the
// names (log keys, references in messages) those writes give the objects they touch.
package writes

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// DeleteIfControlled deletes obj, as read, when owner controls it, and reports whether it sent
// the delete. The precondition means an object re-created under the same name since it was
// read (by someone else, for something else) is never deleted in its place: its UID, or, for an
// object the operator's cache keeps without one (apply.KeepInCache), its resourceVersion, which
// also refuses a delete of the same object changed since (a conflict: the next reconcile reads
// it again). One already gone is no error.
func DeleteIfControlled(ctx context.Context, c client.Client, obj client.Object, owner metav1.Object) (bool, error) {
	if !metav1.IsControlledBy(obj, owner) {
		return false, nil
	}
	var read client.Preconditions
	switch uid, rv := obj.GetUID(), obj.GetResourceVersion(); {
	case uid != "":
		read.UID = &uid
	case rv != "":
		read.ResourceVersion = &rv
	default:
		return false, fmt.Errorf("deleting %s: it was not read from the API server", ObjectRef(obj))
	}
	if err := c.Delete(ctx, obj, read); client.IgnoreNotFound(err) != nil {
		return false, err
	}
	return true, nil
}
