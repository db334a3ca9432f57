package tenantbackup

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

var (
	lastBackupDesc = prometheus.NewDesc("landlord_tenant_last_backup_timestamp_seconds",
		"When the newest succeeded backup of a tenant ended (any TenantBackup of it), in seconds since the epoch; no series for a tenant never backed up.",
		[]string{"tenant"}, nil)
	overdueDesc = prometheus.NewDesc("landlord_backup_schedule_overdue_tenants",
		"Tenants a schedule backs up that its last two runs (their windows over) left without a succeeded backup.",
		[]string{"schedule"}, nil)
)

// backupAges reports, at each scrape, the time of each tenant's last good backup and how many
// tenants each schedule has left without one for too long. It reads the operator's cache:
// nothing is kept between scrapes, so a restart or a tenant gone leaves no stale series.
type backupAges struct {
	source atomic.Pointer[backupAgeSource]
}

type backupAgeSource struct {
	reader client.Reader
}

var ages = &backupAges{}

func init() {
	ctrlmetrics.Registry.MustRegister(ages)
}

// ReportBackupAges makes the backup age metrics read reader's tenants, backups and schedules;
// until it is called they report nothing. The latest call wins (one operator per process, but
// for tests). The times compared are a backup's end and a tenant's creation, both the real
// clock's, so the metrics read the real clock too, never the schedules' (a test's may be days
// ahead).
func ReportBackupAges(reader client.Reader) {
	ages.source.Store(&backupAgeSource{reader: reader})
}

// MetricKind is the type of every metric it reports, for the metrics reference.
func (c *backupAges) MetricKind() string { return "gauge" }

func (c *backupAges) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastBackupDesc
	ch <- overdueDesc
}

func (c *backupAges) Collect(ch chan<- prometheus.Metric) {
	src := c.source.Load()
	if src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	last, schedules, tenants, err := src.read(ctx)
	if starting(err) {
		// Scraped before the operator's cache, or its controllers' informers, started:
		// nothing to say yet.
		return
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "reading backups for their metrics")
		return
	}
	for tenant, at := range last {
		ch <- prometheus.MustNewConstMetric(lastBackupDesc, prometheus.GaugeValue, float64(at.Unix()), tenant)
	}
	now := time.Now()
	for i := range schedules {
		n, ok := Overdue(&schedules[i], tenants, last, now)
		if ok {
			ch <- prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, float64(n), schedules[i].Name)
		}
	}
}

// starting reports whether err says the cache is not ready yet: not started, or without the
// informer of a kind whose controller has not started (the schedules' informer starts with the
// schedule controller, after the metrics endpoint serves).
func starting(err error) bool {
	_, notStarted := errors.AsType[*cache.ErrCacheNotStarted](err)
	_, notCached := errors.AsType[*cache.ErrResourceNotCached](err)
	return notStarted || notCached
}

func (c *backupAgeSource) read(ctx context.Context) (map[string]time.Time, []tenancyv1alpha1.TenantBackupSchedule, []tenancyv1alpha1.Tenant, error) {
	backups := &tenancyv1alpha1.TenantBackupList{}
	if err := c.reader.List(ctx, backups, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	schedules := &tenancyv1alpha1.TenantBackupScheduleList{}
	if err := c.reader.List(ctx, schedules, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	var tenants []tenancyv1alpha1.Tenant
	if len(schedules.Items) > 0 {
		list := &tenancyv1alpha1.TenantList{}
		if err := c.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, nil, err
		}
		tenants = list.Items
	}
	return LastGoodBackups(backups.Items), schedules.Items, tenants, nil
}

// LastGoodBackups is, by tenant name, when its newest succeeded backup ended. A backup of a
// tenant since deleted and made again under the same name still counts for the name: the
// tenant's status is what says whose data it holds.
func LastGoodBackups(backups []tenancyv1alpha1.TenantBackup) map[string]time.Time {
	last := map[string]time.Time{}
	for i := range backups {
		b := &backups[i]
		if b.Status.Phase != tenancyv1alpha1.BackupSucceeded || b.Status.CompletionTime == nil {
			continue
		}
		if at := b.Status.CompletionTime.Time; at.After(last[b.Spec.Tenant]) {
			last[b.Spec.Tenant] = at
		}
	}
	return last
}

// Overdue counts the tenants the schedule backs up (selected, with their data in place) whose
// last good backup is older than the schedule's second-latest run, once its latest run's window
// (and a minute) has passed: two runs in a row left them without one. A tenant created after
// that second-latest run was not selected by both, and is not counted. False when the schedule
// is suspended, its schedule does not parse, or it has not had two runs yet. The runs are the
// schedule's past times, walked from overdueLookback ago: an irregular schedule (weekdays, the
// first of the month) counts its own runs, not a period projected from the next two.
func Overdue(s *tenancyv1alpha1.TenantBackupSchedule, tenants []tenancyv1alpha1.Tenant, last map[string]time.Time, now time.Time) (int, bool) {
	if s.Spec.Suspend {
		return 0, false
	}
	sched, err := cron.ParseStandard(s.Spec.Schedule)
	if err != nil {
		return 0, false
	}
	sel, err := metav1.LabelSelectorAsSelector(&s.Spec.Tenants)
	if err != nil {
		return 0, false
	}
	latest, previous := lastTwoRuns(sched, now)
	if previous.IsZero() || now.Before(windowEnd(s, latest).Add(missedGrace)) {
		// The latest run may still make its backups: the one before is the latest that counts.
		if previous.IsZero() {
			return 0, true
		}
		_, previous = lastTwoRuns(sched, previous)
		if previous.IsZero() {
			return 0, true
		}
	}
	n := 0
	for i := range tenants {
		t := &tenants[i]
		if !sel.Matches(labels.Set(t.Labels)) || !backedUp(t, s.Spec.Databases) || !t.CreationTimestamp.Time.Before(previous) {
			continue
		}
		if at, ok := last[t.Name]; !ok || at.Before(previous) {
			n++
		}
	}
	return n, true
}

// lookbacks are how far back a schedule's runs are looked for, the nearest first: a schedule of
// every minute finds its two in the first, a monthly one in the last.
var lookbacks = []time.Duration{2 * time.Hour, 50 * time.Hour, 9 * 24 * time.Hour, 70 * 24 * time.Hour}

// lastTwoRuns are the schedule's latest two times at or before now, zero when there are fewer.
func lastTwoRuns(sched cron.Schedule, now time.Time) (latest, previous time.Time) {
	for _, back := range lookbacks {
		latest, previous = time.Time{}, time.Time{}
		for t := sched.Next(now.Add(-back)); !t.IsZero() && !t.After(now); t = sched.Next(t) {
			latest, previous = t, latest
		}
		if !previous.IsZero() {
			break
		}
	}
	return latest, previous
}
