package writes

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ObjectLogKeys are the log keys that name an object Landlord acts on. controller-runtime's
// reconcile logger already carries "namespace" and "name" for the object reconciled (the
// tenant), so another object's are named apart: a log query on namespace or name then always
// means the reconciled object.
func ObjectLogKeys(obj client.Object) []any {
	keys := []any{"kind", obj.GetObjectKind().GroupVersionKind().Kind, "objectName", obj.GetName()}
	if ns := obj.GetNamespace(); ns != "" {
		keys = append(keys, "objectNamespace", ns)
	}
	return keys
}

// ObjectRef names obj as kind/namespace/name, or kind/name when it has no namespace, in events and
// messages.
func ObjectRef(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if obj.GetNamespace() == "" {
		return kind + "/" + obj.GetName()
	}
	return kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// RetryConflict looks again shortly at an object someone wrote since the cache saw it, rather
// than logging the optimistic-lock conflict as an error; an object gone meanwhile is done.
func RetryConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{}, client.IgnoreNotFound(err)
}
