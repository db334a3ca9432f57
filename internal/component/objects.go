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

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
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

// StampSwitched puts on the pods of a Deployment, StatefulSet or DaemonSet the time its tenant's
// databases last switched server (DatabasesSwitchedAnnotation on the pod template), so that the
// workload rolls its pods onto the new server's credentials. Other kinds, and an empty time,
// are left alone: a tenant whose databases never moved renders as before.
func StampSwitched(obj *unstructured.Unstructured, at string) {
	gvk := obj.GroupVersionKind()
	if at == "" || gvk.Group != "apps" || (gvk.Kind != "Deployment" && gvk.Kind != "StatefulSet" && gvk.Kind != "DaemonSet") {
		return
	}
	annotations, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "annotations")
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[tenancyv1alpha1.DatabasesSwitchedAnnotation] = at
	_ = unstructured.SetNestedStringMap(obj.Object, annotations, "spec", "template", "metadata", "annotations")
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
	// its replicas would fit the quota alone (see QuotaShortage). Quota is the quota admission's
	// refusal. Freeing room, or a larger quota, lets it go on unchanged.
	QuotaExceeded bool
	Quota         string
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
		replicas, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		if !found || err != nil {
			replicas = 1
		}
		if msg, ok := replicaFailure(obj); ok && QuotaShortage(msg, max(replicas, 1)) {
			h.QuotaExceeded, h.Quota = true, msg
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

// QuotaRefusal is what the quota admission said when it refused a pod ("exceeded quota: NAME,
// requested: pods=1, used: pods=2, limited: pods=2"): what the pod asked for, what the namespace
// used, and the quota's hard limits, by resource.
type QuotaRefusal struct {
	Requested, Used, Limited map[string]resource.Quantity
}

// ParseQuotaRefusal reads a quota admission's refusal out of a message that quotes it; false when
// the message holds none it can read.
func ParseQuotaRefusal(message string) (QuotaRefusal, bool) {
	_, rest, ok := strings.Cut(message, "exceeded quota: ")
	if !ok {
		return QuotaRefusal{}, false
	}
	_, rest, ok = strings.Cut(rest, ", requested: ")
	if !ok {
		return QuotaRefusal{}, false
	}
	requested, rest, ok := strings.Cut(rest, ", used: ")
	if !ok {
		return QuotaRefusal{}, false
	}
	used, limited, ok := strings.Cut(rest, ", limited: ")
	if !ok {
		return QuotaRefusal{}, false
	}
	q := QuotaRefusal{Requested: quantities(requested), Used: quantities(used), Limited: quantities(limited)}
	if len(q.Requested) == 0 || len(q.Limited) == 0 {
		return QuotaRefusal{}, false
	}
	return q, true
}

// Fits reports whether replicas pods of the refused request fit the quota's limits with nothing
// else in the namespace.
func (q QuotaRefusal) Fits(replicas int64) bool {
	for name, asked := range q.Requested {
		limit, ok := q.Limited[name]
		if !ok {
			return false
		}
		total := asked.DeepCopy()
		total.Mul(replicas)
		if total.Cmp(limit) > 0 {
			return false
		}
	}
	return true
}

// Shortfall is, for each resource the pod was refused for, how much more than the limit it
// would have made the namespace use (used + requested - limited).
func (q QuotaRefusal) Shortfall() map[string]resource.Quantity {
	out := map[string]resource.Quantity{}
	for name, asked := range q.Requested {
		limit, ok := q.Limited[name]
		if !ok {
			continue
		}
		over := q.Used[name].DeepCopy()
		over.Add(asked)
		over.Sub(limit)
		if over.Sign() > 0 {
			out[name] = over
		}
	}
	return out
}

// QuotaShortage reports whether a pod creation refused by the quota admission was refused for
// want of room, not for a version larger than the quota itself: replicas pods of its request
// fit the quota's limits. The first may be the tenant's doing (its own pods fill the quota: see
// the tenant reconciler); the second is the version's: no tenant with that quota can run it, and
// it counts against a rollout like any other failure. A message it cannot read is no shortage.
func QuotaShortage(message string, replicas int64) bool {
	q, ok := ParseQuotaRefusal(message)
	return ok && q.Fits(replicas)
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
