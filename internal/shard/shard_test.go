package shard

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestStepFor(t *testing.T) {
	reconciled := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue}}
	tenant := func(label string, status tenancyv1alpha1.TenantStatus) *tenancyv1alpha1.Tenant {
		tn := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Status: status}
		if label != "" {
			tn.Labels = map[string]string{tenancyv1alpha1.ShardLabel: label}
		}
		return tn
	}
	for _, tc := range []struct {
		name   string
		me     string
		tenant *tenancyv1alpha1.Tenant
		want   Step
	}{
		{"a new unlabelled tenant is the default shard's", "", tenant("", tenancyv1alpha1.TenantStatus{}), Reconcile},
		{"a new labelled tenant is its shard's at once", "a", tenant("a", tenancyv1alpha1.TenantStatus{}), Reconcile},
		{"a new labelled tenant is not the default shard's", "", tenant("a", tenancyv1alpha1.TenantStatus{}), Skip},
		{"a tenant reconciled before shards is the default shard's", "", tenant("", tenancyv1alpha1.TenantStatus{Conditions: reconciled}), Reconcile},
		{"a shard reconciles the tenant it recorded", "a", tenant("a", tenancyv1alpha1.TenantStatus{Shard: "a", Conditions: reconciled}), Reconcile},
		{"another shard's tenant is skipped", "b", tenant("a", tenancyv1alpha1.TenantStatus{Shard: "a", Conditions: reconciled}), Skip},
		{"a relabelled tenant is handed over by the shard that had it", "a", tenant("b", tenancyv1alpha1.TenantStatus{Shard: "a", Conditions: reconciled}), HandOver},
		{"a tenant relabelled away from the default shard is handed over by it", "", tenant("b", tenancyv1alpha1.TenantStatus{Conditions: reconciled}), HandOver},
		{"a tenant handed over is not handed over twice", "a", tenant("b", tenancyv1alpha1.TenantStatus{Shard: "a", HandoverTo: ptr.To("b"), Conditions: reconciled}), Skip},
		{"a tenant relabelled again is not the first shard's to hand on", "a", tenant("c", tenancyv1alpha1.TenantStatus{Shard: "a", HandoverTo: ptr.To("b"), Conditions: reconciled}), Skip},
		{"a tenant relabelled again is handed on by the shard it was handed to", "b", tenant("c", tenancyv1alpha1.TenantStatus{Shard: "a", HandoverTo: ptr.To("b"), Conditions: reconciled}), HandOver},
		{"a tenant relabelled back is taken back only once handed back", "a", tenant("a", tenancyv1alpha1.TenantStatus{Shard: "a", HandoverTo: ptr.To("b"), Conditions: reconciled}), TakeOverIfStopped},
		{"the shard named takes a handed-over tenant", "b", tenant("b", tenancyv1alpha1.TenantStatus{Shard: "a", HandoverTo: ptr.To("b"), Conditions: reconciled}), TakeOver},
		{"the default shard takes a tenant handed to it", "", tenant("", tenancyv1alpha1.TenantStatus{Shard: "a", HandoverTo: ptr.To(""), Conditions: reconciled}), TakeOver},
		{"a tenant not handed over yet is taken only from a stopped shard", "b", tenant("b", tenancyv1alpha1.TenantStatus{Shard: "a", Conditions: reconciled}), TakeOverIfStopped},
		{"a tenant handed to another shard is taken only from a stopped shard", "c", tenant("c", tenancyv1alpha1.TenantStatus{Shard: "a", HandoverTo: ptr.To("b"), Conditions: reconciled}), TakeOverIfStopped},
		{"a tenant the default shard has not handed over is taken only from a stopped shard", "b", tenant("b", tenancyv1alpha1.TenantStatus{Conditions: reconciled}), TakeOverIfStopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StepFor(tc.me, tc.tenant); got != tc.want {
				t.Errorf("StepFor(%q) = %d, want %d", tc.me, got, tc.want)
			}
		})
	}
}

func TestAShardRunsWhileItsLeaseIsHeldAndChanging(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	lease := func(holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "landlord-system", Name: LeaseName("a")},
			// The holder's clock is an hour behind: only changes seen here count.
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: start.Add(-time.Hour)}},
		}
	}
	running := func(t *testing.T, shards *LeaseReader, want bool) {
		t.Helper()
		got, err := shards.Running(ctx, "a")
		if err != nil {
			t.Fatalf("Running: %v", err)
		}
		if got != want {
			t.Errorf("Running = %v, want %v", got, want)
		}
	}

	t.Run("a held lease runs until it has not changed for its duration, and again once renewed", func(t *testing.T) {
		now := start
		c := fake.NewClientBuilder().WithObjects(lease("pod-1")).Build()
		shards := &LeaseReader{Reader: c, Namespace: "landlord-system", Now: func() time.Time { return now }}
		running(t, shards, true)
		now = now.Add(10 * time.Second)
		running(t, shards, true)
		now = now.Add(10 * time.Second)
		running(t, shards, false)
		renewed := lease("pod-1")
		if err := c.Get(ctx, client.ObjectKeyFromObject(renewed), renewed); err != nil {
			t.Fatal(err)
		}
		renewed.Spec.RenewTime = &metav1.MicroTime{Time: start}
		if err := c.Update(ctx, renewed); err != nil {
			t.Fatal(err)
		}
		running(t, shards, true)
	})
	t.Run("a released lease does not run", func(t *testing.T) {
		running(t, &LeaseReader{Reader: fake.NewClientBuilder().WithObjects(lease("")).Build(), Namespace: "landlord-system"}, false)
	})
	t.Run("no lease does not run", func(t *testing.T) {
		running(t, &LeaseReader{Reader: fake.NewClientBuilder().Build(), Namespace: "landlord-system"}, false)
	})
	t.Run("with the lease namespace unknown every shard is taken to run", func(t *testing.T) {
		running(t, &LeaseReader{Reader: fake.NewClientBuilder().Build()}, true)
	})
	t.Run("the default shard keeps the lease name of releases before shards", func(t *testing.T) {
		if LeaseName("") != "landlord.tenancy.landlord.dev" {
			t.Errorf("the default shard's lease is %q: an upgrade would run two leaders", LeaseName(""))
		}
	})
}
