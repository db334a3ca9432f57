package tenant

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/component"
)

// ownPodsFillQuota reports whether the tenant's own pods (those no workload Landlord renders
// made) use at least what a workload of Landlord's lacked when the quota refused its pod
// (refusal, the quota admission's words): freeing them would make room, so the failure is the
// tenant's, not the version's. When Landlord's own pods fill the quota (a rolling update's extra
// pod with no headroom, pods still terminating), or the quota counts something pods do not
// tell, it is not. The pods are listed from the API server (the cache holds none), once per
// reconcile of a tenant whose workload the quota refuses.
func (r *Reconciler) ownPodsFillQuota(ctx context.Context, s *tenantScope, refusal string, rendered []*unstructured.Unstructured) (bool, error) {
	q, ok := component.ParseQuotaRefusal(refusal)
	if !ok {
		return false, nil
	}
	short := q.Shortfall()
	if len(short) == 0 {
		return false, nil
	}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(s.namespace)); err != nil {
		return false, fmt.Errorf("listing the pods of namespace %s to tell whose fill its quota: %w", s.namespace, err)
	}
	landlords := landlordsWorkloads(s, rendered)
	used := map[string]resource.Quantity{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || landlords.made(p) {
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
	for name, lack := range short {
		if have := used[name]; have.Cmp(lack) < 0 {
			return false, nil
		}
	}
	return true, nil
}

// workloadNames are the workloads Landlord renders for a tenant, by kind.
type workloadNames map[string]map[string]bool

// landlordsWorkloads are the workloads of every component of the tenant: those just rendered and
// those its status lists.
func landlordsWorkloads(s *tenantScope, rendered []*unstructured.Unstructured) workloadNames {
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

// made reports whether one of Landlord's workloads made p: its controller is one of them, a
// ReplicaSet of one of its Deployments (named after it and the pod's template hash), or a Job
// of one of its CronJobs.
func (w workloadNames) made(p *corev1.Pod) bool {
	for _, ref := range p.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		if w[ref.Kind][ref.Name] {
			return true
		}
		switch ref.Kind {
		case "ReplicaSet":
			hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
			return hash != "" && w["Deployment"][strings.TrimSuffix(ref.Name, "-"+hash)]
		case "Job":
			for cronJob := range w["CronJob"] {
				if strings.HasPrefix(ref.Name, cronJob+"-") {
					return true
				}
			}
		}
	}
	return false
}

// podUse is what p counts for against a quota's resource name, and false for a name a pod's
// spec does not tell (an object count, an extended resource).
func podUse(p *corev1.Pod, name string) (resource.Quantity, bool) {
	switch name {
	case "pods", "count/pods":
		return *resource.NewQuantity(1, resource.DecimalSI), true
	}
	limits := strings.HasPrefix(name, "limits.")
	res := corev1.ResourceName(strings.TrimPrefix(strings.TrimPrefix(name, "limits."), "requests."))
	switch res {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
	default:
		return resource.Quantity{}, false
	}
	var sum resource.Quantity
	for _, c := range p.Spec.Containers {
		list := c.Resources.Requests
		if limits {
			list = c.Resources.Limits
		}
		if v, ok := list[res]; ok {
			sum.Add(v)
		}
	}
	return sum, true
}
