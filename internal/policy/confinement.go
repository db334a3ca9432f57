package policy

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// Operator is what the policies know of the operator and its configuration: who it is, which
// they exempt from the rules over meaningful labels, where it works, to which they confine its
// writes, and the bounds of tenants' own NetworkPolicies.
type Operator struct {
	// User is the username the operator's requests carry.
	User string
	// NamespacePrefix is prepended to a tenant's name to make its namespace's name.
	NamespacePrefix string
	// Namespaces are the operator's own: the template namespace, the credentials namespace and
	// the leader election namespace, when there is one.
	Namespaces []string
	// Network bounds what tenants' own NetworkPolicies may name.
	Network NetworkBounds
	// Trusted are the platform's own tools (isolation.trustedPrincipals) that the guards over
	// Landlord's labels, annotations and objects let through, as they let the operator through.
	Trusted []rbacv1.Subject
	// MaxTerminationGracePeriodSeconds bounds tenants' pods' termination grace period
	// (isolation.maxTerminationGracePeriod); 0 is DefaultMaxTerminationGracePeriodSeconds.
	MaxTerminationGracePeriodSeconds int64
}

// maxGraceSeconds is the termination grace period tenants' pods may ask for at most.
func (op Operator) maxGraceSeconds() int64 {
	if op.MaxTerminationGracePeriodSeconds > 0 {
		return op.MaxTerminationGracePeriodSeconds
	}
	return DefaultMaxTerminationGracePeriodSeconds
}

// OperatorOf is the operator as a configuration runs it, with its leader election lease in
// leaseNamespace ("" when the operator is not told one, as when it runs in its pod): what the
// operator builds its policies for, and what `landlordctl check` compares the installed ones with.
func OperatorOf(cfg config.Config, leaseNamespace string) Operator {
	return Operator{
		User: cfg.Controller.Identity, NamespacePrefix: cfg.NamespacePrefix,
		// Its writes are confined to tenant namespaces and these (leases and events go anywhere).
		Namespaces: operatorNamespaces(cfg, leaseNamespace),
		Network:    NetworkBoundsOf(cfg.Network),
		Trusted:    cfg.Isolation.TrustedPrincipals,
		// Whole seconds, as a pod writes it.
		MaxTerminationGracePeriodSeconds: int64(cfg.Isolation.MaxTerminationGracePeriod.Seconds()),
	}
}

// operatorNamespaces are the namespaces besides tenants' where the operator writes, each once:
// a backup namespace of its own is added to the list, and the default one (the credentials
// namespace) changes nothing of the policies.
func operatorNamespaces(cfg config.Config, leaseNamespace string) []string {
	out := []string{cfg.Secrets.TemplateNamespace, cfg.Databases.CredentialsNamespace, leaseNamespace}
	if b := cfg.Backups.Namespace; b != "" && !slices.Contains(out, b) {
		out = append(out, b)
	}
	return out
}

// trustedCondition is the match condition that lets the trusted principals through, or none
// when there are none: the policies of a configuration that trusts no one are as they were.
func (o Operator) trustedCondition() []admissionregistrationv1.MatchCondition {
	var users, groups []string
	for _, s := range o.Trusted {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			users = append(users, serviceaccount.MakeUsername(s.Namespace, s.Name))
		}
	}
	var conds []string
	if len(users) > 0 {
		conds = append(conds, `request.userInfo.username in `+celList(users))
	}
	if len(groups) > 0 {
		conds = append(conds, `request.userInfo.?groups.orValue([]).exists(g, g in `+celList(groups)+`)`)
	}
	if len(conds) == 0 {
		return nil
	}
	return []admissionregistrationv1.MatchCondition{{Name: "not-a-trusted-principal", Expression: `!(` + strings.Join(conds, " || ") + `)`}}
}

// ownNamespaces are the operator's own namespaces, each once and in order, for a CEL list.
func (o Operator) ownNamespaces() []string {
	var own []string
	for _, ns := range o.Namespaces {
		if ns != "" && !slices.Contains(own, ns) {
			own = append(own, ns)
		}
	}
	slices.Sort(own)
	return own
}

// ConfinementObjects are the policies over the operator's own requests, and their bindings.
func ConfinementObjects(op Operator) []client.Object {
	return []client.Object{OperatorNamespacesPolicy(op), clusterBinding(OperatorNamespaces)}
}

// OperatorNamespacesPolicy confines the operator's namespaced writes (create, update, delete) to
// tenant namespaces and its own. Its RBAC has to reach every namespace, since tenant namespaces
// come and go; this keeps a bug or a stolen token from writing in kube-system or the platform's
// namespaces. A tenant namespace is one labelled as Landlord's for a tenant and named as that
// tenant's namespace is, so labelling another namespace does not make it one. Events go where
// their object is (a cluster-scoped Tenant's to default) and leases where leader election says,
// so both are left out. Of the cluster-scoped kinds its RBAC lets it write, Namespaces and
// PersistentVolumes are held to tenants' (and its own namespaces). (Defence in depth.)
func OperatorNamespacesPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	own := op.ownNamespaces()
	all := func(group string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources,
				Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		}}
	}
	cluster := func(resource string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource},
				Scope: ptr.To(admissionregistrationv1.ClusterScope),
			},
		}}
	}
	tenant := cel(tenancyv1alpha1.TenantLabel)
	// isTenantNamespace is a CEL condition on a Namespace object: Landlord's, for a tenant, and
	// named as that tenant's namespace is.
	isTenantNamespace := func(ns string) string {
		return ns + `.metadata.?labels[?` + cel(tenancyv1alpha1.ManagedByLabel) + `].orValue('') == ` + cel(tenancyv1alpha1.ManagedByValue) + ` && ` +
			ns + `.metadata.?labels[?` + tenant + `].orValue('') != '' && ` +
			ns + `.metadata.name == ` + cel(op.NamespacePrefix) + ` + ` + ns + `.metadata.labels[` + tenant + `]`
	}
	// The namespace a write is judged by: what it deletes, or what it creates or leaves.
	subject := `(request.operation == 'DELETE' ? oldObject : object)`
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   validatingTypeMeta,
		ObjectMeta: objectMeta(OperatorNamespaces),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				// Of the cluster-scoped kinds, the operator writes Namespaces (tenant namespaces and
				// its own) and PersistentVolumes (a tenant's kept volumes): it may write no others.
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
					all("*", "*"),
					cluster("namespaces", admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete),
					cluster("persistentvolumes", admissionregistrationv1.Update, admissionregistrationv1.Delete),
				},
				ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
					all("", "events"), all("events.k8s.io", "events"), all("coordination.k8s.io", "leases"),
				},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "the-operator", Expression: `request.userInfo.username == ` + cel(op.User),
			}},
			Validations: []admissionregistrationv1.Validation{
				deny(`request.resource.resource in ['namespaces', 'persistentvolumes'] || `+
					`namespaceObject.metadata.name in `+celList(own)+` || (`+isTenantNamespace("namespaceObject")+`)`,
					"Landlord's operator writes only in tenant namespaces and its own ("+strings.Join(own, ", ")+")",
					`'Landlord\'s operator writes only in tenant namespaces and its own (`+strings.Join(own, ", ")+`), not in ' + namespaceObject.metadata.name + `+
						`': refused ' + request.operation + ' of ' + request.resource.resource + ' ' + request.name + '. If the namespace is meant to be the operator\'s, `+
						`name it in secrets.templateNamespace or databases.credentialsNamespace; otherwise this is a bug in Landlord or a request made with its credentials'`),
				deny(`request.resource.resource != 'namespaces' || `+subject+`.metadata.name in `+celList(own)+` || (`+isTenantNamespace(subject)+`)`,
					"Landlord's operator creates, changes and deletes only tenant namespaces and its own ("+strings.Join(own, ", ")+")",
					`'Landlord\'s operator creates, changes and deletes only tenant namespaces and its own (`+strings.Join(own, ", ")+`): refused ' + request.operation + ' of namespace ' + request.name + `+
						`'. A tenant namespace is labeled as Landlord\'s for a tenant and named `+op.NamespacePrefix+`<tenant>; otherwise this is a bug in Landlord or a request made with its credentials'`),
				// A tenant's kept volume: labelled with its tenant's UID once kept, and bound to a
				// claim in a tenant namespace before.
				deny(`request.resource.resource != 'persistentvolumes' || `+
					`oldObject.metadata.?labels[?`+cel(tenancyv1alpha1.TenantUIDLabel)+`].orValue('') != '' || `+
					`(`+cel(op.NamespacePrefix)+` != '' && oldObject.spec.?claimRef.?namespace.orValue('').startsWith(`+cel(op.NamespacePrefix)+`))`,
					"Landlord's operator changes and deletes only tenants' volumes",
					`'Landlord\'s operator changes and deletes only tenants\' volumes (labeled `+tenancyv1alpha1.TenantUIDLabel+`, or bound in a tenant namespace): refused ' + request.operation + ' of PersistentVolume ' + request.name`),
			},
		},
	}
}
