package migrations_test

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/tenant/migrations"
)

func template(component, version string, m *tenancyv1alpha1.Migrations) tenancyv1alpha1.ComponentTemplate {
	return tenancyv1alpha1.ComponentTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: component + "-" + version},
		Spec:       tenancyv1alpha1.ComponentTemplateSpec{Component: component, Version: version, Image: "example.com/" + component, Migrations: m},
	}
}

func pre(names ...string) *tenancyv1alpha1.Migrations {
	m := &tenancyv1alpha1.Migrations{}
	for _, n := range names {
		m.Pre = append(m.Pre, tenancyv1alpha1.MigrationJob{Name: n, Databases: []string{"app"}})
	}
	return m
}

func TestAPathRunsTheMigrationsOfEveryVersionAfterTheOneRunningInOrder(t *testing.T) {
	anyVersion := pre("all")
	anyVersion.FromAnyVersion = true
	fenced := pre("fenced")
	fenced.FenceWriters = true
	optional := pre("optional")
	optional.Backup = tenancyv1alpha1.MigrationBackupOptional
	post := &tenancyv1alpha1.Migrations{Post: []tenancyv1alpha1.MigrationJob{{Name: "contract", Databases: []string{"audit"}}}, Backup: tenancyv1alpha1.MigrationBackupOff}
	templates := []tenancyv1alpha1.ComponentTemplate{
		template("web", "1.0", pre("init")),
		template("web", "1.10", pre("ten")),
		template("web", "1.2", pre("two")),
		template("web", "1.1", pre("one")),
		template("web", "1.3", nil),
		template("api", "1.1", pre("other-component")),
		template("web", "2.0", anyVersion),
		template("web", "2.1", fenced),
		template("web", "3.0", optional),
		template("web", "3.1", post),
	}
	for _, tc := range []struct {
		name, from, to string
		steps          []string
		backup         tenancyv1alpha1.MigrationBackup
		fence          bool
		databases      []string
	}{
		{name: "one version up runs that version's migrations", from: "1.0", to: "1.1", steps: []string{"1.1/pre/one"}, backup: tenancyv1alpha1.MigrationBackupRequired, databases: []string{"app"}},
		{name: "skipping versions runs each one's in version order, not by name", from: "1.0", to: "1.10",
			steps: []string{"1.1/pre/one", "1.2/pre/two", "1.10/pre/ten"}, backup: tenancyv1alpha1.MigrationBackupRequired, databases: []string{"app"}},
		{name: "a version without migrations adds nothing", from: "1.2", to: "1.3"},
		{name: "a move down runs nothing", from: "1.2", to: "1.1"},
		{name: "staying on a version runs nothing", from: "1.1", to: "1.1"},
		{name: "a version migrating from any older one starts the path", from: "1.0", to: "2.1",
			steps: []string{"2.0/pre/all", "2.1/pre/fenced"}, backup: tenancyv1alpha1.MigrationBackupRequired, fence: true, databases: []string{"app"}},
		{name: "a new tenant runs every version's up to its own", from: "", to: "1.2",
			steps: []string{"1.0/pre/init", "1.1/pre/one", "1.2/pre/two"}, backup: tenancyv1alpha1.MigrationBackupRequired, databases: []string{"app"}},
		{name: "the strictest backup policy on the path wins", from: "2.1", to: "3.1",
			steps: []string{"3.0/pre/optional", "3.1/post/contract"}, backup: tenancyv1alpha1.MigrationBackupOptional, databases: []string{"app", "audit"}},
		{name: "a path of versions that turn backups off takes none", from: "3.0", to: "3.1",
			steps: []string{"3.1/post/contract"}, backup: tenancyv1alpha1.MigrationBackupOff, databases: []string{"audit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := migrations.PathOf(templates, "web", tc.from, tc.to)
			var got []string
			for _, s := range p.Steps() {
				got = append(got, s.Name())
			}
			if !slices.Equal(got, tc.steps) {
				t.Fatalf("steps = %v, want %v", got, tc.steps)
			}
			if p.Empty() != (len(tc.steps) == 0) {
				t.Fatalf("Empty() = %v with steps %v", p.Empty(), got)
			}
			if len(tc.steps) == 0 {
				return
			}
			if p.Backup != tc.backup || p.FenceWriters != tc.fence || !slices.Equal(p.Databases, tc.databases) {
				t.Fatalf("backup %q fence %v databases %v, want %q %v %v", p.Backup, p.FenceWriters, p.Databases, tc.backup, tc.fence, tc.databases)
			}
		})
	}
}

func TestAMigrationJobReachesOnlyTheTenantsOwnCredentialsAndCannotEscalate(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "u1"}}
	step := migrations.Step{Version: "1.1", Stage: migrations.Pre, Image: "example.com/web:1.1", Job: tenancyv1alpha1.MigrationJob{
		Name: "add-column", Databases: []string{"app", "audit-log"}, Args: []string{"migrate"}, Retries: 2,
	}}
	id := migrations.ID("u1", "web", "1.0", "1.1")
	name := migrations.JobName("a-component-name-that-is-forty-characters", id, 12, 3)
	if len(name) > 63 {
		t.Fatalf("Job name %q is %d characters: its pods' job-name label allows 63", name, len(name))
	}
	job := migrations.Job(tenant, "tenant-acme", "web", id, name, "3", step, []string{"pg-1", "pg-2"})
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "example.com/web:1.1" {
		t.Errorf("image = %q, want the template's image at the version", c.Image)
	}
	for _, e := range c.Env {
		if e.Value != "" {
			t.Errorf("variable %s carries a value: credentials go by reference only", e.Name)
		}
		if ref := e.ValueFrom.SecretKeyRef; ref == nil || (ref.Name != "db-app" && ref.Name != "db-audit-log") {
			t.Errorf("variable %s reads %v, not one of the tenant's credentials Secrets", e.Name, e.ValueFrom)
		}
	}
	names := map[string]bool{}
	for _, e := range c.Env {
		names[e.Name] = true
	}
	for _, want := range []string{"DB_APP_URL", "DB_APP_PASSWORD", "DB_AUDIT_LOG_HOST", "DB_AUDIT_LOG_USERNAME"} {
		if !names[want] {
			t.Errorf("no variable %s among %v", want, names)
		}
	}
	if names["DATABASE_URL"] {
		t.Error("DATABASE_URL is set for a migration of two databases: which one would it be?")
	}
	if job.Namespace != "tenant-acme" || !metav1.IsControlledBy(job, tenant) || job.Labels[tenancyv1alpha1.ComponentLabel] != "web" {
		t.Errorf("the Job is not the tenant's component object (namespace %s, owners %v, labels %v): tenant users could change it", job.Namespace, job.OwnerReferences, job.Labels)
	}
	if got := job.Annotations[indexes.DatabaseServersAnnotation]; got != "pg-1,pg-2" {
		t.Errorf("servers annotation %q: the Job would not count against its servers' limits", got)
	}
	if *job.Spec.BackoffLimit != 2 || *job.Spec.ActiveDeadlineSeconds != int64(migrations.DefaultTimeout.Seconds()) {
		t.Errorf("backoffLimit %d, activeDeadlineSeconds %d", *job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds)
	}
	if *pod.AutomountServiceAccountToken || *c.SecurityContext.AllowPrivilegeEscalation || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("the migration's pod may use the API or escalate")
	}
}

func TestRedactTakesASecretOutWholeAndWhereAMessageWasCutInsideIt(t *testing.T) {
	const secret = "s3cr3t-passw0rd-xyz"
	for _, tc := range []struct{ name, msg, want string }{
		{"whole", "login as app with s3cr3t-passw0rd-xyz failed", "login as app with [redacted] failed"},
		{"a log tail that starts inside it", "passw0rd-xyz@db:5432 refused", "[redacted]@db:5432 refused"},
		{"a message that ends inside it", "url postgres://app:s3cr3t-pa", "url postgres://app:[redacted]"},
		{"a short piece at an end is a word, not the secret", "xyz is fine", "xyz is fine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := migrations.Redact(tc.msg, secret); got != tc.want {
				t.Fatalf("Redact(%q) = %q, want %q", tc.msg, got, tc.want)
			}
		})
	}
}
