package main

import (
	"fmt"
	"slices"
	"strings"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// tenantObjects are the objects Landlord manages for a tenant, for `status`, or why they could
// not be listed.
type tenantObjects struct {
	objects []managedObject
	err     error
}

// describeTenant writes a tenant in one view: `describe tenant`, and `status`, which adds the
// objects Landlord manages for it (objects, nil for describe). Everything shown is read from the
// Tenant and the events about it: no Secret is read, so no credential can be shown.
func describeTenant(d *describer, t *tenancyv1alpha1.Tenant, objects *tenantObjects) {
	d.objectMeta(t, false)
	if org := t.OrganizationName(); org != "" {
		d.field("Organization", org)
	}
	if email := t.ContactEmail(); email != "" {
		d.field("Email", email)
	}
	state := string(t.Spec.State)
	if state == "" {
		state = string(tenancyv1alpha1.StateActive)
	}
	d.field("State", state)
	d.fieldf("Suspended", "%t", t.Spec.Suspend)
	d.field("Namespace", t.Status.Namespace)
	d.field("Shard", tenantShard(t))
	if t.Spec.Class != "" {
		d.field("Class", t.Spec.Class)
	}
	if t.Spec.NodePool != "" {
		d.field("Node pool", t.Spec.NodePool)
	}
	d.fieldf("Generation", "%d (observed %d)", t.Generation, t.Status.ObservedGeneration)
	d.values("Maintenance windows", maintenanceWindows(t.Spec.MaintenanceWindows))
	d.verdict(t, "Tenant")
	domains := make([]string, 0, len(t.Spec.Domains))
	for _, dom := range t.Spec.Domains {
		domains = append(domains, string(dom))
	}
	d.values("Domains", domains)
	for _, role := range []struct {
		name     string
		subjects []tenancyv1alpha1.Subject
	}{{"Admins", t.Spec.Access.Admins}, {"Operators", t.Spec.Access.Operators}, {"Viewers", t.Spec.Access.Viewers}} {
		if len(role.subjects) > 0 {
			d.values(role.name, subjects(role.subjects))
		}
	}

	d.conditions(t.Status.Conditions)
	d.section("Components", []string{"NAME", "WANTED", "RUNNING", "ROLLOUT", "READY", "MESSAGE"}, componentRows(t))
	if rows := migrationRows(t); len(rows) > 0 {
		d.section("Migrations", []string{"COMPONENT", "PHASE", "VERSIONS", "STEP", "JOB", "BACKUP", "ATTEMPTS", "STARTED", "FINISHED", "MESSAGE"}, rows)
	}
	d.section("Databases", []string{"NAME", "ENGINE", "SERVER", "DATABASE", "LOGIN", "SECRET"}, databaseRows(t))
	if len(t.Status.Volumes) > 0 {
		var rows [][]string
		for _, v := range t.Status.Volumes {
			rows = append(rows, []string{v.Claim, v.Volume})
		}
		d.section("Kept volumes", []string{"CLAIM", "VOLUME"}, rows)
	}
	if objects != nil {
		switch {
		case t.Status.Namespace == "":
			d.note("Objects", "<none: the tenant has no namespace>")
		case objects.err != nil:
			d.note("Objects", fmt.Sprintf("<could not be listed: %v>", objects.err))
		default:
			var rows [][]string
			for _, o := range objects.objects {
				rows = append(rows, []string{o.kind, o.name, orNone(o.component)})
			}
			d.section("Objects", []string{"KIND", "NAME", "COMPONENT"}, rows)
		}
	}
	d.eventsSection()
}

// tenantShard is the shard that reconciles the tenant, and where it is going when its label
// names another.
func tenantShard(t *tenancyv1alpha1.Tenant) string {
	shard := orDefaultShard(t.Status.Shard)
	switch wanted := t.Labels[tenancyv1alpha1.ShardLabel]; {
	case t.Status.HandoverTo != nil:
		return fmt.Sprintf("%s (handing over to %s)", shard, orDefaultShard(*t.Status.HandoverTo))
	case wanted != t.Status.Shard && t.Status.ObservedGeneration > 0:
		return fmt.Sprintf("%s (labeled for %s, not taken over yet)", shard, orDefaultShard(wanted))
	}
	return shard
}

func orDefaultShard(s string) string {
	if s == "" {
		return "<default>"
	}
	return s
}

func subjects(ss []tenancyv1alpha1.Subject) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		name := s.Name
		if s.Namespace != "" {
			name = s.Namespace + "/" + s.Name
		}
		out = append(out, s.Kind+" "+name)
	}
	return out
}

// componentRows are the tenant's components in the spec's order: the version wanted, the version
// it runs (status: a rollout moves a component without writing the spec) and the rollout that
// moved it; then those removed from the spec that the operator has not pruned yet.
func componentRows(t *tenancyv1alpha1.Tenant) [][]string {
	var rows [][]string
	for _, c := range t.Spec.Components {
		running, rollout, ready, msg := "<none>", "<none>", "false", ""
		if i := slices.IndexFunc(t.Status.Components, func(s tenancyv1alpha1.ComponentStatus) bool { return s.Name == c.Name }); i >= 0 {
			s := t.Status.Components[i]
			running, rollout, ready, msg = orNone(s.Version), orNone(s.Rollout), fmt.Sprint(s.Ready), s.Message
		}
		wanted := c.Version
		if c.FollowRollouts {
			wanted += " (follows rollouts)"
		}
		rows = append(rows, []string{c.Name, wanted, running, rollout, ready, msg})
	}
	for _, s := range t.Status.Components {
		if !slices.ContainsFunc(t.Spec.Components, func(c tenancyv1alpha1.Component) bool { return c.Name == s.Name }) {
			rows = append(rows, []string{s.Name, "<removed>", orNone(s.Version), orNone(s.Rollout), fmt.Sprint(s.Ready), s.Message})
		}
	}
	return rows
}

// databaseRows are the tenant's databases: where each is (server, database, login, and the
// Secret of its credentials), then those of the spec not in place yet. The credentials are never
// read: the Secret is named, not opened.
func databaseRows(t *tenancyv1alpha1.Tenant) [][]string {
	var rows [][]string
	placed := map[string]bool{}
	for _, db := range t.Status.Databases {
		placed[string(db.Engine)+"/"+db.Name] = true
		rows = append(rows, []string{db.Name, string(db.Engine), db.Server, db.Database, db.Username, db.SecretName})
	}
	for _, spec := range []struct {
		engine tenancyv1alpha1.DatabaseEngine
		dbs    []tenancyv1alpha1.Database
	}{{tenancyv1alpha1.EnginePostgres, t.Spec.Databases.Postgres}, {tenancyv1alpha1.EngineMySQL, t.Spec.Databases.MySQL}} {
		for _, db := range spec.dbs {
			if placed[string(spec.engine)+"/"+db.Name] {
				continue
			}
			server := db.Server
			if server == "" {
				server = "<to be chosen>"
			}
			rows = append(rows, []string{db.Name, string(spec.engine), server, "<not created yet>", "<none>", "<none>"})
		}
	}
	return rows
}

// maintenanceWindows are the tenant's weekly windows as "Monday,Saturday 02:00 for 2h0m0s
// (Europe/Paris)"; a rollout moves a tenant without any at any time.
func maintenanceWindows(windows []tenancyv1alpha1.MaintenanceWindow) []string {
	if len(windows) == 0 {
		return []string{"<any time>"}
	}
	out := make([]string, 0, len(windows))
	for _, w := range windows {
		days := "every day"
		if len(w.Days) > 0 {
			names := make([]string, len(w.Days))
			for i, day := range w.Days {
				names[i] = string(day)
			}
			days = strings.Join(names, ",")
		}
		zone := w.TimeZone
		if zone == "" {
			zone = "UTC"
		}
		out = append(out, fmt.Sprintf("%s %s for %s (%s)", days, w.Start, w.Duration.Duration, zone))
	}
	return out
}

// migrationRows are the last migration of each component that has one, in the status's order:
// where it is, from which version to which, the step and Job it runs or that failed, the backup
// taken before it (what to restore), how many times it was started, and its message.
func migrationRows(t *tenancyv1alpha1.Tenant) [][]string {
	var rows [][]string
	for _, c := range t.Status.Components {
		m := c.Migration
		if m == nil {
			continue
		}
		from := m.From
		if from == "" {
			from = "<new>"
		}
		rows = append(rows, []string{c.Name, string(m.Phase), from + " → " + m.To, orNone(m.Step), orNone(m.Job), orNone(m.Backup),
			fmt.Sprint(m.Attempts), ago(m.StartedAt), ago(m.FinishedAt), m.Message})
	}
	return rows
}
