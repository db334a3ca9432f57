package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// A role that "cannot read secrets" but may run a pod mounting any Secret of the namespace, exec
// into it, or run it as any ServiceAccount, reads them all the same. Each role's promise in
// docs/isolation.md (Tenant roles) is what the role can really do, indirect paths included: this
// matrix asks the real authorizer, as each impersonated tenant user, and makes the indirect
// requests for real.
func TestEachTenantRoleCanDoExactlyWhatTheDocsPromise(t *testing.T) {
	createTenant(t, newTenant("promises", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "ada"}}
		t.Spec.Access.Operators = []tenancyv1alpha1.Subject{{Kind: "User", Name: "otto"}}
		t.Spec.Access.Viewers = []tenancyv1alpha1.Subject{{Kind: "User", Name: "vera"}}
	}))
	const ns = "tenant-promises"
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-key"}, StringData: map[string]string{"key": "s3cr3t"}})).To(Succeed())
	g.Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}})).To(Succeed())

	type path struct {
		name                          string
		verb, group, resource, subres string
	}
	var (
		readSecret      = path{"reads a Secret through the API", "get", "", "secrets", ""}
		listSecrets     = path{"lists Secrets", "list", "", "secrets", ""}
		createPod       = path{"creates a pod (which may mount any Secret of the namespace)", "create", "", "pods", ""}
		createWorkload  = path{"creates a Deployment (whose pods may mount any Secret)", "create", "apps", "deployments", ""}
		exec            = path{"execs into a pod", "create", "", "pods", "exec"}
		portForward     = path{"port-forwards to a pod", "create", "", "pods", "portforward"}
		readLogs        = path{"reads pod logs", "get", "", "pods", "log"}
		requestToken    = path{"requests a ServiceAccount token", "create", "", "serviceaccounts", "token"}
		createSA        = path{"creates a ServiceAccount", "create", "", "serviceaccounts", ""}
		impersonateSA   = path{"impersonates a ServiceAccount", "impersonate", "", "serviceaccounts", ""}
		bindRole        = path{"creates a RoleBinding", "create", "rbac.authorization.k8s.io", "rolebindings", ""}
		editQuota       = path{"edits the quota", "patch", "", "resourcequotas", ""}
		editNetpol      = path{"edits a NetworkPolicy (its own: admission keeps Landlord's)", "patch", "networking.k8s.io", "networkpolicies", ""}
		readNetpol      = path{"reads the NetworkPolicies", "list", "networking.k8s.io", "networkpolicies", ""}
		editNamespace   = path{"edits its namespace", "patch", "", "namespaces", ""}
		readConfig      = path{"reads ConfigMaps", "list", "", "configmaps", ""}
		writeConfig     = path{"writes ConfigMaps", "create", "", "configmaps", ""}
		evictPods       = path{"deletes pods", "delete", "", "pods", ""}
		escalateRole    = path{"escalates a role", "escalate", "rbac.authorization.k8s.io", "roles", ""}
		readOtherTenant = path{"reads pods of another tenant", "list", "", "pods", ""}
		requestBackup   = path{"asks for a backup of its tenant", "create", tenancyv1alpha1.GroupVersion.Group, "backuprequests", ""}
		requestRestore  = path{"asks for a restore into its tenant", "create", tenancyv1alpha1.GroupVersion.Group, "restorerequests", ""}
		readRequests    = path{"reads the backup requests", "list", tenancyv1alpha1.GroupVersion.Group, "backuprequests", ""}
		writeRequestSt  = path{"writes a request's status", "patch", tenancyv1alpha1.GroupVersion.Group, "restorerequests", "status"}
	)
	// The promise table of docs/isolation.md ("Tenant roles"), row by row.
	promises := map[string]map[path]bool{
		"ada": { // tenant-admin
			readSecret: true, listSecrets: true, createPod: true, createWorkload: true, exec: true, portForward: true, readLogs: true,
			requestToken: false, createSA: true, impersonateSA: false, bindRole: false, editQuota: false, editNetpol: true, readNetpol: true,
			editNamespace: false, readConfig: true, writeConfig: true, evictPods: true, escalateRole: false, readOtherTenant: false,
			requestBackup: true, requestRestore: true, readRequests: true, writeRequestSt: false,
		},
		"otto": { // tenant-operator
			readSecret: false, listSecrets: false, createPod: true, createWorkload: true, exec: true, portForward: true, readLogs: true,
			requestToken: false, createSA: false, impersonateSA: false, bindRole: false, editQuota: false, editNetpol: false, readNetpol: false,
			editNamespace: false, readConfig: true, writeConfig: true, evictPods: true, escalateRole: false, readOtherTenant: false,
			requestBackup: false, requestRestore: false, readRequests: true, writeRequestSt: false,
		},
		"vera": { // tenant-viewer
			readSecret: false, listSecrets: false, createPod: false, createWorkload: false, exec: false, portForward: false, readLogs: true,
			requestToken: false, createSA: false, impersonateSA: false, bindRole: false, editQuota: false, editNetpol: false, readNetpol: false,
			editNamespace: false, readConfig: true, writeConfig: false, evictPods: false, escalateRole: false, readOtherTenant: false,
			requestBackup: false, requestRestore: false, readRequests: true, writeRequestSt: false,
		},
	}
	for user, table := range promises {
		c := impersonate(t, user)
		for p, want := range table {
			verdict := "may not"
			if want {
				verdict = "may"
			}
			t.Run(fmt.Sprintf("%s %s: %s", user, verdict, p.name), func(t *testing.T) {
				g := NewWithT(t)
				namespace := ns
				if p == readOtherTenant {
					namespace = "tenant-isolated-neighbour"
				}
				review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: namespace, Verb: p.verb, Group: p.group, Resource: p.resource, Subresource: p.subres,
					},
				}}
				if p == editNamespace {
					review.Spec.ResourceAttributes.Namespace, review.Spec.ResourceAttributes.Name = "", ns
				}
				g.Expect(c.Create(ctx, review)).To(Succeed())
				g.Expect(review.Status.Allowed).To(Equal(want), "%s %s %s/%s in %s", user, p.verb, p.resource, p.subres, namespace)
			})
		}
	}

	// The indirect path, made for real: whoever may run a pod may read every Secret of the
	// namespace through it, which is why the operator role's promise says so.
	t.Run("an operator's pod mounts a Secret of the namespace, and a viewer's is refused", func(t *testing.T) {
		g := NewWithT(t)
		withSecret := func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "key", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "api-key"}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "key", MountPath: "/key"}}
			p.Spec.ServiceAccountName = "deployer"
		}
		g.Expect(impersonate(t, "otto").Create(ctx, restrictedPod(ns, "reader", withSecret))).To(Succeed())
		err := impersonate(t, "vera").Create(ctx, restrictedPod(ns, "viewer-reader", withSecret))
		g.Expect(err).To(MatchError(ContainSubstring("forbidden")))
		g.Expect(k8s.Delete(ctx, restrictedPod(ns, "reader"), client.GracePeriodSeconds(0))).To(Succeed())
	})
}
