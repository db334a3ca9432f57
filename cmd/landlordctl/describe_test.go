package main

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// sectionReasons are the reasons of an Events section, in the order shown.
func sectionReasons(out string) []string {
	_, events, ok := strings.Cut(out, "\nEvents:\n")
	if !ok {
		return nil
	}
	var reasons []string
	for _, line := range strings.Split(events, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 {
			reasons = append(reasons, f[1])
		}
	}
	return reasons
}

// kubectlEventReasons are the reasons `kubectl events --for KIND/NAME` lists.
func kubectlEventReasons(t *testing.T, kubeconfig, object string) []string {
	t.Helper()
	out, err := kubectl(t, kubeconfig, "events", "--for", object)
	if err != nil {
		t.Fatalf("kubectl events: %v\n%s", err, out)
	}
	var reasons []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		// LAST SEEN, TYPE, REASON, OBJECT, MESSAGE; LAST SEEN may be "5s (x2 over 10s)".
		if m := regexp.MustCompile(`\s(Normal|Warning)\s+(\S+)\s`).FindStringSubmatch(line); m != nil {
			reasons = append(reasons, m[2])
		}
	}
	return reasons
}

// `describe tenant` shows a tenant in one view, as kubectl describe would: its state, shard,
// domains and access, the version each component runs and the rollout that moved it, its
// database (server, database and login, read from the tenant's status) and the events about it,
// the same kubectl events --for lists. Its credentials are never read: neither the tenant's
// password nor the server's admin password appears in any view of either. The other kinds'
// views name what matters of each.
func TestDescribeShowsATenantInOneViewAndNeverItsCredentials(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	ctx := context.Background()
	cfg := config.Default()
	pg, err := dbtest.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Databases.CredentialsNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := fleet.env.RegisterDatabaseServer(ctx, cfg.Databases.CredentialsNamespace, "pg-described", pg); err != nil {
		t.Fatal(err)
	}

	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "described", Labels: map[string]string{"group": "described"}},
		Spec: tenancyv1alpha1.TenantSpec{Organization: "Described Inc.", Email: "ops@described.example.com",
			Domains:    []tenancyv1alpha1.Domain{"described.example.com"},
			Access:     tenancyv1alpha1.Access{Admins: []tenancyv1alpha1.Subject{{Kind: "User", Name: "alice@described.example.com"}}},
			Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0", FollowRollouts: true}},
			Databases:  tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "app", Server: "pg-described"}}}},
	}
	if err := c.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Patch(ctx, tenant, client.RawPatch("application/merge-patch+json",
			[]byte(`{"metadata":{"annotations":{"tenancy.landlord.dev/confirm-deletion":"described"}}}`)))
		_ = c.Delete(ctx, tenant)
	})
	waitReady(t, c, "described", "web=1.0.0")
	createRollout(t, c, "described-web-1.1.0", "web", "1.1.0", "described")
	waitReady(t, c, "described", "web=1.1.0")

	ns := cfg.NamespaceName("described")
	creds := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenancyv1alpha1.DatabaseSecretName("app")}, creds); err != nil {
		t.Fatal(err)
	}
	password := string(creds.Data[tenancyv1alpha1.CredentialsKeyPassword])
	login, database := string(creds.Data[tenancyv1alpha1.CredentialsKeyUsername]), string(creds.Data[tenancyv1alpha1.CredentialsKeyDatabase])
	if len(password) < 16 || login == "" || database == "" {
		t.Fatal("the credentials Secret lacks a password, a login or a database")
	}
	secrets := map[string]string{"the tenant's password": password, "the server's admin password": pg.Server.AdminPassword}

	describe := func(t *testing.T, args ...string) string {
		t.Helper()
		out, stderr, err := run(t, binaryName, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		for what, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Errorf("%v shows %s:\n%s", args, what, out)
			}
		}
		return out
	}

	t.Run("the tenant's view has everything a person acts on", func(t *testing.T) {
		out := describe(t, "describe", "tenant", "described")
		t.Logf("\n%s", out)
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^Name:\s+described$`),
			regexp.MustCompile(`(?m)^Labels:\s+group=described$`),
			regexp.MustCompile(`(?m)^Organization:\s+Described Inc\.$`),
			regexp.MustCompile(`(?m)^State:\s+Active$`),
			regexp.MustCompile(`(?m)^Suspended:\s+false$`),
			regexp.MustCompile(`(?m)^Namespace:\s+` + regexp.QuoteMeta(ns) + `$`),
			regexp.MustCompile(`(?m)^Shard:\s+<default>$`),
			regexp.MustCompile(`(?m)^Status:\s+Current: Resource is Ready$`),
			regexp.MustCompile(`(?m)^Domains:\s+described\.example\.com$`),
			regexp.MustCompile(`(?m)^Admins:\s+User alice@described\.example\.com$`),
			regexp.MustCompile(`(?m)^Conditions:\n  TYPE\s+STATUS\s+REASON\s+AGE\s+MESSAGE\n  Ready\s+True\s+Succeeded\s`),
			regexp.MustCompile(`(?m)^Components:\n  NAME\s+WANTED\s+RUNNING\s+ROLLOUT\s+READY\s+MESSAGE\n  web\s+1\.0\.0 \(follows rollouts\)\s+1\.1\.0\s+described-web-1\.1\.0\s+true\s*$`),
			regexp.MustCompile(`(?m)^Databases:\n  NAME\s+ENGINE\s+SERVER\s+DATABASE\s+LOGIN\s+SECRET\n  app\s+postgres\s+pg-described\s+` +
				regexp.QuoteMeta(database) + `\s+` + regexp.QuoteMeta(login) + `\s+db-app$`),
			regexp.MustCompile(`(?m)^Events:\n  TYPE\s+REASON\s+AGE\s+FROM\s+MESSAGE\n`),
			// Once each, with an age and no "(x2 over …)": a reconcile working from a tenant older
			// than its own last status write would provision "again" or apply the version "again".
			regexp.MustCompile(`(?m)^  Normal\s+Provisioned\s+[0-9][0-9a-z]*\s+landlord\s+.*\sDatabaseServer pg-described\b`),
			regexp.MustCompile(`(?m)^  Normal\s+ComponentApplied\s+[0-9][0-9a-z]*\s+landlord\s+component web version 1\.1\.0 applied$`),
		} {
			if !want.MatchString(out) {
				t.Errorf("the view lacks %s:\n%s", want, out)
			}
		}
	})

	t.Run("the tenant's events are those kubectl events --for lists", func(t *testing.T) {
		// Events are written a moment after what they tell: both are read until they agree.
		NewWithT(t).Eventually(func(g Gomega) {
			ours := sectionReasons(describe(t, "describe", "tnt/described"))
			theirs := kubectlEventReasons(t, kubeconfig, "tenant/described")
			slices.Sort(ours)
			slices.Sort(theirs)
			g.Expect(ours).To(ContainElements("Provisioned", "ComponentApplied"))
			g.Expect(ours).To(Equal(theirs))
		}).WithTimeout(waitLimit).Should(Succeed())
	})

	t.Run("status is the same view with the objects Landlord manages for the tenant", func(t *testing.T) {
		out := describe(t, "status", "described")
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^  app\s+postgres\s+pg-described\s+` + regexp.QuoteMeta(database) + `\s+` + regexp.QuoteMeta(login) + `\s+db-app$`),
			regexp.MustCompile(`(?m)^Objects:\n  KIND\s+NAME\s+COMPONENT\n`),
			regexp.MustCompile(`(?m)^  Secret\s+db-app\s+<none>$`),
			regexp.MustCompile(`(?m)^  Normal\s+Provisioned\s`),
		} {
			if !want.MatchString(out) {
				t.Errorf("status lacks %s:\n%s", want, out)
			}
		}
	})

	createPool(t, c, "described-pool", 0)
	if _, _, err := run(t, binaryName, append(customer("described-pool", "--name", "described-claim", "-n", "default"), "--kubeconfig", kubeconfig)...); err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		claim := &tenancyv1alpha1.TenantClaim{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "described-claim"}, claim)).To(Succeed())
		g.Expect(claim.Status.Reason).To(Equal(tenancyv1alpha1.ReasonNoReadySpare))
	}).WithTimeout(waitLimit).Should(Succeed())
	for _, tc := range []struct {
		name string
		args []string
		want []*regexp.Regexp
	}{
		{"a database server's view says where it is and which Secret holds its login, never what is in it",
			[]string{"describe", "dbs", "pg-described"}, []*regexp.Regexp{
				regexp.MustCompile(`(?m)^Engine:\s+postgres$`),
				regexp.MustCompile(`(?m)^Host:\s+` + regexp.QuoteMeta(pg.Server.Host) + `$`),
				regexp.MustCompile(`(?m)^Admin credentials:\s+Secret pg-described-admin, in the operator's credentials namespace$`),
				regexp.MustCompile(`(?m)^Reachable:\s+true$`),
				regexp.MustCompile(`(?m)^Connection limit:\s+\d+ per tenant login, derived from the server's \d+ connections$`),
				regexp.MustCompile(`(?m)^Tenants:\s+1$`),
				regexp.MustCompile(`(?m)^  Ready\s+True\s`),
			}},
		{"a rollout's view has its waves, with the tenants each moved",
			[]string{"describe", "rollout", "described-web-1.1.0"}, []*regexp.Regexp{
				regexp.MustCompile(`(?m)^Component:\s+web$`),
				regexp.MustCompile(`(?m)^Version:\s+1\.1\.0$`),
				regexp.MustCompile(`(?m)^Selector:\s+group=described$`),
				regexp.MustCompile(`(?m)^Tenants:\s+1 done, 0 pending, 0 failed, 0 blocked, 0 skipped, 0 ahead$`),
				regexp.MustCompile(`(?m)^Waves:\n  WAVE\s+TENANTS\s+STARTED\s+COMPLETED\s+DONE\s+PENDING\s+SKIPPED\s+AHEAD\s+FAILED\n  1\s+described\s+\S+ ago\s+\S+ ago\s+1\s+0\s+0\s+0\s+0$`),
			}},
		{"a pool's view counts its spares",
			[]string{"describe", "pool", "described-pool"}, []*regexp.Regexp{
				regexp.MustCompile(`(?m)^Replicas:\s+0$`),
				regexp.MustCompile(`(?m)^Spares:\s+0 ready, 0 provisioning, 0 suspended$`),
				regexp.MustCompile(`(?m)^Spare labels:\s+pool-test=described-pool$`),
			}},
		{"a claim's view says why it waits",
			[]string{"describe", "claim", "described-claim", "-n", "default"}, []*regexp.Regexp{
				regexp.MustCompile(`(?m)^Namespace:\s+default$`),
				regexp.MustCompile(`(?m)^Pool:\s+described-pool$`),
				regexp.MustCompile(`(?m)^Reason:\s+NoReadySpare$`),
				regexp.MustCompile(`(?m)^Status:\s+InProgress: `),
			}},
		{"a template's view has its manifests",
			[]string{"describe", "ct", "web-1.1.0"}, []*regexp.Regexp{
				regexp.MustCompile(`(?m)^Component:\s+web$`),
				regexp.MustCompile(`(?m)^Manifests:\n  apiVersion: v1\n  kind: ConfigMap\n`),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Eventually(func(g Gomega) {
				out := describe(t, tc.args...)
				for _, want := range tc.want {
					g.Expect(out).To(MatchRegexp(want.String()))
				}
			}).WithTimeout(waitLimit).Should(Succeed())
		})
	}

	t.Run("several objects are described one after the other, and one missing fails the command", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "--kubeconfig", kubeconfig, "describe", "templates", "web-1.0.0", "nobody", "web-1.1.0", "--show-events=false")
		if err == nil || exitCode(err) != exitError || stderr != "template \"nobody\" not found\n" ||
			!regexp.MustCompile(`(?s)^Name:\s+web-1\.0\.0\n.*\n\n\nName:\s+web-1\.1\.0\n`).MatchString(out) || strings.Contains(out, "Events:") {
			t.Errorf("err=%v stderr=%q\n%s", err, stderr, out)
		}
	})
}

// A tenant's view names each component's last migration (where it is, from which version to
// which, the step and Job running or that failed, the backup to restore, the attempts, when it
// started and ended, and why it failed) and the tenant's maintenance windows; a tenant without
// migrations has no Migrations section, and one without windows is moved at any time.
func TestDescribeTenantShowsMigrationsAndMaintenanceWindows(t *testing.T) {
	hourAgo := metav1.NewTime(time.Now().Add(-time.Hour))
	minuteAgo := metav1.NewTime(time.Now().Add(-time.Minute))
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "migrating"},
		Spec: tenancyv1alpha1.TenantSpec{
			Components: []tenancyv1alpha1.Component{{Name: "api", Version: "2.0.0"}, {Name: "web", Version: "1.1.0"}, {Name: "worker", Version: "1.0.0"}},
			MaintenanceWindows: []tenancyv1alpha1.MaintenanceWindow{
				{Days: []tenancyv1alpha1.Weekday{"Saturday", "Sunday"}, Start: "02:00", Duration: metav1.Duration{Duration: 2 * time.Hour}, TimeZone: "Europe/Paris"},
				{Start: "23:30", Duration: metav1.Duration{Duration: 30 * time.Minute}},
			},
		},
		Status: tenancyv1alpha1.TenantStatus{Components: []tenancyv1alpha1.ComponentStatus{
			{Name: "api", Version: "1.0.0", Migration: &tenancyv1alpha1.MigrationStatus{From: "1.0.0", To: "2.0.0",
				Phase: tenancyv1alpha1.MigrationFailed, Step: "2.0.0/pre/schema", Job: "migrate-api-2-0-0-pre-schema-2",
				Backup: "migrating-api-2-0-0", Attempts: 2, StartedAt: &hourAgo, FinishedAt: &minuteAgo,
				Message: "column \"plan\"\nalready exists"}},
			{Name: "web", Version: "1.0.0", Migration: &tenancyv1alpha1.MigrationStatus{To: "1.1.0",
				Phase: tenancyv1alpha1.MigrationBackingUp, Attempts: 1, StartedAt: &minuteAgo, Message: "waiting for TenantBackup migrating-web-1-1-0"}},
			{Name: "worker", Version: "1.0.0", Ready: true},
		}},
	}
	view := func(tenant *tenancyv1alpha1.Tenant) string {
		var out strings.Builder
		d := newDescriber(&out)
		describeTenant(d, tenant, nil)
		if err := d.flush(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	out := view(tenant)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Maintenance windows:\s+Saturday,Sunday 02:00 for 2h0m0s \(Europe/Paris\)\n\s+every day 23:30 for 30m0s \(UTC\)$`),
		regexp.MustCompile(`(?m)^Migrations:\n  COMPONENT\s+PHASE\s+VERSIONS\s+STEP\s+JOB\s+BACKUP\s+ATTEMPTS\s+STARTED\s+FINISHED\s+MESSAGE\n` +
			`  api\s+Failed\s+1\.0\.0 → 2\.0\.0\s+2\.0\.0/pre/schema\s+migrate-api-2-0-0-pre-schema-2\s+migrating-api-2-0-0\s+2\s+60m ago\s+60s ago\s+column "plan" already exists\n` +
			`  web\s+BackingUp\s+<new> → 1\.1\.0\s+<none>\s+<none>\s+<none>\s+1\s+60s ago\s+<none>\s+waiting for TenantBackup migrating-web-1-1-0\n\n`),
	} {
		if !want.MatchString(out) {
			t.Errorf("the view lacks %s:\n%s", want, out)
		}
	}

	tenant.Spec.MaintenanceWindows = nil
	for i := range tenant.Status.Components {
		tenant.Status.Components[i].Migration = nil
	}
	out = view(tenant)
	if !regexp.MustCompile(`(?m)^Maintenance windows:\s+<any time>$`).MatchString(out) || strings.Contains(out, "Migrations:") {
		t.Errorf("a tenant without windows or migrations:\n%s", out)
	}
}
