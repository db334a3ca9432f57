package upgrade_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

var (
	tenantsGVR  = schema.GroupVersionResource{Group: "tenancy.landlord.dev", Version: "v1alpha1", Resource: "tenants"}
	poolsGVR    = schema.GroupVersionResource{Group: "tenancy.landlord.dev", Version: "v1alpha1", Resource: "tenantpools"}
	claimsGVR   = schema.GroupVersionResource{Group: "tenancy.landlord.dev", Version: "v1alpha1", Resource: "tenantclaims"}
	serversGVR  = schema.GroupVersionResource{Group: "tenancy.landlord.dev", Version: "v1alpha1", Resource: "databaseservers"}
	landlordAll = []schema.GroupVersionResource{tenantsGVR, poolsGVR, claimsGVR, serversGVR}
)

// fleet is written in the previous release's API, as its users wrote it: every feature a
// running fleet uses. The tenant suspended, the Frozen and the Archived one are set so once
// Ready; globex is moved to web 1.1.0 as the previous release's rollout did, by its spec.
const fleet = `apiVersion: tenancy.landlord.dev/v1alpha1
kind: Tenant
metadata: {name: acme, labels: {plan: premium}}
spec:
  organization: Acme
  email: ops@acme.example
  access:
    admins: [{kind: User, name: alice@acme.example}]
  databases:
    postgres: [{name: app}]
    mysql: [{name: legacy}]
  components: [{name: web, version: 1.0.0, values: {replicas: 1}}]
---
apiVersion: tenancy.landlord.dev/v1alpha1
kind: Tenant
metadata: {name: globex}
spec:
  organization: Globex
  access:
    admins: [{kind: User, name: hank@globex.example}]
  databases:
    postgres: [{name: app}]
  components: [{name: web, version: 1.0.0, values: {replicas: 1}}]
---
apiVersion: tenancy.landlord.dev/v1alpha1
kind: Tenant
metadata: {name: umbrella}
spec:
  organization: Umbrella
  databases:
    mysql: [{name: app}]
  components: [{name: web, version: 1.0.0, values: {replicas: 1}}]
---
apiVersion: tenancy.landlord.dev/v1alpha1
kind: Tenant
metadata: {name: hooli}
spec:
  organization: Hooli
  databases:
    postgres: [{name: app}]
---
apiVersion: tenancy.landlord.dev/v1alpha1
kind: Tenant
metadata: {name: stark}
spec:
  organization: Stark
  databases:
    postgres: [{name: app}]
---
apiVersion: tenancy.landlord.dev/v1alpha1
kind: TenantPool
metadata: {name: standard}
spec:
  replicas: 2
  maxProvisioning: 2
  template:
    labels: {plan: standard}
    spec:
      quota: {cpu: "4", memory: 8Gi}
      databases:
        postgres: [{name: app}]
---
apiVersion: tenancy.landlord.dev/v1alpha1
kind: TenantClaim
metadata: {name: initrode-signup, namespace: default}
spec:
  pool: standard
  organization: Initrode
  email: it@initrode.example
---
apiVersion: v1
kind: Secret
metadata:
  name: brand
  namespace: landlord-templates
  labels: {tenancy.landlord.dev/shared: "true"}
stringData: {color: blue}
`

// createFleet registers the database servers, publishes the web component's two versions from
// the release's own sample, and creates the fleet; it waits until every object is Ready and then
// freezes umbrella, archives hooli, suspends stark and moves globex to web 1.1.0. It returns
// every database's credentials, read while every tenant was Active.
func (c *cluster) createFleet(t *testing.T, r release) map[string]credential {
	t.Helper()
	for name, inst := range c.servers {
		c.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: %[1]s-admin, namespace: landlord-system}
stringData: {username: %[2]q, password: %[3]q}
---
apiVersion: tenancy.landlord.dev/v1alpha1
kind: DatabaseServer
metadata: {name: %[1]s}
spec:
  engine: %[4]s
  host: %[5]q
  port: %[6]d
  tls: disable
  adminCredentials: {name: %[1]s-admin}
`, name, inst.Server.AdminUser, inst.Server.AdminPassword, inst.Server.Engine, inst.Server.Host, inst.Server.Port))
	}
	template, err := os.ReadFile(filepath.Join(r.tree, "config", "samples", "components", "web-1.0.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.apply(t, string(template))
	c.apply(t, strings.ReplaceAll(string(template), "1.0.0", "1.1.0"))
	// The template namespace is the operator's to create.
	eventually(t, "the template namespace", func() error {
		_, err := c.kubectlIn("", "get", "namespace", "landlord-templates")
		return err
	})
	c.apply(t, fleet)
	c.waitAllReady(t)
	creds := c.credentials(t)
	c.kubectl(t, "patch", "tenant", "umbrella", "--type=merge", "-p", `{"spec":{"state":"Frozen"}}`)
	c.kubectl(t, "patch", "tenant", "hooli", "--type=merge", "-p", `{"spec":{"state":"Archived"}}`)
	c.kubectl(t, "patch", "tenant", "globex", "--type=json", "-p", `[{"op":"replace","path":"/spec/components/0/version","value":"1.1.0"}]`)
	c.waitAllReady(t)
	c.kubectl(t, "patch", "tenant", "stark", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	eventually(t, "stark suspended", func() error {
		out, err := c.kubectlIn("", "get", "tenant", "stark", "-o", `jsonpath={.status.conditions[?(@.type=="Suspended")].status}`)
		if err == nil && out != "True" {
			err = fmt.Errorf("Suspended=%q", out)
		}
		return err
	})
	return creds
}

// waitAllReady waits until every Landlord object is Current as kstatus-aware tools (Flux,
// kubectl wait) judge it, and the claim has its tenant.
func (c *cluster) waitAllReady(t *testing.T) {
	t.Helper()
	eventually(t, "every Landlord object Ready", func() error {
		for _, gvr := range landlordAll {
			list, err := c.dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, obj := range list.Items {
				res, err := status.Compute(&obj)
				if err != nil {
					return err
				}
				if res.Status != status.CurrentStatus {
					return fmt.Errorf("%s %s is %s: %s", gvr.Resource, obj.GetName(), res.Status, res.Message)
				}
			}
		}
		return nil
	})
}

// tenants lists every tenant.
func (c *cluster) tenants(t *testing.T) []unstructured.Unstructured {
	t.Helper()
	list, err := c.dyn.Resource(tenantsGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// credential is one tenant database's login, as its Secret holds it.
type credential struct {
	tenant, server, database, username, password string
	// digest is the whole Secret's data.
	digest string
}

// credentials reads every tenant database's credentials Secret.
func (c *cluster) credentials(t *testing.T) map[string]credential {
	t.Helper()
	out := map[string]credential{}
	for _, tenant := range c.tenants(t) {
		namespace, _, _ := unstructured.NestedString(tenant.Object, "status", "namespace")
		if namespace == "" {
			// An Archived tenant has no namespace, and so no Secret: its logins stay on the
			// servers, and are checked with the password its Secret had while it was Active.
			continue
		}
		dbs, _, _ := unstructured.NestedSlice(tenant.Object, "status", "databases")
		for _, db := range dbs {
			m := db.(map[string]any)
			secret, err := c.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(namespace).
				Get(context.Background(), m["secretName"].(string), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("tenant %s's database %v: %v", tenant.GetName(), m["name"], err)
			}
			data, _, _ := unstructured.NestedStringMap(secret.Object, "data")
			h := sha256.New()
			for _, k := range slices.Sorted(maps.Keys(data)) {
				fmt.Fprintf(h, "%s=%s\n", k, data[k])
			}
			key := tenant.GetName() + "/" + m["name"].(string)
			out[key] = credential{
				tenant: tenant.GetName(), server: m["server"].(string), database: m["database"].(string),
				username: m["username"].(string), password: decode(t, data["password"]), digest: hex.EncodeToString(h.Sum(nil)),
			}
		}
	}
	return out
}

// expectCredentialsKept checks that every credential of before is still in its Secret,
// unchanged, and still logs in to its own database.
func (c *cluster) expectCredentialsKept(t *testing.T, before map[string]credential) {
	t.Helper()
	after := c.credentials(t)
	for key, was := range before {
		if now, ok := after[key]; ok && now.digest != was.digest {
			t.Errorf("the credentials Secret of database %s changed", key)
		} else if !ok && !c.archived(t, was.tenant) {
			t.Errorf("database %s has no credentials Secret any more", key)
		}
		inst := c.servers[was.server]
		if err := dbtest.CanConnect(context.Background(), inst.Server, was.username, was.password, was.database); err != nil {
			t.Errorf("database %s no longer logs in with the password it had: %v", key, err)
		}
	}
}

// archived reports whether the tenant is Archived.
func (c *cluster) archived(t *testing.T, name string) bool {
	t.Helper()
	tenant, err := c.dyn.Resource(tenantsGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	state, _, _ := unstructured.NestedString(tenant.Object, "spec", "state")
	return state == "Archived"
}

func decode(t *testing.T, b64 string) string {
	t.Helper()
	out, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
