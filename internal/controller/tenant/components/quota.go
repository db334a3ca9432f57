package components

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/component"
)

// ownPodsFillQuota reports whether a workload of Landlord's that the quota refused a pod
// (refusal, the quota admission's words) would have had room with Landlord's own pods alone in
// the namespace: what they use plus what was asked fits every limit it was refused for. Then the
// pods that fill the quota are those Landlord did not make (the tenant's), and the failure is the
// tenant's, not the version's. It is judged from Landlord's pods, which the tenant can neither
// shape nor shrink (their labels and specs are their workloads', see the controller-labels
// policy), measured as the quota counts them (init containers, overhead, pod-level resources).
// When Landlord's own pods fill the quota (a rolling update's extra pod with no headroom), or
// the quota counts something pods do not tell, it is not. The pods are listed from the API
// server (the cache holds none), once per reconcile of a tenant whose workload the quota refuses.
func (e *Engine) ownPodsFillQuota(ctx context.Context, s *scope, refusal string, rendered []*unstructured.Unstructured) (bool, error) {
	q, ok := component.ParseQuotaRefusal(refusal)
	short := q.Shortfall()
	if !ok || len(short) == 0 {
		return false, nil
	}
	pods := &corev1.PodList{}
	if err := e.APIReader.List(ctx, pods, client.InNamespace(s.namespace)); err != nil {
		return false, fmt.Errorf("listing the pods of namespace %s to tell whose fill its quota: %w", s.namespace, err)
	}
	landlords := landlordsWorkloads(s, rendered)
	used := map[string]resource.Quantity{}
	for i := range pods.Items {
		p := &pods.Items[i]
		// The quota no longer counts a pod that has ended.
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !landlords.made(p) {
			continue
		}
		for name := range short {
			v, ok := podUse(p, name)
			if !ok {
				return false, nil
			}
			total := used[name]
			total.Add(v)
			used[name] = total
		}
	}
	for name := range short {
		room := used[name].DeepCopy()
		room.Add(q.Requested[name])
		if room.Cmp(q.Limited[name]) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// workloadNames are the workloads Landlord renders for a tenant, by kind.
type workloadNames map[string]map[string]bool

// landlordsWorkloads are the workloads of every component of the tenant: those just rendered and
// those its status lists.
func landlordsWorkloads(s *scope, rendered []*unstructured.Unstructured) workloadNames {
	out := workloadNames{}
	add := func(kind, name string) {
		if out[kind] == nil {
			out[kind] = map[string]bool{}
		}
		out[kind][name] = true
	}
	for _, o := range rendered {
		add(o.GetKind(), o.GetName())
	}
	for _, st := range s.tenant.Status.Components {
		for _, key := range st.Inventory {
			if gk, name, err := component.ParseInventoryKey(key); err == nil {
				add(gk.Kind, name)
			}
		}
	}
	return out
}

// madeBy are the kinds of Landlord's workloads whose pods count as its own, each by the label its
// controller puts on the pods it makes. Only Kubernetes' controllers set those labels, and a pod
// carrying one keeps its owner references (the controller-labels policy), so a tenant's pod
// naming one of Landlord's workloads as its owner, which anyone may write, is not taken for
// Landlord's. A ReplicaSet or ReplicationController a template renders bare puts no such label
// on its pods, and neither do the Jobs of a CronJob, which are told from a tenant's own only by
// a name anyone may take: their pods are not counted as Landlord's.
var madeBy = map[schema.GroupKind]string{
	{Group: "apps", Kind: "StatefulSet"}: appsv1.ControllerRevisionHashLabelKey,
	{Group: "apps", Kind: "DaemonSet"}:   appsv1.ControllerRevisionHashLabelKey,
	{Group: "batch", Kind: "Job"}:        batchv1.ControllerUidLabel,
}

// made reports whether one of Landlord's workloads made p: its controller is one of them (by
// madeBy), or a ReplicaSet of one of its Deployments (named after it and the pod's template
// hash).
func (w workloadNames) made(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	if label, ok := madeBy[gv.WithKind(ref.Kind).GroupKind()]; ok {
		return p.Labels[label] != "" && w[ref.Kind][ref.Name]
	}
	hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	return gv.Group == "apps" && ref.Kind == "ReplicaSet" && hash != "" && strings.HasSuffix(ref.Name, "-"+hash) &&
		w["Deployment"][strings.TrimSuffix(ref.Name, "-"+hash)]
}

// podUse is what p counts for against a quota's resource name, as the quota counts it, and
// false for a name a pod's spec does not tell (an object count, an extended resource).
func podUse(p *corev1.Pod, name string) (resource.Quantity, bool) {
	switch name {
	case "pods", "count/pods":
		return *resource.NewQuantity(1, resource.DecimalSI), true
	}
	res := corev1.ResourceName(strings.TrimPrefix(strings.TrimPrefix(name, "limits."), "requests."))
	switch res {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
	default:
		return resource.Quantity{}, false
	}
	list := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	if strings.HasPrefix(name, "limits.") {
		list = resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
	}
	return list[res], true
}
