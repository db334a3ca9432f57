package tenantbackup

import (
	"hash/fnv"
	"time"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// startWithinUnwindowed is how long after its time a schedule with no window has to start its
// backups before its run missed it.
const startWithinUnwindowed = time.Hour

// Offset is when, after its run's time, a schedule makes a tenant's backup: a place in the
// window that depends on the schedule's and the tenant's names alone, so the tenant is backed up
// at about the same time every run, plus up to jitter more that depends on the run too. It is
// always within the window: the stable part is taken in the window less the jitter.
func Offset(schedule, tenant string, run time.Time, window, jitter time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	jitter = min(max(jitter, 0), window)
	var off time.Duration
	if stable := window - jitter; stable > 0 {
		off = time.Duration(hash(schedule, tenant) % uint64(stable))
	}
	if jitter > 0 {
		off += time.Duration(hash(schedule, tenant, run.UTC().Format(time.RFC3339)) % uint64(jitter))
	}
	// Whole seconds: a time a person reads, and one the minute's tick need not chase.
	return off.Truncate(time.Second)
}

// hash is FNV-1a of the parts, each ended by a NUL so that ("ab","c") and ("a","bc") differ.
func hash(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// window and jitter are the schedule's spread: none when unset.
func spreadOf(s *tenancyv1alpha1.TenantBackupSchedule) (window, jitter time.Duration) {
	if s.Spec.Window != nil {
		window = s.Spec.Window.Duration
	}
	if s.Spec.Jitter != nil {
		jitter = s.Spec.Jitter.Duration
	}
	return window, jitter
}

// windowEnd is when every backup of the run at run should have started.
func windowEnd(s *tenancyv1alpha1.TenantBackupSchedule, run time.Time) time.Time {
	if window, _ := spreadOf(s); window > 0 {
		return run.Add(window)
	}
	return run.Add(startWithinUnwindowed)
}
