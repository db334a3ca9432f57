package main

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/rollout"
)

// The views `describe` writes of the kinds other than Tenant (describe_tenant.go).

// describeClaim writes a claim: what was asked of which pool, and the tenant bound to it or why
// it still waits.
func describeClaim(d *describer, c *tenancyv1alpha1.TenantClaim) {
	d.objectMeta(c, true)
	d.field("Pool", c.Spec.Pool)
	d.field("Organization", c.Spec.Organization)
	d.field("Email", c.Spec.Email)
	d.labels("Tenant labels", c.Spec.Labels)
	d.field("Phase", string(c.Status.Phase))
	d.field("Tenant", c.Status.Tenant)
	d.field("Tenant namespace", c.Status.Namespace)
	if c.Status.BoundTime != nil {
		d.fieldf("Bound", "%s (%s ago)", c.Status.BoundTime.UTC().Format(time.RFC3339), age(*c.Status.BoundTime))
	}
	d.field("Reason", c.Status.Reason)
	d.field("Message", c.Status.Message)
	d.verdict(c, "TenantClaim")
	d.conditions(c.Status.Conditions)
	d.eventsSection()
}

// describePool writes a pool: how many spares it keeps, how many it has and in what state, and
// what its spares are made of.
func describePool(d *describer, p *tenancyv1alpha1.TenantPool) {
	d.objectMeta(p, false)
	d.fieldf("Replicas", "%d", p.Spec.Replicas)
	if p.Spec.MaxProvisioning != nil {
		d.fieldf("Max provisioning", "%d", *p.Spec.MaxProvisioning)
	} else {
		d.field("Max provisioning", "<unlimited>")
	}
	d.fieldf("Spares", "%d ready, %d provisioning, %d suspended", p.Status.Ready, p.Status.Provisioning, p.Status.Suspended)
	d.fieldf("Allocated", "%d", p.Status.Allocated)
	d.verdict(p, "TenantPool")
	d.labels("Spare labels", p.Spec.Template.Labels)
	var components []string
	for _, c := range p.Spec.Template.Spec.Components {
		components = append(components, c.Name+"="+c.Version)
	}
	d.values("Spare components", components)
	var databases []string
	for _, db := range p.Spec.Template.Spec.Databases.Postgres {
		databases = append(databases, "postgres "+db.Name+onServer(db.Server))
	}
	for _, db := range p.Spec.Template.Spec.Databases.MySQL {
		databases = append(databases, "mysql "+db.Name+onServer(db.Server))
	}
	d.values("Spare databases", databases)
	d.conditions(p.Status.Conditions)
	d.eventsSection()
}

func onServer(server string) string {
	if server == "" {
		return ""
	}
	return " on " + server
}

// describeRollout writes a rollout: what it moves, to which tenants and how, then its waves and
// the tenants that failed, with why.
func describeRollout(d *describer, r *tenancyv1alpha1.ComponentRollout) {
	d.objectMeta(r, false)
	d.field("Component", r.Spec.Component)
	d.field("Version", r.Spec.Version)
	selector := metav1.FormatLabelSelector(&r.Spec.Selector)
	if selector == "<none>" {
		selector = "<every tenant>"
	}
	d.field("Selector", selector)
	d.fieldf("Rollback", "%t", r.Spec.Rollback)
	d.fieldf("Halted", "%t", r.Spec.Halted)
	s := r.Spec.Strategy
	d.values("Canaries", s.Canaries)
	batch := rollout.DefaultBatchSize
	if s.BatchSize != nil {
		batch = s.BatchSize.String()
	}
	d.field("Batch size", batch)
	pause := time.Duration(0)
	if s.PauseBetweenWaves != nil {
		pause = s.PauseBetweenWaves.Duration
	}
	d.field("Pause between waves", pause.String())
	d.fieldf("Max failures", "%d", s.MaxFailures)
	d.field("Progress deadline", rollout.ProgressDeadline(r).String())
	st := r.Status
	d.fieldf("Tenants", "%d done, %d pending, %d failed, %d blocked, %d skipped, %d ahead", st.Done, st.Pending, st.Failed, st.Blocked, st.Skipped, st.Ahead)
	d.fieldf("Waves", "%d of %d released", st.Released, len(st.Waves))
	d.verdict(r, "ComponentRollout")

	var waves, failures [][]string
	for i, w := range st.Waves {
		wave := fmt.Sprint(i + 1)
		waves = append(waves, []string{wave, someNames(w.Tenants, 5), ago(w.StartedAt), ago(w.CompletedAt),
			fmt.Sprint(w.Done), fmt.Sprint(w.Pending), fmt.Sprint(w.Skipped), fmt.Sprint(w.Ahead), fmt.Sprint(len(w.Failed))})
		for _, f := range w.Failed {
			reason := f.Reason
			if f.OwnCause {
				// Listed, and not counted against maxFailures: it says nothing of the version.
				reason += " (its own cause)"
			}
			failures = append(failures, []string{wave, f.Tenant, reason, f.Message})
		}
	}
	d.section("Waves", []string{"WAVE", "TENANTS", "STARTED", "COMPLETED", "DONE", "PENDING", "SKIPPED", "AHEAD", "FAILED"}, waves)
	if len(failures) > 0 {
		d.section("Failed tenants", []string{"WAVE", "TENANT", "REASON", "MESSAGE"}, failures)
	}
	d.conditions(st.Conditions)
	d.eventsSection()
}

// someNames are the first n names, and how many more there are: a wave can hold hundreds.
func someNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ",")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ","), len(names)-n)
}

// ago is how long ago t was, or <none>.
func ago(t *metav1.Time) string {
	if t == nil {
		return "<none>"
	}
	return age(*t) + " ago"
}

// describeDatabaseServer writes a database server: where it is, how it is reached and with which
// login (the Secret is named, never read), and how many tenants it holds.
func describeDatabaseServer(d *describer, s *tenancyv1alpha1.DatabaseServer) {
	d.objectMeta(s, false)
	d.field("Engine", string(s.Spec.Engine))
	d.field("Host", s.Spec.Host)
	port := fmt.Sprint(s.Spec.Port)
	if s.Spec.Port == 0 {
		port = "<the engine's default>"
	}
	d.field("Port", port)
	d.field("TLS", string(s.Spec.TLS))
	if s.Spec.CABundle != "" {
		d.fieldf("CA bundle", "%d certificates", strings.Count(s.Spec.CABundle, "BEGIN CERTIFICATE"))
	}
	d.fieldf("Admin credentials", "Secret %s, in the operator's credentials namespace", s.Spec.AdminCredentials.Name)
	d.field("Name prefix", s.Spec.NamePrefix)
	if s.Spec.MaxTenants != nil {
		d.fieldf("Max tenants", "%d", *s.Spec.MaxTenants)
	} else {
		d.field("Max tenants", "<unlimited>")
	}
	var limit string
	switch {
	case s.Spec.ConnectionLimit != nil && *s.Spec.ConnectionLimit == 0:
		limit = "<unlimited>"
	case s.Spec.ConnectionLimit != nil:
		limit = fmt.Sprintf("%d per tenant login", *s.Spec.ConnectionLimit)
	case s.Status.ConnectionLimit > 0:
		limit = fmt.Sprintf("%d per tenant login, derived from the server's %d connections", s.Status.ConnectionLimit, s.Status.ConnectionSlots)
	default:
		limit = "<derived once the server is reached>"
	}
	d.field("Connection limit", limit)
	if n := s.Spec.Network; n != nil {
		d.values("Network CIDRs", n.CIDRs)
		if n.NamespaceSelector != nil {
			d.field("Network namespaces", metav1.FormatLabelSelector(n.NamespaceSelector))
		}
		if n.PodSelector != nil {
			d.field("Network pods", metav1.FormatLabelSelector(n.PodSelector))
		}
	}
	d.fieldf("Reachable", "%t", s.Status.Reachable)
	d.field("Server version", s.Status.ServerVersion)
	d.fieldf("Tenants", "%d", s.Status.Tenants)
	d.verdict(s, "DatabaseServer")
	d.conditions(s.Status.Conditions)
	d.eventsSection()
}

// describeTemplate writes a published component template: what it renders, with its values and
// manifests.
func describeTemplate(d *describer, t *tenancyv1alpha1.ComponentTemplate) {
	d.objectMeta(t, false)
	d.field("Component", t.Spec.Component)
	d.field("Version", t.Spec.Version)
	d.field("Image", t.Spec.Image)
	values := ""
	if t.Spec.Values != nil {
		values = string(t.Spec.Values.Raw)
	}
	d.field("Values", values)
	d.fieldf("Values schema", "%t", t.Spec.ValuesSchema != nil)
	var owned []string
	for _, f := range t.Spec.FieldsOwnedByOthers {
		kind := f.Kind
		if f.Group != "" {
			kind += "." + f.Group
		}
		if f.Name != "" {
			kind += " " + f.Name
		}
		owned = append(owned, kind+" "+f.JSONPointer)
	}
	d.values("Fields owned by others", owned)
	fmt.Fprintln(d.w, "\nManifests:")
	for _, line := range strings.Split(strings.TrimRight(t.Spec.Manifests, "\n"), "\n") {
		// Manifests hold tabs of their own, which the table writer would take for columns.
		fmt.Fprintf(d.w, "  %s\n", strings.ReplaceAll(line, "\t", "    "))
	}
	d.eventsSection()
}
