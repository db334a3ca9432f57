package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database"
)

func TestAnEmptyFileGivesTheDefaults(t *testing.T) {
	c, err := config.Parse([]byte(""))
	if err != nil {
		t.Fatal(err)
	}
	if c.NamespacePrefix != "tenant-" || c.Controller.MaxConcurrentReconciles != 32 || c.Defaults.PodSecurity != "restricted" {
		t.Errorf("unexpected defaults: %+v", c)
	}
	if c.NamespaceName("acme") != "tenant-acme" {
		t.Errorf("namespace name = %q", c.NamespaceName("acme"))
	}
}

func TestSetValuesOverrideDefaults(t *testing.T) {
	c, err := config.Parse([]byte(`
namespacePrefix: t-
defaults:
  quota: {requests.cpu: "1"}
  podSecurity: baseline
controller: {maxConcurrentReconciles: 16}
client: {qps: 200, burst: 400}
network:
  egressCIDRs: [{cidr: 10.20.0.0/16}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.NamespaceName("acme") != "t-acme" {
		t.Errorf("namespace name = %q", c.NamespaceName("acme"))
	}
	if q := c.Defaults.Quota[corev1.ResourceRequestsCPU]; q.Cmp(resource.MustParse("1")) != 0 || len(c.Defaults.Quota) != 2+len(config.RequestQuotas) {
		t.Errorf("quota = %v", c.Defaults.Quota)
	}
	// A quota of one's own still holds one disruption budget per tenant namespace, and a
	// bounded number of requests for backups and restores.
	if q := c.Defaults.Quota[config.DisruptionBudgetsQuota]; q.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("quota[%s] = %v, want 1", config.DisruptionBudgetsQuota, q)
	}
	for _, key := range config.RequestQuotas {
		if q := c.Defaults.Quota[key]; q.Cmp(resource.MustParse("20")) != 0 {
			t.Errorf("quota[%s] = %v, want 20", key, q)
		}
	}
	if c.Controller.MaxConcurrentReconciles != 16 || c.Client.QPS != 200 || c.Client.Burst != 400 {
		t.Errorf("limits not applied: %+v %+v", c.Controller, c.Client)
	}
	if len(c.Network.EgressCIDRs) != 1 || c.Network.EgressCIDRs[0].CIDR != "10.20.0.0/16" {
		t.Errorf("egress = %+v", c.Network.EgressCIDRs)
	}
}

func TestInvalidFilesNameTheField(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want string
	}{
		"an unknown field":        {"namespacPrefix: x-", `unknown field "namespacPrefix"`},
		"a prefix too long":       {"namespacePrefix: a-very-long-prefix-", "namespacePrefix"},
		"a prefix with capitals":  {"namespacePrefix: Tenant-", "namespacePrefix"},
		"an unknown pod security": {"defaults: {podSecurity: privileged}", "defaults.podSecurity"},
		"a bad egress CIDR":       {"network: {egressCIDRs: [{cidr: 10.0.0.0/33}]}", "network.egressCIDRs[0].cidr"},
		"a bad egress exception":  {"network: {egressCIDRs: [{cidr: 0.0.0.0/0, except: [nope]}]}", "network.egressCIDRs[0].except[0]"},
		"a bad selector":          {"network: {platformNamespaceSelector: {matchExpressions: [{key: a, operator: Near}]}}", "network.platformNamespaceSelector"},
		"a negative concurrency":  {"controller: {maxConcurrentReconciles: -1}", "controller.maxConcurrentReconciles"},
		"a grace bound under the 30 s Kubernetes gives a pod": {"isolation: {maxTerminationGracePeriod: 10s}", "isolation.maxTerminationGracePeriod: 10s is not a whole number of seconds between 30s and 24h0m0s"},
		"a grace bound in fractions of a second":              {"isolation: {maxTerminationGracePeriod: 90.5s}", "isolation.maxTerminationGracePeriod"},
		"a negative urgent burst":                             {"client: {urgent: {burst: -1}}", "client.urgent"},
		"yielding below -1":                                   {"client: {yield: {inFlight: -2}}", "client.yield.inFlight"},
		"a yield wait over 10s":                               {"client: {yield: {maxWait: 11s}}", "client.yield.maxWait"},
		"a negative yield wait":                               {"client: {yield: {maxWait: -1s}}", "client.yield.maxWait"},
		"YAML that is not a mapping":                          {"- a", "parsing operator config"},
		"an unknown store backend":                            {"secrets: {store: {backend: vault}}", "secrets.store.backend"},
		"a gcs store without bucket":                          {"secrets: {store: {backend: gcs, gcs: {kmsKey: projects/p/locations/l/keyRings/r/cryptoKeys/k}}}", "secrets.store.gcs.bucket"},
		"a gcs store with a bad key":                          {"secrets: {store: {backend: gcs, gcs: {bucket: b, kmsKey: my-key}}}", "secrets.store.gcs.kmsKey"},
		"a bad template namespace":                            {"secrets: {templateNamespace: Templates}", "secrets.templateNamespace"},
		// The url backend names the field and the part of the URL at fault.
		"a url store without objects":                {"secrets: {store: {backend: url, url: {key: 'awskms://alias/landlord'}}}", "secrets.store.url.objects: is required"},
		"a url store without key":                    {"secrets: {store: {backend: url, url: {objects: 's3://b'}}}", "secrets.store.url.key: is required"},
		"a url store of an unknown cloud":            {"secrets: {store: {backend: url, url: {objects: 'http://b', key: 'awskms://k'}}}", `secrets.store.url.objects: the scheme "http"`},
		"a url store whose objects name no bucket":   {"secrets: {store: {backend: url, url: {objects: 's3://?region=eu-west-1', key: 'awskms://k'}}}", "secrets.store.url.objects: the bucket (the URL's host) is missing"},
		"a url store with a folder as a path":        {"secrets: {store: {backend: url, url: {objects: 's3://b/prod', key: 'awskms://k'}}}", "secrets.store.url.objects: the path \"/prod\" is not allowed: name a folder in the bucket with ?prefix=prod/"},
		"a url store in a directory with no path":    {"secrets: {store: {backend: url, url: {objects: 'file://', key: 'awskms://k'}}}", "secrets.store.url.objects: the directory (the URL's path) is missing"},
		"a url store in a directory on another host": {"secrets: {store: {backend: url, url: {objects: 'file://nas/secrets', key: 'awskms://k'}}}", `secrets.store.url.objects: the host "nas"`},
		"a url store whose key is held locally":      {"secrets: {store: {backend: url, url: {objects: 's3://b', key: 'base64key://c2VjcmV0'}}}", `secrets.store.url.key: the scheme "base64key" is not one of awskms, azurekeyvault, gcpkms, hashivault`},
		"a Key Vault key without its version":        {"secrets: {store: {backend: url, url: {objects: 'azblob://b', key: 'azurekeyvault://v.vault.azure.net/keys/landlord'}}}", `secrets.store.url.key: the key's version is missing`},
		"a url store whose key names no key":         {"secrets: {store: {backend: url, url: {objects: 's3://b', key: 'awskms://'}}}", "secrets.store.url.key: the key (the URL's host and path) is missing"},
		"a sync interval under 1s":                   {"secrets: {syncInterval: 10ms}", "secrets.syncInterval"},
		"a bad credentials namespace":                {"databases: {credentialsNamespace: Landlord}", "databases.credentialsNamespace"},
		"a database timeout under 1s":                {"databases: {timeout: 1ms}", "databases.timeout"},
		"an unknown database naming":                 {"databases: {naming: hashed}", "databases.naming"},
		"a pod security version typo":                {"defaults: {podSecurityVersion: '137'}", "defaults.podSecurityVersion"},
		"a wildcard base domain":                     {"isolation: {baseDomain: '*.example.com'}", "isolation.baseDomain"},
		"a base domain with capitals":                {"isolation: {baseDomain: Example.com}", "isolation.baseDomain"},
		"a base domain too long":                     {"isolation: {baseDomain: " + strings.Repeat("a.", 110) + "com}", "isolation.baseDomain"},
		// The default allowlist of Ingress classes holds IngressClass names only, each once.
		"an ingress class with capitals": {"isolation: {ingressClasses: [Nginx]}", "isolation.ingressClasses[0]"},
		"an ingress class listed twice":  {"isolation: {ingressClasses: [nginx, nginx]}", "isolation.ingressClasses[1]"},
		"too many ingress classes":       {"isolation: {ingressClasses: [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q]}", "isolation.ingressClasses"},
		// Backups are never kept in clear, run from an image that can, and never hand their
		// Secrets' passwords to a namespace a tenant can read.
		"a backup key without a store":                         {"backups: {key: 'awskms://k'}", "backups.objects is required"},
		"a backup store without a key":                         {"backups: {objects: 's3://b', image: i}", "backups.key: is required"},
		"a backup store without an image":                      {"backups: {objects: 's3://b', key: 'awskms://k'}", "backups.image is required"},
		"backup Jobs in a tenant namespace":                    {"backups: {objects: 's3://b', key: 'awskms://k', image: i, namespace: tenant-acme}", "backups.namespace"},
		"backup Jobs in the template namespace":                {"backups: {objects: 's3://b', key: 'awskms://k', image: i, namespace: landlord-templates}", "backups.namespace"},
		"usage sampled more than once a minute":                {"usage: {interval: 30s}", "usage.interval: 30s is shorter than 1m0s"},
		"a dump limit of zero":                                 {"backups: {objects: 's3://b', key: 'awskms://k', image: i, maxDumpSize: '0'}", "backups.maxDumpSize"},
		"a backup timeout under a minute":                      {"backups: {objects: 's3://b', key: 'awskms://k', image: i, timeout: 30s}", "backups.timeout"},
		"a backup Secret that is no name":                      {"backups: {objects: 's3://b', key: 'awskms://k', image: i, envFromSecrets: [Creds]}", "backups.envFromSecrets[0]"},
		"exports at purge among the backups":                   {"backups: {objects: 's3://b?prefix=t/', key: 'awskms://k', image: i, exportAtPurge: 's3://b?prefix=t/exports/'}", "backups.exportAtPurge"},
		"exports at purge to no bucket":                        {"backups: {objects: 's3://b', key: 'awskms://k', image: i, exportAtPurge: 'ftp://x'}", "backups.exportAtPurge"},
		"self-service keeping fewer backups than a day allows": {"backups: {objects: 's3://b', key: 'awskms://k', image: i, selfService: {enabled: true, backupsPerDay: 5, keep: 2}}", "backups.selfService.keep"},
		"self-service with a negative restore limit":           {"backups: {objects: 's3://b', key: 'awskms://k', image: i, selfService: {restoresPerDay: -1}}", "backups.selfService.restoresPerDay"},
		// A purge destroys a tenant's key where the keys are: never among the backups.
		"tenants' keys among the backups": {"backups: {objects: 's3://b?prefix=t/', keys: 's3://b?prefix=t/keys/', key: 'awskms://k', image: i}", "backups.keys"},
		// A Job holds the backup store's place and a tenant's data key: never the secret store's.
		"backups in the secret store's bucket":        {"secrets: {store: {backend: url, url: {objects: 's3://s?prefix=records/', key: 'awskms://s'}}}\nbackups: {objects: 's3://s?prefix=records/backups/', key: 'awskms://k', image: i}", "overlaps the secret store's bucket"},
		"backups under the secret store's key":        {"secrets: {store: {backend: url, url: {objects: 's3://s', key: 'awskms://s'}}}\nbackups: {objects: 's3://b', key: 'awskms://s', image: i}", "backups.key is the secret store's key-encryption key"},
		"backups beside the file secret store":        {"secrets: {store: {backend: file, file: {dir: /var/lib/landlord}}}\nbackups: {objects: 'file:///var/lib/landlord/backups', key: 'awskms://k', image: i}", "overlaps the secret store's bucket"},
		"tenants' keys among the backups, by a slash": {"backups: {objects: 's3://b?prefix=t/', keys: 's3://b/?prefix=t/keys/', key: 'awskms://k', image: i}", "backups.keys"},
		"tenants' keys in the backups' directory":     {"backups: {objects: 'file:///d', keys: 'file:///d/keys', key: 'awskms://k', image: i}", "backups.keys"},
		"backups kept for a negative time":            {"backups: {objects: 's3://b', key: 'awskms://k', image: i, keepAfterPurge: -1h}", "backups.keepAfterPurge"},
	}
	for name, tc := range cases {
		t.Run(name+" is rejected", func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestEveryCloudsSecretStoreIsNamedByURL(t *testing.T) {
	cases := map[string]struct{ objects, key string }{
		"Amazon S3 with AWS KMS":                        {"s3://landlord-secrets?region=eu-west-1&prefix=prod/", "awskms://alias/landlord?region=eu-west-1"},
		"an S3-compatible server with a key by its ARN": {"s3://landlord-secrets?endpoint=https://minio.internal:9000&use_path_style=true&region=us-east-1", "awskms:///arn:aws:kms:eu-west-1:111122223333:key/0b9ee0d5?region=eu-west-1"},
		"Azure Blob Storage with Key Vault":             {"azblob://landlord-secrets", "azurekeyvault://landlord.vault.azure.net/keys/landlord/6a2f4d1c9e8b4b7f"},
		"Cloud Storage with Cloud KMS":                  {"gs://landlord-secrets?prefix=prod/", "gcpkms://projects/p/locations/global/keyRings/landlord/cryptoKeys/secrets"},
		"a directory with Vault's transit engine":       {"file:///var/lib/landlord/secrets", "hashivault://landlord"},
	}
	for name, tc := range cases {
		t.Run(name+" is accepted", func(t *testing.T) {
			doc := fmt.Sprintf("secrets: {store: {backend: url, url: {objects: '%s', key: '%s'}}}", tc.objects, tc.key)
			c, err := config.Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Secrets.Store.URL; got.Objects != tc.objects || got.Key != tc.key {
				t.Errorf("secrets.store.url = %+v", got)
			}
		})
	}
}

func TestCredentialsInAStoreURLAreRefusedWithoutBeingPrinted(t *testing.T) {
	for field, doc := range map[string]string{
		"secrets.store.url.objects": "secrets: {store: {backend: url, url: {objects: 's3://AKIAEXAMPLE:hunter2@b', key: 'awskms://k'}}}",
		"secrets.store.url.key":     "secrets: {store: {backend: url, url: {objects: 's3://b', key: 'hashivault://root:hunter2@landlord'}}}",
	} {
		t.Run("credentials in "+field+" are refused and not repeated", func(t *testing.T) {
			_, err := config.Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), field+": credentials") {
				t.Fatalf("error = %v, want it to refuse credentials in %s", err, field)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error repeats the password: %v", err)
			}
		})
	}
}

func TestTheBaseDomainGivesEveryTenantADefaultDomain(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want string
	}{
		"without a base domain, no default domain":       {"", ""},
		"with a base domain, the tenant's name under it": {"isolation: {baseDomain: tenants.example.com}", "acme.tenants.example.com"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.DefaultDomain("acme"); got != tc.want {
				t.Errorf("default domain = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPodSecurityVersionsArePinnable(t *testing.T) {
	for _, v := range []string{"latest", "v1.36", "v1.37"} {
		t.Run(v+" is accepted", func(t *testing.T) {
			c, err := config.Parse([]byte("defaults: {podSecurityVersion: " + v + "}"))
			if err != nil {
				t.Fatal(err)
			}
			if c.Defaults.PodSecurityVersion != v {
				t.Errorf("podSecurityVersion = %q", c.Defaults.PodSecurityVersion)
			}
		})
	}
}

func TestTheShippedConfigFilesLoad(t *testing.T) {
	for _, name := range []string{"landlord.yaml", "landlord-local.yaml"} {
		t.Run(name+" loads", func(t *testing.T) {
			path := filepath.Join("..", "..", "config", "manager", name)
			if _, err := os.Stat(path); err != nil {
				t.Fatal(err)
			}
			if _, err := config.Load(path); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAMissingFileIsAnError(t *testing.T) {
	if _, err := config.Load(filepath.Join(t.TempDir(), "nope.yaml")); err == nil {
		t.Fatal("expected an error")
	}
}

func TestCommandLineOverridesTakePrecedence(t *testing.T) {
	base := config.Default()
	cases := map[string]struct {
		overrides         config.Overrides
		qps               float32
		burst, concurrent int
	}{
		"no override keeps the configuration":          {config.Overrides{}, base.Client.QPS, base.Client.Burst, base.Controller.MaxConcurrentReconciles},
		"each set override replaces its setting":       {config.Overrides{QPS: 200, Burst: 400, Concurrent: 3}, 200, 400, 3},
		"an override of one setting leaves the others": {config.Overrides{Concurrent: 16}, base.Client.QPS, base.Client.Burst, 16},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.overrides.Apply(base)
			if got.Client.QPS != tc.qps || got.Client.Burst != tc.burst || got.Controller.MaxConcurrentReconciles != tc.concurrent {
				t.Errorf("got qps %v burst %d concurrent %d, want %v %d %d", got.Client.QPS, got.Client.Burst,
					got.Controller.MaxConcurrentReconciles, tc.qps, tc.burst, tc.concurrent)
			}
		})
	}
}

// The operator's default Ingress classes are read as the configuration gives them.
func TestTheDefaultIngressClassesAreConfigurable(t *testing.T) {
	c, err := config.Parse([]byte("isolation: {ingressClasses: [public, internal.example.com]}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Isolation.IngressClasses; len(got) != 2 || got[0] != "public" || got[1] != "internal.example.com" {
		t.Errorf("ingress classes = %v", got)
	}
	if d := config.Default(); len(d.Isolation.IngressClasses) != 0 {
		t.Errorf("by default the class is the tenant's, got %v", d.Isolation.IngressClasses)
	}
}

// The urgent client carries a shared secret's copies and claim binds; its limits are its own,
// so raising or lowering the main client's (or its command-line overrides) leaves them be.
func TestTheUrgentClientHasLimitsOfItsOwn(t *testing.T) {
	cases := map[string]struct {
		doc       string
		overrides config.Overrides
		want      config.ClientLimits
	}{
		"an empty file gives the urgent defaults":              {"", config.Overrides{}, config.ClientLimits{QPS: 1000, Burst: 2000}},
		"set urgent limits replace the defaults":               {"client: {urgent: {qps: 50, burst: 80}}", config.Overrides{}, config.ClientLimits{QPS: 50, Burst: 80}},
		"one set urgent limit leaves the other at its default": {"client: {urgent: {qps: 300}}", config.Overrides{}, config.ClientLimits{QPS: 300, Burst: 2000}},
		"the main client's limits leave the urgent ones":       {"client: {qps: 5, burst: 10}", config.Overrides{}, config.ClientLimits{QPS: 1000, Burst: 2000}},
		"the main client's overrides leave the urgent ones":    {"", config.Overrides{QPS: 5, Burst: 10}, config.ClientLimits{QPS: 1000, Burst: 2000}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.overrides.Apply(c).Client.Urgent; got != tc.want {
				t.Errorf("client.urgent = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Background writes give way to binds by default; a file sets how far, or turns it off.
func TestYieldingDefaultsAndSettings(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want config.Yield
	}{
		"an empty file yields to 4 in flight, a second each": {"", config.Yield{InFlight: 4, MaxWait: metav1.Duration{Duration: time.Second}}},
		"0 is the default, not none in flight":               {"client: {yield: {inFlight: 0, maxWait: 0s}}", config.Yield{InFlight: 4, MaxWait: metav1.Duration{Duration: time.Second}}},
		"set values are kept":                                {"client: {yield: {inFlight: 1, maxWait: 10s}}", config.Yield{InFlight: 1, MaxWait: metav1.Duration{Duration: 10 * time.Second}}},
		"-1 turns it off":                                    {"client: {yield: {inFlight: -1}}", config.Yield{InFlight: -1, MaxWait: metav1.Duration{Duration: time.Second}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Client.Yield; got != tc.want {
				t.Errorf("client.yield = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Database naming is opt-in: without a word in the file, new databases are named after their
// tenant as they always were.
func TestDatabaseNamingIsTenantUnlessOpaqueIsAskedFor(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want database.Naming
	}{
		"an empty file names databases after the tenant": {"", database.NamingTenant},
		"tenant naming is read as given":                 {"databases: {naming: tenant}", database.NamingTenant},
		"opaque naming is read as given":                 {"databases: {naming: opaque}", database.NamingOpaque},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if c.Databases.Naming != tc.want {
				t.Errorf("databases.naming = %q, want %q", c.Databases.Naming, tc.want)
			}
		})
	}
}

// Tenants' keys kept apart from the backups, in another bucket or beside them under a prefix of
// their own, are accepted.
func TestTenantsKeysKeptApartFromTheBackupsAreAccepted(t *testing.T) {
	for name, keys := range map[string]string{
		"another bucket":                      "s3://landlord-backup-keys?region=eu-west-1",
		"another prefix of the same bucket":   "s3://landlord-backups?prefix=keys/",
		"a directory beside the backups' one": "file:///var/lib/landlord/keys",
	} {
		t.Run(name, func(t *testing.T) {
			objects := "s3://landlord-backups?prefix=backups/"
			if strings.HasPrefix(keys, "file://") {
				objects = "file:///var/lib/landlord/backups"
			}
			doc := fmt.Sprintf("backups: {objects: '%s', keys: '%s', key: 'awskms://k', image: i}", objects, keys)
			if _, err := config.Parse([]byte(doc)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
