package integration

import (
	"context"
	"net"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/test/argocd"
)

// argoManifests is the component argo: a ConfigMap, and at 2.0.0, for a tenant whose values say
// hold, a Deployment whose pods never pass readiness, which holds the tenant rolling out (for an
// hour, its progress deadline) until its values change.
const argoManifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: argo
data:
  version: {{ .Component.Version | quote }}
{{- if and .Values.hold (eq .Component.Version "2.0.0") }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hold
spec:
  replicas: 1
  progressDeadlineSeconds: 3600
  selector:
    matchLabels: {app: hold}
  template:
    metadata:
      labels: {app: hold}
      annotations: {"` + localcluster.NeverReadyAnnotation + `": "true"}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: hold
          image: {{ .Component.ImageRef }}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
{{- end }}
`

// argoHealth reads obj back from the API server as unstructured, as Argo CD's cache holds it, and
// runs on it the health check the Argo CD example puts in argocd-cm for its kind.
func argoHealth(g Gomega, obj client.Object) argocd.Health {
	gvk, err := apiutil.GVKForObject(obj, k8s.Scheme())
	g.Expect(err).NotTo(HaveOccurred())
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), live)).To(Succeed())
	h, err := argocd.HealthOf(live)
	g.Expect(err).NotTo(HaveOccurred())
	return h
}

// waitCondition waits until obj, read into obj, has a condition of the type with the status and
// reason, written for its current generation.
func waitCondition(t *testing.T, obj client.Object, conditions func() []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		c := meta.FindStatusCondition(conditions(), typ)
		g.Expect(c).NotTo(BeNil(), "conditions: %+v", conditions())
		g.Expect([]any{c.Status, c.Reason, c.ObservedGeneration}).To(Equal([]any{status, reason, obj.GetGeneration()}), "conditions: %+v", conditions())
	}).WithTimeout(2 * timeout).Should(Succeed())
}

// mergePatch patches obj with a JSON merge patch, as kubectl patch --type merge does.
func mergePatch(t *testing.T, obj client.Object, patch string) {
	t.Helper()
	NewWithT(t).Expect(k8s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// Argo CD shows Landlord's objects through the Lua health checks the Argo CD example adds to
// argocd-cm. Each case brings an object to a state, waits until the operator has written it, and
// runs the check on the object as the API server returns it: Healthy, Progressing, Degraded and
// Suspended are what the operator's own status says, for every kind whose status it writes.
func TestArgoCDHealthChecksReadTheStatusTheOperatorWrites(t *testing.T) {
	ctx := context.Background()
	publish(t, "argo", "1.0.0", argoManifests, "")
	publish(t, "argo", "2.0.0", argoManifests, "")

	// What several cases move from state to state, made here to outlive each case: a tenant, a
	// pool, and a rollout moving a tenant that follows rollouts, from 1.0.0 to 2.0.0 whose
	// Deployment its values hold back.
	ready := createTenant(t, newTenant("argo-ready"))
	pool := newPool("argo-pool", 1)
	createPool(t, pool)
	follower := createTenant(t, newTenant("argo-follower", pin("argo", "1.0.0", `{"hold": true}`), func(tn *tenancyv1alpha1.Tenant) {
		tn.Labels = map[string]string{"argo": "follower"}
		tn.Spec.Components[0].FollowRollouts = true
	}))
	rollout := newRollout("argo-2-0-0", "2.0.0", 1, map[string]string{"argo": "follower"})
	rollout.Spec.Component = "argo"
	NewWithT(t).Expect(k8s.Create(ctx, rollout)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, rollout) })

	cases := []struct {
		name string
		// reach brings an object to the state and waits until the operator reports it.
		reach   func(t *testing.T) client.Object
		status  string
		message string
	}{
		{
			name: "a Ready tenant is Healthy",
			reach: func(t *testing.T) client.Object {
				return waitReady(t, ready.Name)
			},
			status: argocd.Healthy, message: "tenant is Active in namespace " + opConfig.NamespaceName(ready.Name),
		},
		{
			name: "a suspended tenant is Suspended, with what Landlord last observed",
			reach: func(t *testing.T) client.Object {
				setSuspend(NewWithT(t), ready.Name, true)
				return waitSuspended(t, ready.Name)
			},
			status: argocd.Suspended, message: "spec.suspend is true: Landlord changes nothing of this tenant",
		},
		{
			name: "a tenant whose component is still rolling out is Progressing, with the reason",
			reach: func(t *testing.T) client.Object {
				tenant := newTenant("argo-rolling", pin("argo", "2.0.0", `{"hold": true}`))
				NewWithT(t).Expect(k8s.Create(ctx, tenant)).To(Succeed())
				t.Cleanup(func() { deleteTenant(t, tenant.Name) })
				return waitComponents(t, tenant.Name, tenancyv1alpha1.ReasonRollingOut)
			},
			status: argocd.Progressing, message: tenancyv1alpha1.ReasonRollingOut + ": ",
		},
		{
			name: "a tenant pinning a version nobody published is Degraded, with the reason",
			reach: func(t *testing.T) client.Object {
				tenant := newTenant("argo-unpublished", pin("argo", "9.9.9", ""))
				NewWithT(t).Expect(k8s.Create(ctx, tenant)).To(Succeed())
				t.Cleanup(func() { deleteTenant(t, tenant.Name) })
				waitComponentsStalled(t, tenant.Name, tenancyv1alpha1.ReasonTemplateNotFound)
				return tenant
			},
			status: argocd.Degraded, message: tenancyv1alpha1.ReasonTemplateNotFound + ": ",
		},
		{
			name: "a pool whose spares are not Ready yet is Progressing",
			reach: func(t *testing.T) client.Object {
				filling := newPool("argo-filling", 1)
				filling.Spec.Template.Spec.Components = []tenancyv1alpha1.Component{{Name: "argo", Version: "2.0.0", Values: jsonValues(`{"hold": true}`)}}
				createPool(t, filling)
				waitCondition(t, filling, func() []metav1.Condition { return filling.Status.Conditions }, tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonProgressing)
				return filling
			},
			status: argocd.Progressing, message: "Progressing: 0 of 1 spares ready, 1 provisioning",
		},
		{
			name: "a pool holding its Ready spares is Healthy",
			reach: func(t *testing.T) client.Object {
				return waitPool(t, pool.Name, 1, 0)
			},
			status: argocd.Healthy, message: "1 spares ready",
		},
		{
			name: "a claim bound to a spare is Healthy",
			reach: func(t *testing.T) client.Object {
				createClaim(t, newClaim("argo-signup", pool.Name))
				return waitBound(t, "argo-signup")
			},
			status: argocd.Healthy, message: "bound to tenant ",
		},
		{
			name: "a claim on a pool that does not exist is Progressing, with the reason",
			reach: func(t *testing.T) client.Object {
				claim := newClaim("argo-lost", "argo-nowhere")
				createClaim(t, claim)
				waitCondition(t, claim, func() []metav1.Condition { return claim.Status.Conditions }, tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonPoolNotFound)
				return claim
			},
			status: argocd.Progressing, message: tenancyv1alpha1.ReasonPoolNotFound + ": ",
		},
		{
			name: "a rollout whose wave is moving a tenant is Progressing",
			reach: func(t *testing.T) client.Object {
				return rolloutWhere(t, rollout.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
					g.Expect(readyReason(ro)).To(HavePrefix(tenancyv1alpha1.ReasonWaveInProgress))
				})
			},
			status: argocd.Progressing, message: tenancyv1alpha1.ReasonWaveInProgress + ": 1 of 1 waves released",
		},
		{
			name: "a rollout halted by its spec is Suspended",
			reach: func(t *testing.T) client.Object {
				mergePatch(t, rollout, `{"spec":{"halted":true}}`)
				return rolloutWhere(t, rollout.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
					g.Expect(readyReason(ro)).To(HavePrefix(tenancyv1alpha1.ReasonHaltedBySpec))
				})
			},
			status: argocd.Suspended, message: tenancyv1alpha1.ReasonHaltedBySpec + ": spec.halted is true",
		},
		{
			name: "a rollout whose every wave is done is Healthy",
			reach: func(t *testing.T) client.Object {
				mergePatch(t, follower, `{"spec":{"components":[{"name":"argo","version":"1.0.0","followRollouts":true}]}}`)
				mergePatch(t, rollout, `{"spec":{"halted":false}}`)
				return rolloutWhere(t, rollout.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
					g.Expect(readyReason(ro)).To(HavePrefix(tenancyv1alpha1.ReasonRolloutComplete))
				})
			},
			status: argocd.Healthy, message: "1 of 1 waves released; 1 tenants done",
		},
		{
			name: "a rollout of a version nobody published is Degraded, with the reason",
			reach: func(t *testing.T) client.Object {
				ro := newRollout("argo-8-8-8", "8.8.8", 1, map[string]string{"argo": "follower"})
				ro.Spec.Component = "argo"
				NewWithT(t).Expect(k8s.Create(ctx, ro)).To(Succeed())
				t.Cleanup(func() { _ = k8s.Delete(ctx, ro) })
				return rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
					g.Expect(readyReason(ro)).To(HavePrefix(tenancyv1alpha1.ReasonTemplateNotFound))
				})
			},
			status: argocd.Degraded, message: tenancyv1alpha1.ReasonTemplateNotFound + ": ComponentTemplate argo-8.8.8 not found",
		},
		{
			name: "a database server Landlord logs in to is Healthy",
			reach: func(t *testing.T) client.Object {
				ds := &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: pgServer}}
				waitCondition(t, ds, func() []metav1.Condition { return ds.Status.Conditions }, tenancyv1alpha1.ReadyCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonReachable)
				return ds
			},
			status: argocd.Healthy, message: "logged in as the administrator",
		},
		{
			name: "a database server without its admin credentials is Degraded, with the reason",
			reach: func(t *testing.T) client.Object {
				ds := &tenancyv1alpha1.DatabaseServer{
					ObjectMeta: metav1.ObjectMeta{Name: "argo-no-credentials"},
					Spec: tenancyv1alpha1.DatabaseServerSpec{
						Engine: tenancyv1alpha1.DatabaseEngine(pg.Server.Engine), Host: pg.Server.Host, Port: pg.Server.Port,
						TLS: tenancyv1alpha1.DatabaseTLSMode(pg.Server.TLS), AdminCredentials: tenancyv1alpha1.SecretReference{Name: "argo-absent"},
					},
				}
				NewWithT(t).Expect(k8s.Create(ctx, ds)).To(Succeed())
				t.Cleanup(func() { _ = k8s.Delete(ctx, ds) })
				waitCondition(t, ds, func() []metav1.Condition { return ds.Status.Conditions }, tenancyv1alpha1.StalledCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonCredentialsMissing)
				return ds
			},
			status: argocd.Degraded, message: tenancyv1alpha1.ReasonCredentialsMissing + ": ",
		},
		{
			name: "a database server that does not answer is Degraded, with the reason",
			reach: func(t *testing.T) client.Object {
				port := closedPort(t)
				name := "argo-unreachable"
				NewWithT(t).Expect(env.RegisterDatabaseServer(ctx, opConfig.Databases.CredentialsNamespace, name, pg, func(s *tenancyv1alpha1.DatabaseServerSpec) {
					s.Host, s.Port = "127.0.0.1", port
				})).To(Succeed())
				ds := &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}}
				t.Cleanup(func() {
					_ = k8s.Delete(ctx, ds)
					_ = k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: opConfig.Databases.CredentialsNamespace, Name: name + "-admin"}})
				})
				waitCondition(t, ds, func() []metav1.Condition { return ds.Status.Conditions }, tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ReasonUnreachable)
				return ds
			},
			status: argocd.Degraded, message: tenancyv1alpha1.ReasonUnreachable + ": ",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.reach(t)
			g := NewWithT(t)
			h := argoHealth(g, obj)
			g.Expect(h.Status).To(Equal(tc.status), "message: %s", h.Message)
			g.Expect(h.Message).To(ContainSubstring(tc.message))
		})
	}
}

// closedPort is a loopback port nothing listens on: connecting to it is refused at once.
func closedPort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return int32(port)
}
