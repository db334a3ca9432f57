package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/test/testenv"
)

// waveManifests is a component whose ConfigMap says which version rendered it. Version 2.0.0
// refuses to render for a tenant whose values say broken: that tenant fails its wave.
// Version 3.0.0 adds, for a tenant whose values say hold, a Deployment whose pods never pass
// readiness: that tenant stays rolling out, neither done nor failed, until its values change.
func waveManifests(version string) string {
	guard := ""
	if version == "2.0.0" {
		guard = `{{ if .Values.broken }}{{ fail "these values break version 2.0.0" }}{{ end }}`
	}
	hold := ""
	if version == "3.0.0" {
		hold = `{{- if .Values.hold }}
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
	}
	return guard + `apiVersion: v1
kind: ConfigMap
metadata:
  name: wave
data:
  version: "` + version + `"
` + hold
}

// waveTenants creates tenants following rollouts of the component wave from 1.0.0, labelled
// rollout=waves (and group=first for the first ten), and one more whose version is pinned.
// They are removed when the test ends.
func waveTenants(t *testing.T, n int, values map[string]string) (names []string, pinned string) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	for i := range n {
		names = append(names, fmt.Sprintf("wave-%02d", i))
	}
	pinned = "wave-pinned"
	all := append(slices.Clone(names), pinned)
	t.Cleanup(func() { deleteTenants(t, all...) })
	for _, name := range all {
		v := "{}"
		if values[name] != "" {
			v = values[name]
		}
		tenant := newTenant(name, pin("wave", "1.0.0", v), func(tn *tenancyv1alpha1.Tenant) {
			tn.Labels = map[string]string{"rollout": "waves"}
			if i := slices.Index(names, name); i >= 0 && i < 10 {
				tn.Labels["group"] = "first"
			}
			tn.Spec.Components[0].FollowRollouts = name != pinned
		})
		g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
	}
	for _, name := range all {
		waitReady(t, name)
	}
	return names, pinned
}

// runs reads the version of wave that a tenant runs, as its ConfigMap and its status say it.
func runs(g Gomega, name string) (configMap, status, rollout string) {
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: opConfig.NamespaceName(name), Name: "wave"}, cm)).To(Succeed())
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	i := slices.IndexFunc(tenant.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool { return c.Name == "wave" })
	g.Expect(i).NotTo(Equal(-1), "tenant %s reports no component wave", name)
	return cm.Data["version"], tenant.Status.Components[i].Version, tenant.Status.Components[i].Rollout
}

func newRollout(name, version string, batch int, selector map[string]string) *tenancyv1alpha1.ComponentRollout {
	return &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{
			Component: "wave", Version: version,
			Selector: metav1.LabelSelector{MatchLabels: selector},
			Strategy: tenancyv1alpha1.RolloutStrategy{BatchSize: ptrTo(intstr.FromInt32(int32(batch)))},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// rolloutWhere waits until the rollout's status satisfies check, and returns it.
func rolloutWhere(t *testing.T, name string, check func(g Gomega, ro *tenancyv1alpha1.ComponentRollout)) *tenancyv1alpha1.ComponentRollout {
	t.Helper()
	ro := &tenancyv1alpha1.ComponentRollout{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, ro)).To(Succeed())
		g.Expect(ro.Status.ObservedGeneration).To(Equal(ro.Generation))
		check(g, ro)
	}).WithTimeout(2 * timeout).Should(Succeed())
	return ro
}

func readyReason(ro *tenancyv1alpha1.ComponentRollout) string {
	for _, c := range ro.Status.Conditions {
		if c.Type == tenancyv1alpha1.ReadyCondition {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// setValues sets the values of a tenant's component wave, as Git would.
func setValues(t *testing.T, name, values string) {
	t.Helper()
	patch := []byte(`{"spec":{"components":[{"name":"wave","version":"1.0.0","followRollouts":true,"values":` + values + `}]}}`)
	NewWithT(t).Expect(k8s.Patch(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// deleteRollout deletes a rollout and waits until the operator's cache no longer has it, so a
// reconcile after it cannot have read it.
func deleteRollout(t *testing.T, name string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Delete(context.Background(), &tenancyv1alpha1.ComponentRollout{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	g.Eventually(func() bool {
		err := op.GetCache().Get(context.Background(), client.ObjectKey{Name: name}, &tenancyv1alpha1.ComponentRollout{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(timeout).Should(BeTrue())
}

// A ComponentRollout, declared next to the tenants, moves 30 tenants in waves of 5. A tenant that
// fails in the third wave halts it, named, with the later waves untouched; once the tenant is
// fixed the rollout finishes. A pinned tenant is never moved. Deleting rollouts never moves a
// tenant back, and neither does archiving it and making it Active again.
func TestAComponentRolloutMovesTenantsInWavesAndHaltsOnAFailure(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "2.0.0", "3.0.0"} {
		publish(t, "wave", v, waveManifests(v), "")
	}
	names, pinned := waveTenants(t, 30, map[string]string{"wave-12": `{"broken": true}`})
	waitIdle(t)
	before := op.Requests.Snapshot()
	ro := newRollout("wave-2-0-0", "2.0.0", 5, map[string]string{"rollout": "waves"})
	NewWithT(t).Expect(k8s.Create(ctx, ro)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ro) })

	t.Run("a tenant that fails in the third wave halts the rollout and is named", func(t *testing.T) {
		got := rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.FailedStatus), "%s", readyReason(ro))
		})
		g := NewWithT(t)
		g.Expect(readyReason(got)).To(ContainSubstring(tenancyv1alpha1.ReasonTooManyFailures))
		g.Expect(readyReason(got)).To(ContainSubstring("wave-12 (RenderFailed)"))
		g.Expect(got.Status.Waves).To(HaveLen(6))
		g.Expect(got.Status.Released).To(BeEquivalentTo(3))
		g.Expect(got.Status.Waves[2].Tenants).To(Equal(names[10:15]))
		g.Expect(got.Status.Waves[2].Failed).To(ConsistOf(HaveField("Tenant", "wave-12")))
		for _, w := range got.Status.Waves {
			g.Expect(w.Tenants).NotTo(ContainElement(pinned))
		}
		// The third wave's other tenants may still be on their way; the later waves are not
		// released while wave-12 has failed, so they are on 1.0.0 for good.
		g.Eventually(func(g Gomega) {
			for _, name := range names[:15] {
				if name != "wave-12" {
					cm, st, rollout := runs(g, name)
					g.Expect([]string{cm, st, rollout}).To(Equal([]string{"2.0.0", "2.0.0", ro.Name}), "tenant %s of the first three waves", name)
				}
			}
		}).WithTimeout(timeout).Should(Succeed())
		for _, name := range append(names[15:], "wave-12") {
			cm, st, rollout := runs(g, name)
			g.Expect([]string{cm, st, rollout}).To(Equal([]string{"1.0.0", "1.0.0", ""}), "tenant %s", name)
		}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ro), got)).To(Succeed())
		g.Expect(got.Status.Released).To(BeEquivalentTo(3), "a wave was released after the failure")

		// What LandlordRolloutOverFailureBudget reads: more failed tenants than maxFailures (0),
		// from the rollout's status, with no tenant's name.
		id := map[string]string{"rollout": ro.Name, "component": "wave", "version": "2.0.0"}
		with := func(k, v string) map[string]string {
			l := map[string]string{k: v}
			for key, val := range id {
				l[key] = val
			}
			return l
		}
		g.Eventually(func(g Gomega) {
			g.Expect(metric(g, "landlord_rollout_tenants", with("progress", "failed"))).To(Equal(1.0))
			g.Expect(metric(g, "landlord_rollout_max_failures", id)).To(Equal(0.0))
			g.Expect(metric(g, "landlord_rollout_status", with("reason", tenancyv1alpha1.ReasonTooManyFailures))).To(Equal(1.0))
			g.Expect(metric(g, "landlord_rollout_status", with("stalled", "true"))).To(Equal(1.0))
			g.Expect(metric(g, "landlord_rollout_waves", id)).To(Equal(6.0))
			g.Expect(metric(g, "landlord_rollout_waves_released", id)).To(Equal(3.0))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("once the failed tenant is fixed the rollout moves every tenant but the pinned one", func(t *testing.T) {
		setValues(t, "wave-12", "{}")
		got := rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
		})
		g := NewWithT(t)
		g.Expect(got.Status.Released).To(BeEquivalentTo(6))
		g.Expect(got.Status.Done).To(BeEquivalentTo(30))
		waitIdle(t)
		expectRolloutCost(t, before, names, "2.0.0")
		g.Expect(got.Status.Failed).To(BeZero())
		done := map[string]string{"rollout": ro.Name, "progress": "done"}
		g.Eventually(func(g Gomega) {
			g.Expect(metric(g, "landlord_rollout_tenants", done)).To(Equal(30.0))
			g.Expect(metric(g, "landlord_rollout_tenants", map[string]string{"rollout": ro.Name, "progress": "failed"})).To(BeZero())
			g.Expect(metric(g, "landlord_rollout_status", map[string]string{"rollout": ro.Name, "ready": "True", "stalled": "false"})).To(Equal(1.0))
		}).WithTimeout(timeout).Should(Succeed())
		for _, name := range names {
			cm, st, rollout := runs(g, name)
			g.Expect([]string{cm, st, rollout}).To(Equal([]string{"2.0.0", "2.0.0", ro.Name}), "tenant %s", name)
		}
		cm, st, rollout := runs(g, pinned)
		g.Expect([]string{cm, st, rollout}).To(Equal([]string{"1.0.0", "1.0.0", ""}), "the pinned tenant")
	})

	newer := newRollout("wave-3-0-0-first", "3.0.0", 10, map[string]string{"group": "first"})
	t.Run("a newer rollout moves the tenants it chooses; deleting it moves none of them back", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Create(ctx, newer)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, newer) })
		rolloutWhere(t, newer.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
		})
		deleteRollout(t, newer.Name)
		// The older rollout, which released every tenant, is still there.
		resync(t, names...)
		for i, name := range names {
			cm, st, rollout := runs(g, name)
			want := []string{"2.0.0", "2.0.0", ro.Name}
			if i < 10 {
				want = []string{"3.0.0", "3.0.0", newer.Name}
			}
			g.Expect([]string{cm, st, rollout}).To(Equal(want), "tenant %s", name)
		}
	})

	t.Run("deleting the last rollout too leaves every tenant where it is", func(t *testing.T) {
		g := NewWithT(t)
		deleteRollout(t, ro.Name)
		resync(t, names...)
		for i, name := range names {
			want := "2.0.0"
			if i < 10 {
				want = "3.0.0"
			}
			cm, st, _ := runs(g, name)
			g.Expect([]string{cm, st}).To(Equal([]string{want, want}), "tenant %s", name)
		}
	})

	t.Run("an archived tenant made Active again runs the version a rollout gave it, not its spec's", func(t *testing.T) {
		g := NewWithT(t)
		setState(t, "wave-03", tenancyv1alpha1.StateArchived)
		waitNamespaceGone(t, opConfig.NamespaceName("wave-03"))
		archived := waitReady(t, "wave-03")
		g.Expect(archived.Status.Components).To(ConsistOf(And(HaveField("Version", "3.0.0"), HaveField("Rollout", newer.Name))))
		setState(t, "wave-03", tenancyv1alpha1.StateActive)
		waitReady(t, "wave-03")
		cm, st, rollout := runs(g, "wave-03")
		g.Expect([]string{cm, st, rollout}).To(Equal([]string{"3.0.0", "3.0.0", newer.Name}))
	})
}

// expectRolloutCost checks what moving tenants to a new version cost, counted from before: one
// of them (wave-12) failed to render once and was moved once fixed. Every read is served by the
// cache, so the operator sent only these writes.
func expectRolloutCost(t *testing.T, before testenv.Counts, names []string, version string) {
	t.Helper()
	g := NewWithT(t)
	moved := len(names)
	// A ComponentApplied event for each tenant moved, and one RenderFailed for wave-12. A
	// reconcile that reads a tenant before the cache holds its new status records the event
	// again (see the status writes below); the event broadcaster folds such a repeat into the
	// first event's series and sends it as a PATCH, which the counter leaves out. Events are sent
	// on the broadcaster's own goroutines, one per event, after the reconcile that recorded them:
	// when a repeat's PATCH lands before the first event's POST, it finds no Event and the
	// broadcaster POSTs it instead (client-go's recordEvent), under the same name. So a POST is
	// sent at least once and at most twice per event, and the Events stored say how many there
	// were: one per tenant moved.
	const failedRenders = 1
	g.Eventually(func() int { return op.Requests.Snapshot().Sub(before)["POST events"] }).
		WithTimeout(timeout).Should(BeNumerically(">=", moved+failedRenders))
	made := tenantRequests(op.Requests.Snapshot().Sub(before))
	g.Expect(made["POST events"]).To(BeNumerically("<=", 2*(moved+failedRenders)), "requests: %s", made)
	g.Expect(appliedEvents(g, names, version)).To(HaveEach(1), "ComponentApplied events for %s by tenant", version)
	g.Expect(appliedEvents(g, names, version)).To(HaveLen(moved), "ComponentApplied events for %s by tenant", version)
	// One apply of each tenant's ConfigMap: wave-12's failed render wrote nothing.
	g.Expect(made).To(HaveKeyWithValue("PATCH configmaps", moved), "requests: %s", made)
	// Each tenant's status changes once (to the new version), and wave-12's once more (its
	// failure). A status write is sent again at most once per tenant moved: the reconcile that
	// the tenant's own ConfigMap write triggers may read the tenant before the cache holds the
	// status just written, and sends the same status, which the API server stores as no change.
	// So the bounds fail when a tenant is reconciled more often than its release and its own
	// write call for, or writes its status more than once a reconcile; that an unchanged status
	// costs no write at all is asserted where no write races the cache (tenant_fastpath_test.go).
	statusChanges := moved + failedRenders
	g.Expect(made["PATCH tenants/status"]).To(BeNumerically(">=", statusChanges), "requests: %s", made)
	g.Expect(made["PATCH tenants/status"]).To(BeNumerically("<=", statusChanges+moved), "requests: %s", made)
	// The rollout writes its status when it changes: once when it plans and releases its first
	// wave, then only after a change of a tenant it watches (the status changes above, and
	// wave-12's new values), so at most once per change. Each write may be followed by one
	// refused by the optimistic lock (a reconcile reading the cache before it holds that write),
	// retried a second later. At least: the first wave, the release of each of the five others
	// (each after the tenants of the wave before report), the halt on wave-12, and completion.
	// A rollout that wrote for every tenant of every released wave each time one tenant moved
	// would go far over the upper bound.
	const waves = 6
	rolloutInputs := 1 + statusChanges + 1
	g.Expect(made["PATCH componentrollouts/status"]).To(BeNumerically(">=", waves+2), "requests: %s", made)
	g.Expect(made["PATCH componentrollouts/status"]).To(BeNumerically("<=", 2*rolloutInputs), "requests: %s", made)
	g.Expect(slices.Sorted(maps.Keys(made))).To(Equal([]string{"PATCH componentrollouts/status", "PATCH configmaps", "PATCH tenants/status", "POST events"}),
		"no request but these writes: %s", made)
}

// appliedEvents counts the Events that told each tenant its component moved to the version, by
// tenant name; a repeat folded into an Event's series is the same Event.
func appliedEvents(g Gomega, names []string, version string) map[string]int {
	uids := map[types.UID]bool{}
	for _, name := range names {
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
		uids[tenant.UID] = true
	}
	list := &eventsv1.EventList{}
	g.Expect(k8s.List(context.Background(), list)).To(Succeed())
	byTenant := map[string]int{}
	for _, e := range list.Items {
		if e.Reason == "ComponentApplied" && uids[e.Regarding.UID] && strings.HasSuffix(e.Note, "version "+version+" applied") {
			byTenant[e.Regarding.Name]++
		}
	}
	return byTenant
}

// A rollout's progress is in its status: an operator that stops in the middle of a wave is
// replaced by one that carries on from there, without touching the tenants of the finished
// waves again. spec.halted holds a rollout before its first wave, and releases it when unset.
func TestAComponentRolloutCarriesOnAfterTheOperatorRestartsMidWave(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "3.0.0"} {
		publish(t, "wave", v, waveManifests(v), "")
	}
	// wave-07's pods at 3.0.0 never pass readiness: its wave cannot finish until its values change.
	names, _ := waveTenants(t, 10, map[string]string{"wave-07": `{"hold": true}`})

	ro := newRollout("wave-3-0-0", "3.0.0", 5, map[string]string{"group": "first"})
	ro.Spec.Halted = true
	NewWithT(t).Expect(k8s.Create(ctx, ro)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ro) })

	t.Run("a halted rollout plans its waves and releases none", func(t *testing.T) {
		got := rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(readyReason(ro)).To(HavePrefix(tenancyv1alpha1.ReasonHaltedBySpec))
		})
		NewWithT(t).Expect(got.Status.Waves).To(HaveLen(2))
		NewWithT(t).Expect(got.Status.Released).To(BeZero())
	})

	var first tenancyv1alpha1.RolloutWave
	written := map[string]string{}
	t.Run("unhalted, it finishes the first wave and waits on the tenant of the second still rolling out", func(t *testing.T) {
		NewWithT(t).Expect(k8s.Patch(ctx, ro, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"halted":false}}`)))).To(Succeed())
		got := rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(ro.Status.Released).To(BeEquivalentTo(2))
			g.Expect(ro.Status.Waves[1].Done).To(BeEquivalentTo(4))
			g.Expect(ro.Status.Waves[1].Pending).To(BeEquivalentTo(1))
		})
		first = got.Status.Waves[0]
		NewWithT(t).Expect(first.CompletedAt).NotTo(BeNil())
		for _, name := range names[:5] {
			cm := &corev1.ConfigMap{}
			NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.NamespaceName(name), Name: "wave"}, cm)).To(Succeed())
			NewWithT(t).Expect(cm.Data["version"]).To(Equal("3.0.0"))
			written[name] = cm.ResourceVersion
		}
	})

	t.Run("a new operator finishes the second wave and leaves the first as it was", func(t *testing.T) {
		g := NewWithT(t)
		restartOperator(t, opConfig)
		setValues(t, "wave-07", "{}")
		got := rolloutWhere(t, ro.Name, func(g Gomega, ro *tenancyv1alpha1.ComponentRollout) {
			g.Expect(testenv.KStatus(ro)).To(HaveField("Status", status.CurrentStatus), "%s", readyReason(ro))
		})
		g.Expect(got.Status.Done).To(BeEquivalentTo(10))
		g.Expect(got.Status.Waves[0].StartedAt.Equal(first.StartedAt)).To(BeTrue(), "the first wave was started again")
		g.Expect(got.Status.Waves[0].CompletedAt.Equal(first.CompletedAt)).To(BeTrue(), "the first wave was completed again")
		for name, rv := range written {
			cm := &corev1.ConfigMap{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.NamespaceName(name), Name: "wave"}, cm)).To(Succeed())
			g.Expect(cm.ResourceVersion).To(Equal(rv), "tenant %s of the finished wave was written again", name)
		}
		for _, name := range names[5:10] {
			cm, st, rollout := runs(g, name)
			g.Expect([]string{cm, st, rollout}).To(Equal([]string{"3.0.0", "3.0.0", ro.Name}), "tenant %s", name)
		}
	})
}
