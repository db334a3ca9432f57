package rollout_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

func window(start string, d time.Duration, zone string, days ...tenancyv1alpha1.Weekday) tenancyv1alpha1.MaintenanceWindow {
	return tenancyv1alpha1.MaintenanceWindow{Days: days, Start: start, Duration: metav1.Duration{Duration: d}, TimeZone: zone}
}

func TestWindowsAt(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// 2026-11-25 is a Wednesday.
	wednesdayNoon := utc("2026-11-25T12:00:00Z")
	for name, tc := range map[string]struct {
		windows []tenancyv1alpha1.MaintenanceWindow
		now     time.Time
		want    rollout.Windows
	}{
		"a tenant without windows is always open": {
			now: wednesdayNoon, want: rollout.Windows{Open: true},
		},
		"a window open now says when it opened, and when the next opens": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("11:30", time.Hour, "")},
			now:     wednesdayNoon,
			want:    rollout.Windows{Open: true, Opened: utc("2026-11-25T11:30:00Z"), Next: utc("2026-11-26T11:30:00Z")},
		},
		"a window that opens later today is closed until then": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("22:00", 2*time.Hour, "")},
			now:     wednesdayNoon,
			want:    rollout.Windows{Opened: utc("2026-11-24T22:00:00Z"), Next: utc("2026-11-25T22:00:00Z")},
		},
		"a window closes at the end of its duration": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("11:00", time.Hour, "")},
			now:     wednesdayNoon,
			want:    rollout.Windows{Opened: utc("2026-11-25T11:00:00Z"), Next: utc("2026-11-26T11:00:00Z")},
		},
		"a window that crosses midnight is open the next morning": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("23:00", 3*time.Hour, "", "Tuesday")},
			now:     utc("2026-11-25T01:30:00Z"),
			want:    rollout.Windows{Open: true, Opened: utc("2026-11-24T23:00:00Z"), Next: utc("2026-12-01T23:00:00Z")},
		},
		"a Sunday window runs into Monday, and the next is the Sunday after": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("22:00", 4*time.Hour, "", "Sunday")},
			now:     utc("2026-11-30T01:00:00Z"), // a Monday
			want:    rollout.Windows{Open: true, Opened: utc("2026-11-29T22:00:00Z"), Next: utc("2026-12-06T22:00:00Z")},
		},
		"a window of some days waits for the next of them, across the week's end": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("02:00", time.Hour, "", "Monday", "Tuesday")},
			now:     utc("2026-11-28T12:00:00Z"), // a Saturday
			want:    rollout.Windows{Opened: utc("2026-11-24T02:00:00Z"), Next: utc("2026-11-30T02:00:00Z")},
		},
		"a window without days opens every day": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("03:00", time.Hour, "")},
			now:     utc("2026-11-29T12:00:00Z"), // a Sunday
			want:    rollout.Windows{Opened: utc("2026-11-29T03:00:00Z"), Next: utc("2026-11-30T03:00:00Z")},
		},
		"of several windows, the next to open is the soonest": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("20:00", time.Hour, "", "Friday"), window("18:00", time.Hour, "", "Thursday")},
			now:     wednesdayNoon,
			want:    rollout.Windows{Opened: utc("2026-11-20T20:00:00Z"), Next: utc("2026-11-26T18:00:00Z")},
		},
		"overlapping windows open now count from the earliest opening": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("11:45", time.Hour, ""), window("10:00", 4*time.Hour, "")},
			now:     wednesdayNoon,
			want:    rollout.Windows{Open: true, Opened: utc("2026-11-25T10:00:00Z"), Next: utc("2026-11-26T10:00:00Z")},
		},
		"a window in another time zone opens at its local time": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("02:00", time.Hour, "America/New_York")},
			now:     wednesdayNoon,
			want: rollout.Windows{Opened: time.Date(2026, 11, 25, 2, 0, 0, 0, newYork),
				Next: time.Date(2026, 11, 26, 2, 0, 0, 0, newYork)},
		},
		"a window keeps its local start across the change to summer time in Paris": {
			// Clocks go from 02:00 to 03:00 on Sunday 2027-03-28: 01:00 is UTC+1 that night,
			// UTC+2 the next.
			windows: []tenancyv1alpha1.MaintenanceWindow{window("01:00", 3*time.Hour, "Europe/Paris")},
			now:     utc("2027-03-28T02:30:00Z"),
			want: rollout.Windows{Open: true, Opened: utc("2027-03-28T00:00:00Z"),
				Next: time.Date(2027, 3, 29, 1, 0, 0, 0, paris)},
		},
		"a window's duration is elapsed time on the night of the change": {
			// Opened at 00:00 UTC (01:00 CET), 3h later is 03:00 UTC (05:00 CEST).
			windows: []tenancyv1alpha1.MaintenanceWindow{window("01:00", 3*time.Hour, "Europe/Paris")},
			now:     utc("2027-03-28T03:00:00Z"),
			want: rollout.Windows{Opened: utc("2027-03-28T00:00:00Z"),
				Next: utc("2027-03-28T23:00:00Z")},
		},
		"a start the clocks skip opens an hour later": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("02:30", time.Hour, "Europe/Paris", "Sunday")},
			now:     utc("2027-03-27T12:00:00Z"),
			want: rollout.Windows{Opened: time.Date(2027, 3, 21, 2, 30, 0, 0, paris),
				Next: time.Date(2027, 3, 28, 3, 30, 0, 0, paris)},
		},
		"an unknown time zone counts as UTC": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("11:30", time.Hour, "Mars/Olympus_Mons")},
			now:     wednesdayNoon,
			want:    rollout.Windows{Open: true, Opened: utc("2026-11-25T11:30:00Z"), Next: utc("2026-11-26T11:30:00Z")},
		},
		"a start that is not HH:MM never opens": {
			windows: []tenancyv1alpha1.MaintenanceWindow{window("2:00", time.Hour, "")},
			now:     wednesdayNoon,
			want:    rollout.Windows{},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := rollout.WindowsAt(tc.windows, tc.now)
			if got.Open != tc.want.Open || !got.Opened.Equal(tc.want.Opened) || !got.Next.Equal(tc.want.Next) {
				t.Errorf("got open %v, opened %s, next %s; want open %v, opened %s, next %s",
					got.Open, got.Opened.UTC(), got.Next.UTC(), tc.want.Open, tc.want.Opened.UTC(), tc.want.Next.UTC())
			}
		})
	}
}

func TestMayMoveNow(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	closed := []tenancyv1alpha1.MaintenanceWindow{window("02:00", time.Hour, "")}
	next := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	tenant := func(windows []tenancyv1alpha1.MaintenanceWindow, st ...tenancyv1alpha1.ComponentStatus) *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{MaintenanceWindows: windows}, Status: tenancyv1alpha1.TenantStatus{Components: st}}
	}
	running := func(version string, m *tenancyv1alpha1.MigrationStatus) tenancyv1alpha1.ComponentStatus {
		return tenancyv1alpha1.ComponentStatus{Name: "web", Version: version, Migration: m}
	}
	for name, tc := range map[string]struct {
		ignore bool
		tenant *tenancyv1alpha1.Tenant
		want   bool
	}{
		"a tenant without windows moves":                         {tenant: tenant(nil, running("1.0.0", nil)), want: true},
		"a tenant outside its window waits":                      {tenant: tenant(closed, running("1.0.0", nil))},
		"an urgent rollout moves it outside its window":          {ignore: true, tenant: tenant(closed, running("1.0.0", nil)), want: true},
		"a tenant already running the version finishes its move": {tenant: tenant(closed, running("2.0.0", nil)), want: true},
		"a tenant migrating to the version finishes its move": {
			tenant: tenant(closed, running("1.0.0", &tenancyv1alpha1.MigrationStatus{To: "2.0.0", Phase: tenancyv1alpha1.MigrationPre})), want: true,
		},
		"a failed migration to the version began: it stays the rollout's failure, not waiting for a window": {
			tenant: tenant(closed, running("1.0.0", &tenancyv1alpha1.MigrationStatus{To: "2.0.0", Phase: tenancyv1alpha1.MigrationFailed})), want: true,
		},
		"a migration to another version does not let it move": {
			tenant: tenant(closed, running("1.0.0", &tenancyv1alpha1.MigrationStatus{To: "1.5.0", Phase: tenancyv1alpha1.MigrationPre})),
		},
		"a component not running yet starts at once": {tenant: tenant(closed), want: true},
	} {
		t.Run(name, func(t *testing.T) {
			ro := &tenancyv1alpha1.ComponentRollout{Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "2.0.0",
				Strategy: tenancyv1alpha1.RolloutStrategy{IgnoreMaintenanceWindows: tc.ignore}}}
			got, gotNext := rollout.MayMoveNow(ro, tc.tenant, now)
			if got != tc.want {
				t.Fatalf("MayMoveNow = %v, want %v", got, tc.want)
			}
			if !got && !gotNext.Equal(next) {
				t.Errorf("next window %s, want %s", gotNext, next)
			}
		})
	}
}
