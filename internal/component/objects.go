package component

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/apply"
)

// ScaleToZero sets spec.replicas to 0 on the Deployments and StatefulSets among objs, in place,
// so that a Frozen tenant keeps every object and its data but runs no pods. Other kinds are left
// alone: scaling is all freezing needs, and a ConfigMap or Service costs nothing idle.
func ScaleToZero(objs []*unstructured.Unstructured) {
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Group != "apps" || (gvk.Kind != "Deployment" && gvk.Kind != "StatefulSet") {
			continue
		}
		// int64, as the API server returns it, so the frozen object compares equal to the live one.
		_ = unstructured.SetNestedField(o.Object, int64(0), "spec", "replicas")
	}
}

// Health is kstatus's verdict on a live object.
type Health struct {
	// Ready: its status is Current (a Deployment rolled out, a StatefulSet updated, a kind
	// without status simply present).
	Ready bool
	// Failed: it will not get there without a change, such as a Deployment past its progress
	// deadline (an image that cannot be pulled, pods that never pass readiness).
	Failed bool
	// Message says what is awaited ("Available: 1/3") or what failed, with the object's own
	// words where it has them.
	Message string
	// QuotaExceeded: its pods cannot be created because the namespace's quota is used up, while
	// the version's own request fits the quota (see QuotaShortage). Freeing room, or a larger
	// quota, lets it go on unchanged.
	QuotaExceeded bool
}

// HealthOf is kstatus's verdict on a live object.
func HealthOf(obj *unstructured.Unstructured) (Health, error) {
	res, err := status.Compute(obj)
	if err != nil {
		return Health{}, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	h := Health{Ready: res.Status == status.CurrentStatus, Failed: res.Status == status.FailedStatus, Message: res.Message}
	if h.Failed {
		// kstatus says what failed in its own words; the object's condition says why.
		for _, c := range res.Conditions {
			if c.Type == status.ConditionStalled && c.Message != "" {
				h.Message += ": " + c.Message
			}
		}
	}
	if !h.Ready && h.Message == "" {
		h.Message = res.Status.String()
	}
	if !h.Ready {
		if msg, ok := replicaFailure(obj); ok && QuotaShortage(msg) {
			h.QuotaExceeded, h.Failed = true, false
			h.Message += ": " + msg
		}
	}
	return h, nil
}

// replicaFailure is the message of a workload's ReplicaFailure condition (a Deployment's, taken
// from its newest ReplicaSet, or a ReplicaSet's own) while it holds.
func replicaFailure(obj *unstructured.Unstructured) (string, bool) {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "ReplicaFailure" && m["status"] == "True" {
			msg, _ := m["message"].(string)
			return msg, true
		}
	}
	return "", false
}

// QuotaShortage reports whether a pod creation refused by the quota admission ("exceeded quota:
// NAME, requested: pods=1, used: pods=2, limited: pods=2") was refused for want of room, not for
// a request larger than the quota itself. The first is the tenant's: its own pods, or a quota
// with no room for a rolling update's extra pod, fill it. The second is the version's: no tenant
// with that quota can run it, and it must count against a rollout like any other failure.
// A message it cannot read is not a shortage.
func QuotaShortage(message string) bool {
	_, rest, ok := strings.Cut(message, "exceeded quota: ")
	if !ok {
		return false
	}
	_, rest, ok = strings.Cut(rest, ", requested: ")
	if !ok {
		return false
	}
	requested, rest, ok := strings.Cut(rest, ", used: ")
	if !ok {
		return false
	}
	_, limited, ok := strings.Cut(rest, ", limited: ")
	if !ok {
		return false
	}
	limits := quantities(limited)
	asked := quantities(requested)
	if len(asked) == 0 || len(limits) == 0 {
		return false
	}
	for name, q := range asked {
		limit, ok := limits[name]
		if !ok || q.Cmp(limit) > 0 {
			return false
		}
	}
	return true
}

// quantities reads "name=quantity,name=quantity".
func quantities(list string) map[string]resource.Quantity {
	out := map[string]resource.Quantity{}
	for pair := range strings.SplitSeq(list, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			continue
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			continue
		}
		out[name] = q
	}
	return out
}

// InventoryKey identifies an object of a component within the tenant namespace as
// "group/Kind/name" ("/ConfigMap/x" for the core group). The version is left out on purpose: a
// template moving a kind to a new API version still owns the same object, and must not prune it.
func InventoryKey(obj *unstructured.Unstructured) string {
	return obj.GroupVersionKind().Group + "/" + obj.GetKind() + "/" + obj.GetName()
}

// ParseInventoryKey reverses InventoryKey.
func ParseInventoryKey(key string) (gk schema.GroupKind, name string, err error) {
	parts := strings.Split(key, "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return schema.GroupKind{}, "", fmt.Errorf("inventory entry %q is not group/Kind/name", key)
	}
	return schema.GroupKind{Group: parts[0], Kind: parts[1]}, parts[2], nil
}

// MarkHealth records kstatus's verdict on obj, of kind gvk, in apply.HealthAnnotation, for a
// cache that then keeps obj without its body and status (the verdict needs both).
func MarkHealth(obj client.Object, gvk schema.GroupVersionKind) {
	h, err := healthOf(obj, gvk)
	if err != nil {
		h.Message = err.Error()
	}
	raw, err := json.Marshal(h)
	if err != nil {
		return
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[apply.HealthAnnotation] = string(raw)
	obj.SetAnnotations(annotations)
}

// LiveHealth is kstatus's verdict on obj as the API server answered a write: from its body and
// status alone. An annotation there is whatever someone wrote on the server, a tenant's user
// included, and never the cache's record.
func LiveHealth(obj client.Object, gvk schema.GroupVersionKind) (Health, error) {
	return healthOf(obj, gvk)
}

// CachedHealth is the verdict MarkHealth recorded on obj as it entered the operator's cache (the
// cache transform drops any value the server held first), or kstatus's verdict on obj itself
// when none was recorded.
func CachedHealth(obj client.Object, gvk schema.GroupVersionKind) (Health, error) {
	if raw, ok := obj.GetAnnotations()[apply.HealthAnnotation]; ok {
		var h Health
		if err := json.Unmarshal([]byte(raw), &h); err == nil {
			return h, nil
		}
	}
	return healthOf(obj, gvk)
}

// healthOf is HealthOf for an object of any Go type.
func healthOf(obj client.Object, gvk schema.GroupVersionKind) (Health, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return Health{}, err
		}
		u = &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(gvk)
	}
	return HealthOf(u)
}
