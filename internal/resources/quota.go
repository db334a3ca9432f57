package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// QuotaName and LimitRangeName name the tenant's quota objects.
const (
	QuotaName      = "tenant-quota"
	LimitRangeName = "tenant-limits"
)

// ResourceQuota is the tenant's quota: operator defaults overridden key by key by spec.quota.
// NodePort and LoadBalancer services are capped at zero whatever the tenant asks: they would
// expose the tenant outside the platform's ingress. A Frozen tenant may run no pod at all: its
// own workloads, not only the components Landlord scales to zero, stop (see stopPods, in
// internal/controller/tenant/workloads).
func ResourceQuota(t *tenancyv1alpha1.Tenant, cfg *config.Config, namespace string) *corev1.ResourceQuota {
	hard := MergeResources(NormalizeQuota(cfg.Defaults.Quota), NormalizeQuota(t.Spec.Quota))
	hard[corev1.ResourceServicesNodePorts] = resource.MustParse("0")
	hard[corev1.ResourceServicesLoadBalancers] = resource.MustParse("0")
	if t.Spec.State == tenancyv1alpha1.StateFrozen {
		hard[corev1.ResourcePods] = resource.MustParse("0")
	}
	return &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: objectMeta(t, namespace, QuotaName),
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
}

// LimitRange gives containers default requests and limits and caps them, from the operator's
// defaults overridden key by key by spec.limits.
func LimitRange(t *tenancyv1alpha1.Tenant, cfg *config.Config, namespace string) *corev1.LimitRange {
	var own tenancyv1alpha1.Limits
	if t.Spec.Limits != nil {
		own = *t.Spec.Limits
	}
	d := cfg.Defaults.Limits
	return &corev1.LimitRange{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: objectMeta(t, namespace, LimitRangeName),
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        MergeResources(d.Default, own.Default),
			DefaultRequest: MergeResources(d.DefaultRequest, own.DefaultRequest),
			Max:            MergeResources(d.Max, own.Max),
		}}},
	}
}

// MergeResources returns base overridden by override key by key, as a new list.
func MergeResources(base, override corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(base)+len(override))
	for k, v := range base {
		out[k] = v.DeepCopy()
	}
	for k, v := range override {
		out[k] = v.DeepCopy()
	}
	return out
}

// quotaSynonyms are quota keys Kubernetes treats as the same resource; a tenant writing "cpu"
// means to override the default "requests.cpu", not to add a second limit next to it.
var quotaSynonyms = map[corev1.ResourceName]corev1.ResourceName{
	corev1.ResourceCPU:              corev1.ResourceRequestsCPU,
	corev1.ResourceMemory:           corev1.ResourceRequestsMemory,
	corev1.ResourceStorage:          corev1.ResourceRequestsStorage,
	corev1.ResourceEphemeralStorage: corev1.ResourceRequestsEphemeralStorage,
}

// NormalizeQuota is a quota with each synonym written as the key Kubernetes reports (cpu as
// requests.cpu), so that lists merged key by key override what they mean to.
func NormalizeQuota(in corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(in))
	for k, v := range in {
		if canonical, ok := quotaSynonyms[k]; ok {
			k = canonical
		}
		out[k] = v
	}
	return out
}
