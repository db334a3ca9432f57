package resources

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// Pod Security Admission labels.
const (
	psaEnforce        = "pod-security.kubernetes.io/enforce"
	psaEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	psaWarn           = "pod-security.kubernetes.io/warn"
	psaWarnVersion    = "pod-security.kubernetes.io/warn-version"
	psaAudit          = "pod-security.kubernetes.io/audit"
	psaAuditVersion   = "pod-security.kubernetes.io/audit-version"
)

// Namespace is the tenant's namespace, labeled for Pod Security Admission and, when the tenant
// has them, its node pool and cost code; the domains it may serve and the Ingress classes it may use travel as
// annotations for admission policies, which cannot read the Tenant.
func Namespace(t *tenancyv1alpha1.Tenant, cfg *config.Config) *corev1.Namespace {
	level := string(t.Spec.PodSecurity)
	if level == "" {
		level = string(cfg.Defaults.PodSecurity)
	}
	version := cfg.Defaults.PodSecurityVersion
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: objectMeta(t, "", cfg.NamespaceName(t.Name)),
	}
	for k, v := range map[string]string{
		psaEnforce: level, psaEnforceVersion: version,
		psaWarn: level, psaWarnVersion: version,
		psaAudit: level, psaAuditVersion: version,
	} {
		ns.Labels[k] = v
	}
	if t.Spec.NodePool != "" {
		ns.Labels[tenancyv1alpha1.NodePoolLabel] = t.Spec.NodePool
	}
	if t.Spec.CostCode != "" {
		ns.Labels[tenancyv1alpha1.CostCodeLabel] = t.Spec.CostCode
	}
	// Written even empty: a tenant without a pool moved onto one must find "none" recorded to
	// know its pods were placed for no pool. The operator holds the old value back while it
	// moves the pods (SetPodsPool).
	setAnnotation(ns, tenancyv1alpha1.PodsPoolAnnotation, t.Spec.NodePool)
	if domains := AllowedDomains(t, cfg); len(domains) > 0 {
		setAnnotation(ns, tenancyv1alpha1.DomainsAnnotation, strings.Join(domains, ","))
	}
	if classes := AllowedIngressClasses(t, cfg); len(classes) > 0 {
		setAnnotation(ns, tenancyv1alpha1.IngressClassesAnnotation, strings.Join(classes, ","))
	}
	// What the configuration lets every tenant's pods name besides the defaults; written only
	// when it lists something, so an unconfigured fleet's namespaces are not rewritten.
	if classes := cfg.Isolation.PriorityClasses; len(classes) > 0 {
		setAnnotation(ns, tenancyv1alpha1.PriorityClassesAnnotation, strings.Join(classes, ","))
	}
	if tolerations := cfg.Isolation.Tolerations; len(tolerations) > 0 {
		setAnnotation(ns, tenancyv1alpha1.TolerationsAnnotation, strings.Join(tolerations, ","))
	}
	return ns
}

// PodsPool is the node pool the pods of a live tenant namespace were placed on, "" for none: the
// pool Landlord recorded, or for a namespace written before Landlord recorded it, the pool its
// label names, under which its pods were admitted.
func PodsPool(ns *corev1.Namespace) string {
	if pool, ok := ns.Annotations[tenancyv1alpha1.PodsPoolAnnotation]; ok {
		return pool
	}
	return ns.Labels[tenancyv1alpha1.NodePoolLabel]
}

// SetPodsPool records on the desired namespace among objs (as Build returns them) that its pods
// were placed on pool: while the pods of the old pool still run, the record keeps naming it.
func SetPodsPool(objs []client.Object, pool string) {
	for _, obj := range objs {
		if ns, ok := obj.(*corev1.Namespace); ok {
			setAnnotation(ns, tenancyv1alpha1.PodsPoolAnnotation, pool)
		}
	}
}

func setAnnotation(obj metav1.Object, key, value string) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	obj.SetAnnotations(annotations)
}

// AllowedIngressClasses are the Ingress classes the tenant's Ingresses may name: its
// spec.ingressClasses, or the operator's isolation.ingressClasses when it lists none. None means
// any class.
func AllowedIngressClasses(t *tenancyv1alpha1.Tenant, cfg *config.Config) []string {
	if len(t.Spec.IngressClasses) == 0 {
		return slices.Clone(cfg.Isolation.IngressClasses)
	}
	classes := make([]string, 0, len(t.Spec.IngressClasses))
	for _, c := range t.Spec.IngressClasses {
		classes = append(classes, string(c))
	}
	return classes
}

// AllowedDomains are the DNS names the tenant may serve: its spec.domains, then the default
// domain under the operator's base domain when there is one.
func AllowedDomains(t *tenancyv1alpha1.Tenant, cfg *config.Config) []string {
	domains := make([]string, 0, len(t.Spec.Domains)+1)
	for _, d := range t.Spec.Domains {
		domains = append(domains, string(d))
	}
	if d := cfg.DefaultDomain(t.Name); d != "" && !slices.Contains(domains, d) {
		domains = append(domains, d)
	}
	return domains
}
