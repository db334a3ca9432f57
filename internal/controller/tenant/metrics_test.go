package tenant

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestSummarizeTenants(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	// tenant is a tenant created an hour ago with the given Ready condition (none when status is
	// empty) and, when stalled, a Stalled condition of the same reason.
	tenant := func(name string, status metav1.ConditionStatus, reason string, since time.Duration, mutate ...func(*tenancyv1alpha1.Tenant)) tenancyv1alpha1.Tenant {
		t := tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ago(time.Hour)}}
		if status != "" {
			t.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: status, Reason: reason, LastTransitionTime: ago(since)}}
		}
		for _, m := range mutate {
			m(&t)
		}
		return t
	}
	stall := func(t *tenancyv1alpha1.Tenant) {
		ready := t.Status.Conditions[0]
		t.Status.Conditions = append(t.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: ready.Reason, LastTransitionTime: ready.LastTransitionTime})
	}
	suspend := func(t *tenancyv1alpha1.Tenant) { t.Spec.Suspend = true }
	onShard := func(shard string) func(*tenancyv1alpha1.Tenant) {
		return func(t *tenancyv1alpha1.Tenant) { t.Labels = map[string]string{tenancyv1alpha1.ShardLabel: shard} }
	}
	age := func(reason string, stalled bool, shard string) ageKey {
		return ageKey{reason: reason, stalled: stalled, shard: shard}
	}

	for _, tc := range []struct {
		name    string
		tenants []tenancyv1alpha1.Tenant
		oldest  map[ageKey]float64
	}{
		{
			name:    "a fleet that is all Ready reports no age at all",
			tenants: []tenancyv1alpha1.Tenant{tenant("a", metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded, time.Hour)},
			oldest:  map[ageKey]float64{},
		},
		{
			name: "the age is the oldest of the tenants not Ready with a reason, counted from Ready's last transition",
			tenants: []tenancyv1alpha1.Tenant{
				tenant("a", metav1.ConditionFalse, tenancyv1alpha1.ReasonDatabaseUnavailable, 40*time.Minute),
				tenant("b", metav1.ConditionFalse, tenancyv1alpha1.ReasonDatabaseUnavailable, 5*time.Minute),
				tenant("c", metav1.ConditionFalse, tenancyv1alpha1.ReasonProgressing, 30*time.Second),
				tenant("d", metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded, 50*time.Minute),
			},
			oldest: map[ageKey]float64{
				age(tenancyv1alpha1.ReasonDatabaseUnavailable, false, ""): 2400,
				age(tenancyv1alpha1.ReasonProgressing, false, ""):         30,
			},
		},
		{
			name: "many tenants briefly not Ready, as in a rollout or a pool refill, report a young age however many they are",
			tenants: []tenancyv1alpha1.Tenant{
				tenant("a", metav1.ConditionFalse, tenancyv1alpha1.ReasonProgressing, 20*time.Second),
				tenant("b", metav1.ConditionFalse, tenancyv1alpha1.ReasonProgressing, 50*time.Second),
				tenant("c", metav1.ConditionFalse, tenancyv1alpha1.ReasonProgressing, 10*time.Second),
				tenant("d", metav1.ConditionFalse, tenancyv1alpha1.ReasonRollingOut, 90*time.Second),
			},
			oldest: map[ageKey]float64{
				age(tenancyv1alpha1.ReasonProgressing, false, ""): 50,
				age(tenancyv1alpha1.ReasonRollingOut, false, ""):  90,
			},
		},
		{
			name: "a stalled tenant is reported apart, so that an alert on tenants that are not stalled leaves it to the stall alert",
			tenants: []tenancyv1alpha1.Tenant{
				tenant("a", metav1.ConditionFalse, tenancyv1alpha1.ReasonRenderFailed, 2*time.Hour, stall),
				tenant("b", metav1.ConditionFalse, tenancyv1alpha1.ReasonRenderFailed, 2*time.Minute),
			},
			oldest: map[ageKey]float64{
				age(tenancyv1alpha1.ReasonRenderFailed, true, ""):  7200,
				age(tenancyv1alpha1.ReasonRenderFailed, false, ""): 120,
			},
		},
		{
			name: "a suspended tenant, whose conditions are frozen on purpose, has no age",
			tenants: []tenancyv1alpha1.Tenant{
				tenant("a", metav1.ConditionFalse, tenancyv1alpha1.ReasonDatabaseUnavailable, 3*time.Hour, suspend),
			},
			oldest: map[ageKey]float64{},
		},
		{
			name: "a tenant never reconciled is not Ready since it was created",
			tenants: []tenancyv1alpha1.Tenant{
				tenant("a", "", "", 0),
			},
			oldest: map[ageKey]float64{age("", false, ""): 3600},
		},
		{
			name: "each shard's tenants have an age of their own",
			tenants: []tenancyv1alpha1.Tenant{
				tenant("a", metav1.ConditionFalse, tenancyv1alpha1.ReasonShardHandover, 20*time.Minute, onShard("eu-1")),
				tenant("b", metav1.ConditionFalse, tenancyv1alpha1.ReasonShardHandover, time.Minute),
			},
			oldest: map[ageKey]float64{
				age(tenancyv1alpha1.ReasonShardHandover, false, "eu-1"): 1200,
				age(tenancyv1alpha1.ReasonShardHandover, false, ""):     60,
			},
		},
		{
			name: "a transition stamped ahead of this replica's clock counts as no age rather than a negative one",
			tenants: []tenancyv1alpha1.Tenant{
				tenant("a", metav1.ConditionFalse, tenancyv1alpha1.ReasonProgressing, -5*time.Second),
			},
			oldest: map[ageKey]float64{age(tenancyv1alpha1.ReasonProgressing, false, ""): 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, oldest := summarizeTenants(tc.tenants, now)
			if len(oldest) != len(tc.oldest) {
				t.Fatalf("ages %v, want %v", oldest, tc.oldest)
			}
			for key, want := range tc.oldest {
				if got, ok := oldest[key]; !ok || got != want {
					t.Errorf("age of %+v is %v (reported: %v), want %v", key, got, ok, want)
				}
			}
		})
	}

	t.Run("the counts name each tenant's shard, the default shard's as empty", func(t *testing.T) {
		counts, _ := summarizeTenants([]tenancyv1alpha1.Tenant{
			tenant("a", metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded, time.Hour, onShard("eu-1")),
			tenant("b", metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded, time.Hour),
			tenant("c", metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded, time.Hour),
		}, now)
		ready := tenantKey{state: string(tenancyv1alpha1.StateActive), ready: string(metav1.ConditionTrue), reason: tenancyv1alpha1.ReasonSucceeded}
		onEU := ready
		onEU.shard = "eu-1"
		if counts[ready] != 2 || counts[onEU] != 1 || len(counts) != 2 {
			t.Errorf("counts %v, want 2 on the default shard and 1 on eu-1", counts)
		}
	})
}
