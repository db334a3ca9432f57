package rollout

import (
	"slices"
	"time"
	// The time zone database, for an operator image that has none: a window's zone is read the
	// same wherever the binary runs.
	_ "time/tzdata"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Windows is where a tenant's maintenance windows stand at an instant.
type Windows struct {
	// Open: a window is open (always, for a tenant without windows).
	Open bool
	// Opened is when the window open now opened (the earliest, when windows overlap), or, when
	// none is open, when the last one opened; zero for a tenant without windows.
	Opened time.Time
	// Next is when the next window opens, after the instant; zero for a tenant without windows.
	Next time.Time
}

// WindowsAt is where windows stand at now. A window opens at its start on each of its days (every
// day when it names none), in its time zone, and stays open for its duration, which may run into
// the next day: a window of Sunday 23:00 for 2h is open on Monday at 00:30. Times of day are read
// in the zone on the day, so a window keeps its local start across a change of daylight saving
// time, and its duration is elapsed time (a 3h window opening at 01:00 on the night clocks go
// forward closes at 05:00 local time). A start the clocks skip (02:30 on the night they go
// forward) opens as time.Date places it, an hour later. A time zone the operator's time zone
// database does not know counts as UTC, as an empty one does; a start that is not HH:MM
// (admission refuses it) never opens.
func WindowsAt(windows []tenancyv1alpha1.MaintenanceWindow, now time.Time) Windows {
	if len(windows) == 0 {
		return Windows{Open: true}
	}
	var w Windows
	var lastOpened time.Time
	for _, mw := range windows {
		hour, minute, ok := parseStart(mw.Start)
		if !ok {
			continue
		}
		loc := Location(mw.TimeZone)
		local := now.In(loc)
		// A window opens at most once a day and lasts at most a day, and the days repeat
		// weekly: the eight days before and after today hold the one open now, the last one
		// opened and the next one to open.
		for d := -8; d <= 8; d++ {
			opens := time.Date(local.Year(), local.Month(), local.Day()+d, hour, minute, 0, 0, loc)
			if !opensOn(mw.Days, opens.Weekday()) {
				continue
			}
			switch {
			case opens.After(now):
				if w.Next.IsZero() || opens.Before(w.Next) {
					w.Next = opens
				}
			case now.Before(opens.Add(mw.Duration.Duration)):
				if !w.Open || opens.Before(w.Opened) {
					w.Open, w.Opened = true, opens
				}
			}
			if !opens.After(now) && opens.After(lastOpened) {
				lastOpened = opens
			}
		}
	}
	if !w.Open {
		w.Opened = lastOpened
	}
	return w
}

// Location is the time zone named zone: UTC when it is empty, or when the operator's time zone
// database does not know it.
func Location(zone string) *time.Location {
	if zone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// parseStart reads a window's start, HH:MM.
func parseStart(start string) (hour, minute int, ok bool) {
	t, err := time.Parse("15:04", start)
	if err != nil || len(start) != len("15:04") {
		return 0, 0, false
	}
	return t.Hour(), t.Minute(), true
}

// opensOn reports whether a window of days opens on day: every day when days is empty.
func opensOn(days []tenancyv1alpha1.Weekday, day time.Weekday) bool {
	return len(days) == 0 || slices.Contains(days, tenancyv1alpha1.Weekday(day.String()))
}

// MayMoveNow reports whether ro may move t's component at now as far as t's maintenance windows
// go, and if not, when its next window opens. It may when ro ignores maintenance windows, when
// a window of t is open, or when t has begun the move: its component already runs ro's version
// (not Ready yet, say), or its migration to that version is under way, since a move begun in a
// window is finished after it closes. It may, too, when t does not run the component yet: a
// component's first start is no move.
func MayMoveNow(ro *tenancyv1alpha1.ComponentRollout, t *tenancyv1alpha1.Tenant, now time.Time) (bool, time.Time) {
	if ro.Spec.Strategy.IgnoreMaintenanceWindows || len(t.Spec.MaintenanceWindows) == 0 {
		return true, time.Time{}
	}
	i := slices.IndexFunc(t.Status.Components, func(c tenancyv1alpha1.ComponentStatus) bool { return c.Name == ro.Spec.Component })
	if i < 0 || Begun(&t.Status.Components[i], ro.Spec.Version) {
		return true, time.Time{}
	}
	w := WindowsAt(t.Spec.MaintenanceWindows, now)
	return w.Open, w.Next
}

// Begun reports whether a component whose status is st has begun moving to version: it runs it,
// or its migration to it is under way.
func Begun(st *tenancyv1alpha1.ComponentStatus, version string) bool {
	if st.Version == version {
		return true
	}
	m := st.Migration
	// A failed migration to the version began too: the tenant stays failed, not waiting.
	return m != nil && m.To == version && m.Phase != tenancyv1alpha1.MigrationSucceeded
}
