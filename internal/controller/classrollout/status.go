package classrollout

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/tenantclass"
)

// defaultWaveInterval and defaultWavePercent are spec.updates' defaults, for a class the API
// server stored before it defaulted them.
const (
	defaultWaveInterval = 10 * time.Minute
	defaultWavePercent  = 10
)

// nextStatus is the class's status given its spec, its tenants and the time, and how soon to
// look again (0: not until its spec changes).
//
// A spec whose revision is not the current one becomes it, kept with its spec, and starts a
// rollout by spec.updates: Immediate releases every tenant, NewTenants none, Waves
// wavePercent of them; the first revision of a class releases every tenant (none can be at an
// earlier one). A change of spec.updates alone changes the current rollout's strategy. A wave follows the last one once its interval has passed and every tenant it
// released is Ready at the revision; a tenant it released that stalls halts it. Revisions no
// tenant converges to any more are dropped, the current one never.
func nextStatus(c *tenancyv1alpha1.TenantClass, tenants []tenancyv1alpha1.Tenant, now time.Time) (tenancyv1alpha1.TenantClassStatus, time.Duration) {
	s := *c.Status.DeepCopy()
	s.Conditions = append([]metav1.Condition(nil), c.Status.Conditions...)
	conds := conditions.For(&s.Conditions, c.Generation)
	updates := c.Spec.Updates
	if updates == nil {
		updates = &tenancyv1alpha1.ClassUpdates{}
	}
	strategy := updates.Strategy
	if strategy == "" {
		strategy = tenancyv1alpha1.ClassUpdateImmediate
	}
	percent := updates.WavePercent
	if percent <= 0 {
		percent = defaultWavePercent
	}
	interval := defaultWaveInterval
	if updates.WaveInterval != nil && updates.WaveInterval.Duration > 0 {
		interval = updates.WaveInterval.Duration
	}

	revision := tenantclass.Revision(c.Spec)
	inUse := map[string]bool{}
	for i := range tenants {
		if ref := tenants[i].Status.Class; ref != nil && ref.Name == c.Name {
			inUse[ref.Revision] = true
		}
	}
	full := false
	if revision != s.Revision && !slices.ContainsFunc(s.Revisions, func(r tenancyv1alpha1.ClassRevision) bool { return r.Name == revision }) {
		kept := 0
		for _, r := range s.Revisions {
			if inUse[r.Name] || r.Name == s.Revision {
				kept++
			}
		}
		full = kept >= tenancyv1alpha1.MaxClassRevisions
	}
	if revision != s.Revision && !full {
		spec := *c.Spec.DeepCopy()
		spec.Updates = nil
		s.Revisions = slices.DeleteFunc(s.Revisions, func(r tenancyv1alpha1.ClassRevision) bool { return r.Name == revision })
		s.Revisions = append(s.Revisions, tenancyv1alpha1.ClassRevision{Name: revision, Created: metav1.NewTime(now), Spec: spec})
		released := map[tenancyv1alpha1.ClassUpdateStrategy]int32{
			tenancyv1alpha1.ClassUpdateImmediate: 100, tenancyv1alpha1.ClassUpdateNewTenants: 0, tenancyv1alpha1.ClassUpdateWaves: percent,
		}[strategy]
		if s.Revision == "" {
			released = 100
		}
		s.Rollout = &tenancyv1alpha1.ClassRollout{Revision: revision, Strategy: strategy, ReleasedPercent: min(released, 100), WaveStarted: &metav1.Time{Time: now}}
		s.Revision = revision
	} else if ro := s.Rollout; ro != nil && ro.Strategy != strategy {
		// spec.updates alone changed: the platform changes its mind about the current revision
		// (releases the tenants a NewTenants change left, or the rest of a wave rollout at once).
		// A tenant already at the revision stays there whatever the strategy.
		ro.Strategy, ro.Halted = strategy, ""
		switch strategy {
		case tenancyv1alpha1.ClassUpdateImmediate:
			ro.ReleasedPercent = 100
		case tenancyv1alpha1.ClassUpdateWaves:
			ro.ReleasedPercent, ro.WaveStarted = min(max(ro.ReleasedPercent, percent), 100), &metav1.Time{Time: now}
		case tenancyv1alpha1.ClassUpdateNewTenants:
			ro.ReleasedPercent = 0
		}
	}
	// With MaxClassRevisions kept and each in use, the spec's new revision is not adopted: no
	// tenant is moved off its revision against its strategy. New tenants get the current one.
	s.ObservedGeneration = c.Generation
	revision = s.Revision

	// The tenants, by the revision each converges to. Archived, Purged and suspended tenants
	// converge to no class: they are neither counted nor waited for, and their revision is
	// kept for when they come back.
	used := map[string]bool{revision: true}
	var halted string
	s.Tenants, s.Updated = 0, 0
	waveDone := true
	ro := s.Rollout
	for i := range tenants {
		t := &tenants[i]
		at := ""
		if t.Status.Class != nil && t.Status.Class.Name == c.Name {
			at = t.Status.Class.Revision
		}
		used[at] = true
		if t.Spec.Suspend || t.Spec.State == tenancyv1alpha1.StateArchived || t.Spec.State == tenancyv1alpha1.StatePurged {
			continue
		}
		s.Tenants++
		if at == revision {
			s.Updated++
		}
		if ro == nil || ro.Strategy != tenancyv1alpha1.ClassUpdateWaves || !tenantclass.Released(t.Name, ro.ReleasedPercent) {
			continue
		}
		ready := meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.ReadyCondition) && t.Status.ObservedGeneration == t.Generation
		if at != revision || !ready {
			waveDone = false
		}
		// A released tenant that stalls halts the waves, at the revision or unable to reach it
		// (its class refuses a field it sets).
		if stalled := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.StalledCondition); stalled != nil &&
			stalled.Status == metav1.ConditionTrue && halted == "" {
			halted = fmt.Sprintf("tenant %s, released to revision %s, stalls: %s", t.Name, revision, stalled.Message)
		}
	}
	s.Revisions = slices.DeleteFunc(s.Revisions, func(r tenancyv1alpha1.ClassRevision) bool { return !used[r.Name] })

	after := time.Duration(0)
	if ro != nil && ro.Strategy == tenancyv1alpha1.ClassUpdateWaves && ro.ReleasedPercent < 100 {
		ro.Halted = halted
		if ro.WaveStarted == nil {
			ro.WaveStarted = &metav1.Time{Time: now}
		}
		if halted == "" && waveDone {
			next := ro.WaveStarted.Add(interval)
			if !now.Before(next) {
				ro.ReleasedPercent = min(ro.ReleasedPercent+percent, 100)
				ro.WaveStarted = &metav1.Time{Time: now}
			}
		}
		if ro.ReleasedPercent < 100 {
			after = classRecheck
		}
	}

	switch {
	case full:
		conds.Stalled(tenancyv1alpha1.ReasonClassRevisionsFull, fmt.Sprintf(
			"the class keeps %d revisions, each with tenants at it: its new spec (revision %s) is not adopted until tenants of an earlier one are released (updates: Immediate or Waves); new tenants get revision %s",
			tenancyv1alpha1.MaxClassRevisions, tenantclass.Revision(c.Spec), revision))
	case ro != nil && ro.Halted != "":
		conds.Stalled(tenancyv1alpha1.ReasonClassRolloutHalted, ro.Halted)
		after = classRecheck
	case ro != nil && ro.Strategy == tenancyv1alpha1.ClassUpdateNewTenants:
		conds.Ready(tenancyv1alpha1.ReasonSucceeded, fmt.Sprintf("revision %s applies to tenants that join the class; %d of %d tenants are at it", revision, s.Updated, s.Tenants))
	case s.Updated < s.Tenants:
		conds.Reconciling(tenancyv1alpha1.ReasonClassRollingOut, fmt.Sprintf("revision %s: %d of %d tenants converge to it%s", revision, s.Updated, s.Tenants, released(ro)))
		after = classRecheck
	default:
		conds.Ready(tenancyv1alpha1.ReasonSucceeded, fmt.Sprintf("every tenant of the class (%d) converges to revision %s", s.Tenants, revision))
	}
	return s, after
}

// released says which share of the tenants a wave rollout has released.
func released(ro *tenancyv1alpha1.ClassRollout) string {
	if ro == nil || ro.Strategy != tenancyv1alpha1.ClassUpdateWaves {
		return ""
	}
	return fmt.Sprintf(" (waves: %d%% of the tenants released)", ro.ReleasedPercent)
}
