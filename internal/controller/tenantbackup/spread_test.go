package tenantbackup

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestOffsetsSpreadAFleetOverItsWindowAndKeepEachTenantAtItsTime(t *testing.T) {
	run := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	window := 4 * time.Hour
	const n = 10000

	t.Run("every offset is within the window, and a fleet fills each quarter of it", func(t *testing.T) {
		var quarters [4]int
		for i := range n {
			off := Offset("nightly", fmt.Sprintf("tenant-%d", i), run, window, 10*time.Minute)
			if off < 0 || off >= window {
				t.Fatalf("tenant-%d at %s, outside [0, %s)", i, off, window)
			}
			quarters[off/(window/4)]++
		}
		// Uniform: 2,500 each; FNV over these names is far closer than 20 % off.
		for q, c := range quarters {
			if c < n/4*8/10 || c > n/4*12/10 {
				t.Errorf("quarter %d of the window has %d of %d tenants, want about %d", q, c, n, n/4)
			}
		}
	})

	t.Run("without jitter a tenant is backed up at the same time every run", func(t *testing.T) {
		a := Offset("nightly", "acme", run, window, 0)
		b := Offset("nightly", "acme", run.AddDate(0, 0, 1), window, 0)
		if a != b {
			t.Errorf("acme at %s one night and %s the next", a, b)
		}
	})

	t.Run("with jitter it moves by less than the jitter from run to run", func(t *testing.T) {
		jitter := 10 * time.Minute
		moved := false
		base := Offset("nightly", "acme", run, window, jitter)
		for d := range 30 {
			off := Offset("nightly", "acme", run.AddDate(0, 0, d), window, jitter)
			if diff := (off - base).Abs(); diff >= jitter {
				t.Fatalf("night %d: %s from the first night's %s, want under %s", d, diff, base, jitter)
			}
			moved = moved || off != base
		}
		if !moved {
			t.Error("30 nights at the very same second: the jitter did nothing")
		}
	})

	t.Run("another schedule places the same tenant elsewhere, and no window means its time", func(t *testing.T) {
		if Offset("nightly", "acme", run, window, 0) == Offset("weekly", "acme", run, window, 0) {
			t.Error("two schedules put acme at the same offset: their names are not in the hash")
		}
		if got := Offset("nightly", "acme", run, 0, 0); got != 0 {
			t.Errorf("no window: offset %s, want 0", got)
		}
		if got := Offset("nightly", "acme", run, time.Minute, time.Minute); got < 0 || got >= time.Minute {
			t.Errorf("jitter as long as the window: offset %s, want within it", got)
		}
	})
}

func TestATenantIsOverdueAfterTwoPeriodsAndTheWindowWithoutAGoodBackup(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	s := &tenancyv1alpha1.TenantBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: tenancyv1alpha1.TenantBackupScheduleSpec{
			Schedule: "0 1 * * *", Window: &metav1.Duration{Duration: 4 * time.Hour},
			Tenants: metav1.LabelSelector{MatchLabels: map[string]string{"backup": "nightly"}},
		},
	}
	tenant := func(name string, created time.Time, labels map[string]string) tenancyv1alpha1.Tenant {
		return tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.Time{Time: created}},
			Status:     tenancyv1alpha1.TenantStatus{Databases: []tenancyv1alpha1.DatabaseStatus{{Name: "main", Server: "pg"}}},
		}
	}
	old := now.AddDate(0, 0, -30)
	nightly := map[string]string{"backup": "nightly"}
	tenants := []tenancyv1alpha1.Tenant{
		tenant("fresh-backup", old, nightly),
		tenant("two-days-old-backup", old, nightly),
		tenant("never-backed-up", old, nightly),
		tenant("new-tenant", now.Add(-time.Hour), nightly),
		tenant("not-selected", old, nil),
	}
	last := map[string]time.Time{
		"fresh-backup":        now.Add(-9 * time.Hour),
		"two-days-old-backup": now.Add(-(2*24 + 5) * time.Hour),
	}
	got, ok := Overdue(s, tenants, last, now)
	// Two days and the four-hour window back from now: the tenant two days and five hours
	// without a backup, and the one never backed up; not the new one, nor one not selected.
	if !ok || got != 2 {
		t.Errorf("overdue %d (%t), want 2", got, ok)
	}
	s.Spec.Suspend = true
	if _, ok := Overdue(s, tenants, last, now); ok {
		t.Error("a suspended schedule reports overdue tenants; it should report none")
	}
}

func TestAWeekdaySchedulesWeekendLeavesNoTenantOverdue(t *testing.T) {
	s := &tenancyv1alpha1.TenantBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "weekdays"},
		Spec:       tenancyv1alpha1.TenantBackupScheduleSpec{Schedule: "0 2 * * 1-5"},
	}
	tenant := tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", CreationTimestamp: metav1.Time{Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}},
		Status:     tenancyv1alpha1.TenantStatus{Databases: []tenancyv1alpha1.DatabaseStatus{{Name: "main", Server: "pg"}}},
	}
	// Friday 4 December 2026, 02:10: the last good backup.
	last := map[string]time.Time{"acme": time.Date(2026, 12, 4, 2, 10, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name string
		now  time.Time
		want int
	}{
		{"on Sunday, Friday's backup is the latest run's", time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), 0},
		{"on Monday during its run, Friday's still counts", time.Date(2026, 12, 7, 2, 30, 0, 0, time.UTC), 0},
		{"on Monday once its run failed, one run is missed, not two", time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC), 0},
		{"on Tuesday once Monday's and Tuesday's runs failed, it is overdue", time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := Overdue(s, []tenancyv1alpha1.Tenant{tenant}, last, tc.now); !ok || got != tc.want {
				t.Errorf("overdue %d (%t), want %d", got, ok, tc.want)
			}
		})
	}
}
