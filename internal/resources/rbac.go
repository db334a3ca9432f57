package resources

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The tenant roles: each is a RoleBinding in the tenant namespace, of the name below, to the
// shared ClusterRole of the same name with the "landlord-" prefix.
const (
	AdminRole    = "tenant-admin"
	OperatorRole = "tenant-operator"
	ViewerRole   = "tenant-viewer"
)

// ClusterRoleName is the shared ClusterRole a tenant role's binding refers to.
func ClusterRoleName(role string) string { return "landlord-" + role }

// The tenant roles are three ClusterRoles installed once with Landlord (config/rbac/
// tenant_roles.yaml, golden-tested against ClusterRoles) and bound per tenant namespace. The
// operator needs only "bind" on exactly these three to hand them out: it holds none of what they
// grant, and cannot grant anything else.
//
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=landlord-tenant-admin;landlord-tenant-operator;landlord-tenant-viewer

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

// workloadKinds are the kinds a tenant runs its application with.
func workloadKinds() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "services", "configmaps", "persistentvolumeclaims"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale", "statefulsets", "statefulsets/scale", "replicasets"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}},
		{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}},
	}
}

// observedKinds are read by every role: what the workloads produce and the limits they run under.
func observedKinds() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods/log", "events", "endpoints", "serviceaccounts", "resourcequotas", "limitranges"}, Verbs: readVerbs},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: readVerbs},
		{APIGroups: []string{tenancyv1alpha1.GroupVersion.Group}, Resources: requestKinds, Verbs: readVerbs},
	}
}

// requestKinds are a tenant's own requests for backups and restores of its data: every role
// sees them, an admin makes them (the platform limits how many, backups.selfService). Their
// status is Landlord's; their spec never changes.
var requestKinds = []string{"backuprequests", "restorerequests"}

func withVerbs(rules []rbacv1.PolicyRule, verbs []string) []rbacv1.PolicyRule {
	for i := range rules {
		rules[i].Verbs = verbs
	}
	return rules
}

// operatorRules: workloads and configuration, including exec and port-forward; no secrets, no RBAC.
func operatorRules() []rbacv1.PolicyRule {
	rules := withVerbs(workloadKinds(), writeVerbs)
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/portforward", "pods/attach"}, Verbs: []string{"get", "create"}})
	return append(rules, observedKinds()...)
}

// adminRules: what an operator has, plus secrets and service accounts, NetworkPolicies of its
// own, a read-only view of the RBAC Landlord manages, and requests for backups and restores. No role may write RBAC, quota or
// limits: those are the isolation boundary and belong to Landlord. NetworkPolicies only add
// paths, and admission holds the tenant's to its bounds and keeps Landlord's unchanged
// (policy.NetworkPolicyPeersPolicy, policy.ManagedNetworkPoliciesPolicy).
func adminRules() []rbacv1.PolicyRule {
	return append(operatorRules(),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets", "serviceaccounts"}, Verbs: writeVerbs},
		rbacv1.PolicyRule{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: writeVerbs},
		rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: readVerbs},
		rbacv1.PolicyRule{APIGroups: []string{tenancyv1alpha1.GroupVersion.Group}, Resources: requestKinds, Verbs: []string{"create", "delete"}},
	)
}

// viewerRules: read-only, no secrets, no exec.
func viewerRules() []rbacv1.PolicyRule {
	return append(withVerbs(workloadKinds(), readVerbs), observedKinds()...)
}

// RoleRules maps each tenant role to its rules.
func RoleRules() map[string][]rbacv1.PolicyRule {
	return map[string][]rbacv1.PolicyRule{
		AdminRole:    adminRules(),
		OperatorRole: operatorRules(),
		ViewerRole:   viewerRules(),
	}
}

// ClusterRoles are the three shared tenant roles, as shipped in config/rbac/tenant_roles.yaml.
func ClusterRoles() []*rbacv1.ClusterRole {
	rules := RoleRules()
	roles := make([]*rbacv1.ClusterRole, 0, 3)
	for _, name := range []string{AdminRole, OperatorRole, ViewerRole} {
		roles = append(roles, &rbacv1.ClusterRole{
			TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{
				Name:   ClusterRoleName(name),
				Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue},
				// Every tenant's RoleBindings name these roles: uninstalling the operator's
				// Helm release, or Flux pruning its kustomization, must not take away every
				// tenant's access.
				Annotations: map[string]string{
					tenancyv1alpha1.HelmResourcePolicyAnnotation: "keep",
					tenancyv1alpha1.FluxPruneAnnotation:          "disabled",
				},
			},
			Rules: rules[name],
		})
	}
	return roles
}

// RoleBindings bind spec.access to the tenant roles, in the tenant namespace only. Each binding exists even with no subjects,
// so the set of managed objects is fixed and removing the last subject is an update.
func RoleBindings(t *tenancyv1alpha1.Tenant, namespace string) []*rbacv1.RoleBinding {
	bindings := make([]*rbacv1.RoleBinding, 0, 3)
	for _, b := range []struct {
		role     string
		subjects []tenancyv1alpha1.Subject
	}{
		{AdminRole, t.Spec.Access.Admins},
		{OperatorRole, t.Spec.Access.Operators},
		{ViewerRole, t.Spec.Access.Viewers},
	} {
		bindings = append(bindings, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: objectMeta(t, namespace, b.role),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRoleName(b.role)},
			Subjects:   subjects(b.subjects),
		})
	}
	return bindings
}

func subjects(in []tenancyv1alpha1.Subject) []rbacv1.Subject {
	if len(in) == 0 {
		return nil
	}
	out := make([]rbacv1.Subject, len(in))
	for i, s := range in {
		out[i] = rbacv1.Subject{Kind: s.Kind, Name: s.Name, Namespace: s.Namespace}
		if s.Kind != rbacv1.ServiceAccountKind {
			out[i].APIGroup = rbacv1.GroupName
		}
	}
	return out
}
