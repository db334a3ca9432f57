package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// migratingTenant is a tenant of group=waves whose component api moves to 2.0.0 as migration
// says (nil: no migration), with its ComponentsReady reason.
func migratingTenant(name, reason string, migration *tenancyv1alpha1.MigrationStatus) *tenancyv1alpha1.Tenant {
	t := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"group": "waves"}},
		Spec:       tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "api", Version: "1.0.0", FollowRollouts: true}}},
		Status:     tenancyv1alpha1.TenantStatus{Components: []tenancyv1alpha1.ComponentStatus{{Name: "api", Version: "1.0.0", Migration: migration}}},
	}
	status := metav1.ConditionTrue
	if reason != tenancyv1alpha1.ReasonSucceeded {
		status = metav1.ConditionFalse
	}
	t.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ComponentsReadyCondition, Status: status, Reason: reason, LastTransitionTime: metav1.Now()}}
	return t
}

func TestATenantsMoveMigratesWhileItsMigrationToTheVersionRunsOrItsComponentsMigrate(t *testing.T) {
	started := &metav1.Time{Time: time.Now()}
	for name, tc := range map[string]struct {
		tenant *tenancyv1alpha1.Tenant
		want   tenantMigration
	}{
		"no migration":                     {migratingTenant("t", tenancyv1alpha1.ReasonSucceeded, nil), tenantMigration{}},
		"ComponentsReady reason Migrating": {migratingTenant("t", tenancyv1alpha1.ReasonMigrating, nil), tenantMigration{migrating: true}},
		"its migration to the version backs up": {migratingTenant("t", tenancyv1alpha1.ReasonRollingOut,
			&tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0", Phase: tenancyv1alpha1.MigrationBackingUp, StartedAt: started}), tenantMigration{migrating: true}},
		"its migration to the version failed": {migratingTenant("t", tenancyv1alpha1.ReasonMigrationFailed,
			&tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0", Phase: tenancyv1alpha1.MigrationFailed}), tenantMigration{failed: true}},
		"its migration to the version succeeded": {migratingTenant("t", tenancyv1alpha1.ReasonSucceeded,
			&tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0", Phase: tenancyv1alpha1.MigrationSucceeded}), tenantMigration{}},
		"a migration to another version that failed is not this rollout's": {migratingTenant("t", tenancyv1alpha1.ReasonMigrationFailed,
			&tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "1.5.0", Phase: tenancyv1alpha1.MigrationFailed}), tenantMigration{}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := migrationOf(tc.tenant, "api", "2.0.0"); got != tc.want {
				t.Errorf("migrationOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// `rollout status` says, for each wave started, how many of its tenants migrate and how many
// failed migrating, each time the counts change (read from a watch of the tenants the rollout's
// selector chooses), and which of its tenants wait for their maintenance window, until when.
func TestFollowingARolloutShowsItsWavesMigrationsAndTenantsWaitingForTheirWindow(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	nextWindow := metav1.NewTime(time.Date(2026, 12, 8, 2, 0, 0, 0, time.UTC))
	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "api-2.0.0", Generation: 1},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "api", Version: "2.0.0",
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"group": "waves"}}},
		Status: tenancyv1alpha1.ComponentRolloutStatus{ObservedGeneration: 1, Released: 2, Waves: []tenancyv1alpha1.RolloutWave{
			{Tenants: []string{"a", "b", "c"}, StartedAt: &now, Pending: 3,
				Failed: []tenancyv1alpha1.RolloutFailure{{Tenant: "c", Reason: tenancyv1alpha1.ReasonMigrationFailed, Message: "2.0.0/pre/schema failed"}}},
			{Tenants: []string{"d", "e"}, StartedAt: &now, Pending: 2, Waiting: []tenancyv1alpha1.RolloutWaiting{{Tenant: "d", NextWindow: nextWindow}}},
			{Tenants: []string{"f"}},
		}},
	}
	migrating := &tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0", Phase: tenancyv1alpha1.MigrationPre, StartedAt: &now}
	a := migratingTenant("a", tenancyv1alpha1.ReasonMigrating, migrating)
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
		WithObjects(ro, a, migratingTenant("b", tenancyv1alpha1.ReasonMigrating, nil),
			migratingTenant("c", tenancyv1alpha1.ReasonMigrationFailed, &tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0", Phase: tenancyv1alpha1.MigrationFailed}),
			migratingTenant("d", tenancyv1alpha1.ReasonSucceeded, nil), migratingTenant("e", tenancyv1alpha1.ReasonMigrating, migrating),
			// Of another group: the selector leaves it out, whatever it does.
			&tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "z", Labels: map[string]string{"group": "other"}}}).
		WithStatusSubresource(&tenancyv1alpha1.Tenant{}, &tenancyv1alpha1.ComponentRollout{}).
		WithIndex(&tenancyv1alpha1.ComponentRollout{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		Build()
	ctx := context.Background()
	out := &syncBuffer{}
	ended := make(chan error, 1)
	go func() { ended <- followRollout(ctx, out, cluster{name: "test", client: c}, "api-2.0.0") }()

	g.Eventually(out.String).WithTimeout(10 * time.Second).Should(And(
		ContainSubstring("context test: api-2.0.0: wave 1/3 started: a, b, c\n"),
		ContainSubstring("context test: api-2.0.0: wave 1/3: c failed: MigrationFailed: 2.0.0/pre/schema failed\n"),
		ContainSubstring("context test: api-2.0.0: wave 1/3: 2 migrating, 1 failed migrating (MigrationFailed)\n"),
		ContainSubstring("context test: api-2.0.0: wave 2/3 started: d, e\n"),
		ContainSubstring("context test: api-2.0.0: wave 2/3: waiting for their maintenance window: d at 2026-12-08T02:00:00Z\n"),
		ContainSubstring("context test: api-2.0.0: wave 2/3: 1 migrating, 0 failed migrating (MigrationFailed)\n"),
	))
	g.Expect(out.String()).NotTo(ContainSubstring("wave 3/3"), "a wave not started says nothing")
	g.Expect(out.String()).NotTo(ContainSubstring("wave 1/3: 0 migrating"), "the counts are said once the tenants are read")

	// a's migration succeeds: the count of its wave goes down, and is said again.
	a.Status.Components[0].Migration = &tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0", Phase: tenancyv1alpha1.MigrationSucceeded}
	a.Status.Conditions[0].Status, a.Status.Conditions[0].Reason = metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded
	g.Expect(c.Status().Update(ctx, a)).To(Succeed())
	g.Eventually(out.String).WithTimeout(10 * time.Second).Should(ContainSubstring("context test: api-2.0.0: wave 1/3: 1 migrating, 1 failed migrating (MigrationFailed)\n"))

	// The rollout is done: the command ends, and the tenants' watch with it.
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ro), ro)).To(Succeed())
	ro.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonSucceeded,
		Message: "3 of 3 waves released; 6 tenants done", LastTransitionTime: now}}
	g.Expect(c.Status().Update(ctx, ro)).To(Succeed())
	g.Eventually(ended).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
	g.Expect(out.String()).To(HaveSuffix("context test: api-2.0.0: done: 3 of 3 waves released; 6 tenants done\n"))
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !regexp.MustCompile(`^context test: api-2\.0\.0: `).MatchString(line) {
			t.Errorf("line %q", line)
		}
	}
}
