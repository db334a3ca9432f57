package usage

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// PodMetrics reads what pods use.
type PodMetrics interface {
	// Used is what the pods of each namespace use together, by namespace. served is false when
	// the cluster serves no metrics API.
	Used(ctx context.Context) (used map[string]corev1.ResourceList, served bool, err error)
}

// The sampler reads pods' usage (metrics.k8s.io serves no watch; only list is asked).
// +kubebuilder:rbac:groups=metrics.k8s.io,resources=pods,verbs=list

// MetricsAPI reads pods' usage from the cluster's metrics API (metrics.k8s.io/v1beta1): one
// list request for every pod of the cluster, as the API selects pods by their own labels only.
type MetricsAPI struct {
	Client metricsclient.Interface
}

// Used implements PodMetrics.
func (m MetricsAPI) Used(ctx context.Context) (map[string]corev1.ResourceList, bool, error) {
	list, err := m.Client.MetricsV1beta1().PodMetricses(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		// No APIService for metrics.k8s.io: the cluster has no metrics API, which is no fault.
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	type sum struct{ nanoCPU, memory int64 }
	sums := map[string]*sum{}
	for i := range list.Items {
		p := &list.Items[i]
		s := sums[p.Namespace]
		if s == nil {
			s = &sum{}
			sums[p.Namespace] = s
		}
		for _, c := range p.Containers {
			cpu, memory := c.Usage[corev1.ResourceCPU], c.Usage[corev1.ResourceMemory]
			s.nanoCPU += cpu.ScaledValue(resource.Nano)
			s.memory += memory.Value()
		}
	}
	out := make(map[string]corev1.ResourceList, len(sums))
	for ns, s := range sums {
		out[ns] = used(s.nanoCPU, s.memory)
	}
	return out, true, nil
}

// mebibyte is what memory is rounded to.
const mebibyte = 1 << 20

// used is a namespace's usage as a status keeps it: CPU to the millicore, memory to the
// mebibyte (nearest), so that a figure that moves by less keeps the tenant's status as it is.
func used(nanoCPU, memory int64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity((nanoCPU+500_000)/1_000_000, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity((memory+mebibyte/2)/mebibyte*mebibyte, resource.BinarySI),
	}
}

// noPods is the usage of a tenant none of whose pods the metrics API reports.
var noPods = used(0, 0)
