package tenantbackup

import (
	"slices"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestLastSlotIsTheLatestScheduledTimeNotAfterNow(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, schedule, from, now, want string
	}{
		{"nothing is due before the first time", "0 3 * * *", "2026-11-27T02:00:00Z", "2026-11-27T02:59:59Z", ""},
		{"the time itself is due", "0 3 * * *", "2026-11-27T02:00:00Z", "2026-11-27T03:00:00Z", "2026-11-27T03:00:00Z"},
		{"the last run's own time is not due again", "0 3 * * *", "2026-11-27T03:00:00Z", "2026-11-27T03:30:00Z", ""},
		{"of runs missed for days, only the latest is due", "0 3 * * *", "2026-11-20T03:00:00Z", "2026-11-27T12:00:00Z", "2026-11-27T03:00:00Z"},
		{"a schedule of every minute missed for a month ends at the last minute", "* * * * *", "2026-10-27T00:00:00Z", "2026-11-27T12:34:56Z", "2026-11-27T12:34:00Z"},
		{"a schedule that never comes is never due", "0 0 30 2 *", "2026-01-01T00:00:00Z", "2030-01-01T00:00:00Z", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sched, err := cron.ParseStandard(tc.schedule)
			if err != nil {
				t.Fatal(err)
			}
			got, due := lastSlot(sched, at(tc.from), at(tc.now))
			if tc.want == "" {
				if due {
					t.Errorf("due at %s, want nothing due", got)
				}
				return
			}
			if !due || !got.Equal(at(tc.want)) {
				t.Errorf("lastSlot = %s, %t; want %s", got, due, tc.want)
			}
		})
	}
}

func TestRetentionDeletesOnlyWhatANewerSuccessReplaces(t *testing.T) {
	backup := func(day string, phase tenancyv1alpha1.BackupPhase) *tenancyv1alpha1.TenantBackup {
		return &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: "acme-202611" + day + "0300"}, Status: tenancyv1alpha1.TenantBackupStatus{Phase: phase}}
	}
	const (
		ok      = tenancyv1alpha1.BackupSucceeded
		failed  = tenancyv1alpha1.BackupFailed
		running = tenancyv1alpha1.BackupRunning
	)
	for _, tc := range []struct {
		name    string
		backups []*tenancyv1alpha1.TenantBackup
		keep    int
		want    []string
	}{
		{"fewer successes than kept delete nothing", []*tenancyv1alpha1.TenantBackup{backup("01", ok), backup("02", ok)}, 3, nil},
		{"the oldest successes beyond the kept go", []*tenancyv1alpha1.TenantBackup{backup("03", ok), backup("01", ok), backup("02", ok)}, 2, []string{"acme-202611010300"}},
		{"failures older than the newest success go", []*tenancyv1alpha1.TenantBackup{backup("01", ok), backup("02", failed), backup("03", ok)}, 5, []string{"acme-202611020300"}},
		{"failures newer than every success stay, and so do the successes", []*tenancyv1alpha1.TenantBackup{backup("01", ok), backup("02", failed), backup("03", failed)}, 1, nil},
		{"a backup still running is never deleted, nor counted", []*tenancyv1alpha1.TenantBackup{backup("01", ok), backup("02", ok), backup("03", running)}, 1, []string{"acme-202611010300"}},
		{"with no success nothing goes", []*tenancyv1alpha1.TenantBackup{backup("01", failed), backup("02", failed)}, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, b := range expired(tc.backups, tc.keep, bySchedule) {
				got = append(got, b.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("expired = %v, want %v", got, tc.want)
			}
		})
	}
}
