package component

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The operator's role grants exactly the kinds of DefaultAllowedKinds, with these markers (kept
// next to the list so the two change together):
//
// +kubebuilder:rbac:groups="",resources=services;configmaps;secrets;persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes;grpcroutes,verbs=get;list;watch;create;patch;delete

// DefaultAllowedKinds are the kinds a component may render when the operator configuration does
// not list its own (components.allowedKinds): what an application needs to run, be reached and
// scale. Not Pod or ReplicaSet (a workload controller owns those), not ServiceAccount (a token
// identity the tenant's roles do not grant).
//
// The operator's role grants exactly these kinds (the markers above); a kind added in the
// configuration also needs a grant for the operator's ServiceAccount, which the tenant then sees
// asked for in its status until it is given.
func DefaultAllowedKinds() []schema.GroupKind {
	return []schema.GroupKind{
		{Group: "apps", Kind: "Deployment"},
		{Group: "apps", Kind: "StatefulSet"},
		{Group: "", Kind: "Service"},
		{Group: "", Kind: "ConfigMap"},
		{Group: "", Kind: "Secret"},
		{Group: "", Kind: "PersistentVolumeClaim"},
		{Group: "batch", Kind: "Job"},
		{Group: "batch", Kind: "CronJob"},
		{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"},
		{Group: "policy", Kind: "PodDisruptionBudget"},
		{Group: "networking.k8s.io", Kind: "Ingress"},
		{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute"},
		{Group: "gateway.networking.k8s.io", Kind: "GRPCRoute"},
	}
}

// neverGroups and neverKinds are what a component may never render, whatever the configuration
// says: the tenant's isolation is built of them, and the tenant's roles promise it never controls
// them. A template is written by people other than the platform team, and runs for every tenant
// that pins it.
var (
	neverGroups = map[string]string{
		"rbac.authorization.k8s.io":    "RBAC decides who may do what in the tenant namespace",
		"admissionregistration.k8s.io": "admission policies enforce the tenant's isolation",
		"apiextensions.k8s.io":         "API definitions are cluster-wide",
		"apiregistration.k8s.io":       "API services are cluster-wide",
		"tenancy.landlord.dev":         "Landlord's own objects decide what tenants exist and what they get",
		// Network policy of the cluster's CNI and of the Network Policy API: the same boundary
		// as a NetworkPolicy.
		"policy.networking.k8s.io": "network policies isolate the tenant from others",
		"cilium.io":                "network policies isolate the tenant from others",
		"crd.projectcalico.org":    "network policies isolate the tenant from others",
		"projectcalico.org":        "network policies isolate the tenant from others",
	}
	neverKinds = map[schema.GroupKind]string{
		{Group: "", Kind: "Namespace"}:                      "namespaces are Landlord's",
		{Group: "", Kind: "ResourceQuota"}:                  "the quota bounds what the tenant may use",
		{Group: "", Kind: "LimitRange"}:                     "the limit range bounds what the tenant may use",
		{Group: "networking.k8s.io", Kind: "NetworkPolicy"}: "network policies isolate the tenant from others",
		// Endpoints written by hand send a Service's traffic anywhere, another tenant's pods
		// included, past the ingress controller as an ExternalName Service would.
		{Group: "", Kind: "Endpoints"}:                      "hand-written endpoints can send a Service's traffic to another tenant",
		{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:  "hand-written endpoints can send a Service's traffic to another tenant",
		{Group: "", Kind: "Node"}:                           "nodes are cluster-wide",
		{Group: "", Kind: "PersistentVolume"}:               "persistent volumes are cluster-wide",
		{Group: "storage.k8s.io", Kind: "StorageClass"}:     "storage classes are cluster-wide",
		{Group: "scheduling.k8s.io", Kind: "PriorityClass"}: "priority classes are cluster-wide",
	}
)

// NeverAllowed says why a component may never render the kind, whatever the configuration; ""
// if it may be allowed. Cluster-scoped kinds the API server knows are refused too (KindError),
// where the scope is known.
func NeverAllowed(gk schema.GroupKind) string {
	if why := neverGroups[gk.Group]; why != "" {
		return why
	}
	return neverKinds[gk]
}

// KindError is a kind a component may not render, worded for the tenant's status.
type KindError struct {
	Kind schema.GroupKind
	// Name is the object's name in the template.
	Name string
	// Never: no configuration can allow it; otherwise it can be added to components.allowedKinds.
	Never bool
	// ClusterScoped: the API server says the kind is cluster-scoped.
	ClusterScoped bool
	Why           string
}

func (e *KindError) Error() string {
	if e.ClusterScoped {
		return fmt.Sprintf("%s %s is cluster-scoped; a component may only create objects in the tenant namespace", e.Kind.Kind, e.Name)
	}
	if e.Never {
		return fmt.Sprintf("%s %s: a component may never render %s (%s)", e.Kind.Kind, e.Name, kindName(e.Kind), e.Why)
	}
	return fmt.Sprintf("%s %s: %s is not among the kinds components may render: add {group: %q, kind: %s} to components.allowedKinds in the operator configuration, and grant the operator's ServiceAccount its writes", e.Kind.Kind, e.Name, kindName(e.Kind), e.Kind.Group, e.Kind.Kind)
}

// CheckKind refuses an object of a kind a component may not render: a cluster-scoped kind, a
// kind never allowed, or one not in allowed.
func CheckKind(allowed []schema.GroupKind, gk schema.GroupKind, name string, namespaced bool) error {
	switch {
	case !namespaced:
		return &KindError{Kind: gk, Name: name, Never: true, ClusterScoped: true}
	case NeverAllowed(gk) != "":
		return &KindError{Kind: gk, Name: name, Never: true, Why: NeverAllowed(gk)}
	case !slices.Contains(allowed, gk):
		return &KindError{Kind: gk, Name: name}
	}
	return nil
}

// kindName is Kind.group, or Kind for the core group, as kubectl writes it.
func kindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.String()
}
