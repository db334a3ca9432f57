package config_test

import (
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/internal/config"
)

// The admission policy compares a pod's tolerations with isolation.tolerations as strings, so an
// entry not written the way it writes them would silently match nothing: such a file is refused,
// naming the entry.
func TestTheSchedulingAllowancesAreValidated(t *testing.T) {
	cases := []parseCase{
		{"a key alone is accepted", "isolation: {tolerations: [example.com/batch]}", ""},
		{"a key, value and effect are accepted", "isolation: {tolerations: ['dedicated=batch:NoExecute'], priorityClasses: [tenant-batch]}", ""},
		{"an unknown effect is refused", "isolation: {tolerations: ['nvidia.com/gpu:NoScheduling']}", `isolation.tolerations[0]: "nvidia.com/gpu:NoScheduling" has effect "NoScheduling"`},
		{"an empty key is refused", "isolation: {tolerations: [':NoSchedule']}", `isolation.tolerations[0]: ":NoSchedule" has no taint key`},
		{"a value that is no label value is refused", "isolation: {tolerations: ['dedicated=a b']}", `isolation.tolerations[0]: "dedicated=a b" has no taint value`},
		{"a toleration listed twice is refused", "isolation: {tolerations: [a, a]}", `isolation.tolerations[1]: "a" is listed twice`},
		{"a taint of Kubernetes' node lifecycle is refused", "isolation: {tolerations: ['node.kubernetes.io/unschedulable:NoSchedule']}", `isolation.tolerations[0]: "node.kubernetes.io/unschedulable:NoSchedule" names a taint of Kubernetes' node lifecycle`},
		{"a priority class that is no name is refused", "isolation: {priorityClasses: [Batch_1]}", `isolation.priorityClasses[0]: "Batch_1" is not a PriorityClass name`},
	}
	expectParsed(t, cases)
}

// A trusted principal is let past Landlord's guards, so one that a tenant could be or become
// would let the tenant past them too: such a file is refused, naming the entry and why.
func TestTheTrustedPrincipalsAreValidated(t *testing.T) {
	cases := []parseCase{
		{"a backup tool's ServiceAccount is accepted", "isolation: {trustedPrincipals: [{kind: ServiceAccount, namespace: velero, name: velero}]}", ""},
		{"a policy engine's user and group are accepted", "isolation: {trustedPrincipals: [{kind: User, name: 'system:serviceaccount:kyverno:kyverno-background-controller'}, {kind: Group, apiGroup: rbac.authorization.k8s.io, name: platform-tools}]}", ""},
		{"a ServiceAccount in a tenant namespace is refused", "isolation: {trustedPrincipals: [{kind: ServiceAccount, namespace: tenant-acme, name: restore}]}", `isolation.trustedPrincipals[0].namespace: "tenant-acme" is or may become a tenant's namespace`},
		{"a tenant namespace's ServiceAccount written as a user is refused", "isolation: {trustedPrincipals: [{kind: User, name: 'system:serviceaccount:tenant-acme:restore'}]}", `isolation.trustedPrincipals[0].name: "system:serviceaccount:tenant-acme:restore" is a ServiceAccount of namespace tenant-acme`},
		{"the ServiceAccounts of a tenant namespace as a group are refused", "isolation: {trustedPrincipals: [{kind: Group, name: 'system:serviceaccounts:tenant-acme'}]}", `isolation.trustedPrincipals[0].name: "system:serviceaccounts:tenant-acme" holds the ServiceAccounts of namespace tenant-acme`},
		{"every authenticated user is refused", "isolation: {trustedPrincipals: [{kind: Group, name: 'system:authenticated'}]}", `isolation.trustedPrincipals[0].name: "system:authenticated" holds every user or ServiceAccount`},
		{"every ServiceAccount is refused", "isolation: {trustedPrincipals: [{kind: Group, name: 'system:serviceaccounts'}]}", `isolation.trustedPrincipals[0].name: "system:serviceaccounts" holds every user or ServiceAccount`},
		{"anonymous requests are refused", "isolation: {trustedPrincipals: [{kind: User, name: 'system:anonymous'}]}", `isolation.trustedPrincipals[0].name: "system:anonymous" is every unauthenticated request`},
		{"a principal with no name is refused", "isolation: {trustedPrincipals: [{kind: User}]}", `isolation.trustedPrincipals[0].name: required`},
		{"a kind RBAC does not know is refused", "isolation: {trustedPrincipals: [{kind: Robot, name: r2}]}", `isolation.trustedPrincipals[0].kind: "Robot" is not User, Group or ServiceAccount`},
		{"a ServiceAccount without a namespace is refused", "isolation: {trustedPrincipals: [{kind: ServiceAccount, name: velero}]}", `isolation.trustedPrincipals[0].namespace: "" is not a namespace name`},
		{"a principal listed twice is refused", "isolation: {trustedPrincipals: [{kind: User, name: ops}, {kind: User, name: ops}]}", `isolation.trustedPrincipals[1]: listed twice (also [0])`},
		{"the namespace prefix decides which namespaces are tenants'", "namespacePrefix: customer-\nisolation: {trustedPrincipals: [{kind: ServiceAccount, namespace: customer-tools, name: backup}]}", `isolation.trustedPrincipals[0].namespace: "customer-tools" is or may become a tenant's namespace (namespacePrefix "customer-")`},
	}
	expectParsed(t, cases)
}

// parseCase is a configuration file and the error it is refused with, "" when it is accepted.
type parseCase struct {
	name  string
	file  string
	error string
}

func expectParsed(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.file))
			switch {
			case tc.error == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)):
				t.Errorf("error = %v, want one containing %s", err, tc.error)
			}
		})
	}
}
