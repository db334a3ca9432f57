package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

// Stage says when a migration runs: before the version's pods (pre) or once they are Ready
// (post).
type Stage string

const (
	Pre  Stage = "pre"
	Post Stage = "post"
)

// Step is one migration of a path: the version that declares it, its stage and its Job.
type Step struct {
	Version string
	Stage   Stage
	Job     tenancyv1alpha1.MigrationJob
	// Image is the template's image, run when the migration names none.
	Image string
}

// Name is how the status names the step: <version>/<pre|post>/<name>.
func (s Step) Name() string { return s.Version + "/" + string(s.Stage) + "/" + s.Job.Name }

// Path is what a move of a component from a version to another runs: the migrations of every
// version after from up to to, in version order (all up to to for a new tenant, whose from is
// empty), starting at the last of them that migrates from any older version.
type Path struct {
	Pre, Post []Step
	// Backup is the strictest backup policy of the versions on the path (Required when one
	// says nothing); FenceWriters whether one of them fences.
	Backup       tenancyv1alpha1.MigrationBackup
	FenceWriters bool
	// Databases are the databases the migrations name, sorted, each once.
	Databases []string
}

// Empty reports whether the move runs no migration: it moves as a version without migrations.
func (p Path) Empty() bool { return len(p.Pre) == 0 && len(p.Post) == 0 }

// Steps are the pre steps, then the post steps.
func (p Path) Steps() []Step { return slices.Concat(p.Pre, p.Post) }

// PathOf is the path of a move from from to to among the component's templates (those of other
// components are ignored). A move down, or to the same version, runs nothing: migrations only go
// forward, and data a newer version migrated stays as it is.
func PathOf(templates []tenancyv1alpha1.ComponentTemplate, component, from, to string) Path {
	if from != "" && rollout.CompareVersions(to, from) <= 0 {
		return Path{}
	}
	var on []*tenancyv1alpha1.ComponentTemplate
	for i := range templates {
		tmpl := &templates[i]
		v := tmpl.Spec.Version
		if tmpl.Spec.Component != component || tmpl.Spec.Migrations == nil || !tmpl.DeletionTimestamp.IsZero() {
			continue
		}
		if (from == "" || rollout.CompareVersions(v, from) > 0) && rollout.CompareVersions(v, to) <= 0 {
			on = append(on, tmpl)
		}
	}
	slices.SortFunc(on, func(a, b *tenancyv1alpha1.ComponentTemplate) int {
		return rollout.CompareVersions(a.Spec.Version, b.Spec.Version)
	})
	for i := len(on) - 1; i >= 0; i-- {
		if on[i].Spec.Migrations.FromAnyVersion {
			on = on[i:]
			break
		}
	}
	p := Path{Backup: tenancyv1alpha1.MigrationBackupOff}
	for _, tmpl := range on {
		m := tmpl.Spec.Migrations
		for _, j := range m.Pre {
			p.Pre = append(p.Pre, Step{Version: tmpl.Spec.Version, Stage: Pre, Job: j, Image: imageOf(tmpl)})
		}
		for _, j := range m.Post {
			p.Post = append(p.Post, Step{Version: tmpl.Spec.Version, Stage: Post, Job: j, Image: imageOf(tmpl)})
		}
		if len(m.Pre)+len(m.Post) == 0 {
			continue
		}
		p.FenceWriters = p.FenceWriters || m.FenceWriters
		p.Backup = stricter(p.Backup, m.Backup)
	}
	for _, s := range p.Steps() {
		p.Databases = append(p.Databases, s.Job.Databases...)
	}
	slices.Sort(p.Databases)
	p.Databases = slices.Compact(p.Databases)
	return p
}

// imageOf is the image a template's version runs: Image:Version.
func imageOf(tmpl *tenancyv1alpha1.ComponentTemplate) string {
	if tmpl.Spec.Image == "" {
		return ""
	}
	return tmpl.Spec.Image + ":" + tmpl.Spec.Version
}

// stricter is the stricter of two backup policies; an unset one is Required.
func stricter(a, b tenancyv1alpha1.MigrationBackup) tenancyv1alpha1.MigrationBackup {
	rank := map[tenancyv1alpha1.MigrationBackup]int{tenancyv1alpha1.MigrationBackupOff: 0, tenancyv1alpha1.MigrationBackupOptional: 1, tenancyv1alpha1.MigrationBackupRequired: 2, "": 2}
	if rank[b] > rank[a] {
		if b == "" {
			return tenancyv1alpha1.MigrationBackupRequired
		}
		return b
	}
	return a
}

// ID names one move of a tenant's component from a version to another: its Jobs and backups
// carry it, so a reconcile that lost its status write finds what it made, and those of another
// move are told apart.
func ID(tenantUID, component, from, to string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{tenantUID, component, from, to}, "\x00")))
	return hex.EncodeToString(sum[:])[:10]
}

// JobName is the name of the Job of a path's step i in an attempt: within the 63 characters a
// Job's name may have (its pods' job-name label), whatever the component's name.
func JobName(component, id string, attempt int32, i int) string {
	c := component
	if len(c) > 30 {
		c = strings.TrimRight(c[:30], "-")
	}
	return fmt.Sprintf("migrate-%s-%s-%d-%d", c, id, attempt, i)
}

// BackupName is the name of the TenantBackup taken before an attempt of a move.
func BackupName(tenant, id string, attempt int32) string {
	return fmt.Sprintf("%s-migrate-%s-%d", tenant, id, attempt)
}
