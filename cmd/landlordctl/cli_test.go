package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/test/testenv"
)

// run runs the CLI as name and returns stdout, stderr and its error.
func run(t *testing.T, name string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := newRootCommandAs(name, &stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	cmd.SetContext(context.Background())
	err := cmd.Execute()
	return stdout.String(), stderr.String(), err
}

// kubeconfigWithNamespace is the shared cluster's kubeconfig whose current context defaults
// to namespace, as `kubectl config set-context --current --namespace` leaves it.
func kubeconfigWithNamespace(t *testing.T, namespace string) string {
	t.Helper()
	_, path := sharedCluster(t)
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = namespace
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTheInvokedNameIsTheOneHelpAndExamplesSpeakOf(t *testing.T) {
	for _, tc := range []struct {
		arg0, want string
	}{
		{"/usr/local/bin/landlordctl", "landlordctl"},
		{"/home/me/.krew/bin/kubectl-landlord", "kubectl landlord"},
		{`C:\tools\kubectl-landlord.exe`, "kubectl landlord"},
	} {
		t.Run(tc.arg0+" is "+tc.want, func(t *testing.T) {
			if got := commandName(tc.arg0); got != tc.want {
				t.Fatalf("commandName = %q", got)
			}
			out, _, err := run(t, commandName(tc.arg0), "get", "--help")
			if err != nil || !strings.Contains(out, tc.want+" get tenants -l plan=trial") || !strings.Contains(out, "Usage:\n  "+tc.want+" get") {
				t.Errorf("err=%v help:\n%s", err, out)
			}
		})
	}
}

func TestGetShowsTenantsWithTheirStateReadinessNamespaceAndVersions(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	createTenants(t, c, "listed", []string{"listed-a", "listed-b"}, "web=1.0.0")
	ns := defaultNamespace("listed-a")

	t.Run("the default table has a row per tenant with the columns people act on", func(t *testing.T) {
		out, _, err := run(t, binaryName, "get", "tenants", "-l", "group=listed", "--kubeconfig", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME STATE READY REASON SUSPENDED NAMESPACE VERSIONS AGE" {
			t.Fatalf("table:\n%s", out)
		}
		row := strings.Fields(lines[1])
		if want := []string{"listed-a", "Active", "True", "Succeeded", "false", ns, "web=1.0.0"}; !slices.Equal(row[:7], want) {
			t.Errorf("row %q, want %q", row, want)
		}
	})

	t.Run("a suspended tenant says so, as kubectl's Suspended column does", func(t *testing.T) {
		suspended := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "listed-b"}}
		if err := c.Patch(context.Background(), suspended, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Patch(context.Background(), suspended, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":null}}`)))
		})
		out, _, err := run(t, binaryName, "get", "tenants", "-l", "group=listed", "--kubeconfig", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 4 {
				rows[f[0]] = f[4]
			}
		}
		if want := map[string]string{"listed-a": "false", "listed-b": "true"}; !reflect.DeepEqual(rows, want) {
			t.Errorf("SUSPENDED = %v, want %v\n%s", rows, want, out)
		}
	})

	t.Run("wide adds the organization and the Ready message", func(t *testing.T) {
		out, _, err := run(t, binaryName, "get", "tenants", "listed-b", "-o", "wide", "--kubeconfig", kubeconfig)
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		if err != nil || !slices.Contains(header, "ORGANIZATION") || !slices.Contains(header, "MESSAGE") || !strings.Contains(out, "listed-b Inc.") {
			t.Errorf("err=%v\n%s", err, out)
		}
	})

	t.Run("json is the list of Tenant objects", func(t *testing.T) {
		out, _, err := run(t, binaryName, "get", "tenants", "-l", "group=listed", "-o", "json", "--kubeconfig", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		var list tenancyv1alpha1.TenantList
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 || list.Items[0].Kind != "Tenant" || list.Items[0].Status.Namespace != ns {
			t.Errorf("list: %+v", list)
		}
	})

	t.Run("one tenant asked for by name is printed as itself", func(t *testing.T) {
		out, _, err := run(t, binaryName, "get", "tenant", "listed-a", "-o", "yaml", "--kubeconfig", kubeconfig)
		var tenant tenancyv1alpha1.Tenant
		if err != nil || yaml.Unmarshal([]byte(out), &tenant) != nil || tenant.Kind != "Tenant" || tenant.Name != "listed-a" {
			t.Errorf("err=%v\n%s", err, out)
		}
	})

	t.Run("name is kind and name, one a line", func(t *testing.T) {
		out, _, err := run(t, binaryName, "get", "tenants", "-l", "group=listed", "-o", "name", "--kubeconfig", kubeconfig)
		if err != nil || out != "tenant.tenancy.landlord.dev/listed-a\ntenant.tenancy.landlord.dev/listed-b\n" {
			t.Errorf("err=%v out=%q", err, out)
		}
	})

	t.Run("--as impersonates, as with kubectl", func(t *testing.T) {
		_, _, err := run(t, binaryName, "get", "tenants", "--as", "intern@example.com", "--kubeconfig", kubeconfig)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "intern@example.com" cannot list resource "tenants"`) {
			t.Errorf("err=%v, want the impersonated user forbidden", err)
		}
	})

	t.Run("a tenant that does not exist is an error", func(t *testing.T) {
		_, _, err := run(t, binaryName, "get", "tenants", "nobody", "--kubeconfig", kubeconfig)
		if err == nil || err.Error() != `tenant "nobody" not found` {
			t.Errorf("err=%v", err)
		}
	})

	t.Run("of a found and a missing tenant, the found one is printed and the command still fails, as kubectl's", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "get", "tenants", "listed-a", "nobody", "-o", "name", "--kubeconfig", kubeconfig)
		if err == nil || out != "tenant.tenancy.landlord.dev/listed-a\n" || !strings.Contains(stderr, `tenant "nobody" not found`) {
			t.Errorf("err=%v out=%q stderr=%q", err, out, stderr)
		}
	})
}

func TestClaimsAreMadeAndListedInTheNamespaceOfTheKubeconfigContext(t *testing.T) {
	c, _ := sharedCluster(t)
	for _, ns := range []string{"signups-eu", "signups-us"} {
		if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	kubeconfig := kubeconfigWithNamespace(t, "signups-eu")

	out, _, err := run(t, binaryName, append(customer("no-such-pool", "--name", "from-context"), "--kubeconfig", kubeconfig)...)
	if err != nil || out != "signups-eu/from-context\n" {
		t.Fatalf("claim in the context's namespace: err=%v out=%q", err, out)
	}
	out, _, err = run(t, binaryName, append(customer("no-such-pool", "--name", "from-flag", "-n", "signups-us", "-o", "yaml"), "--kubeconfig", kubeconfig)...)
	var claim tenancyv1alpha1.TenantClaim
	if err != nil || yaml.Unmarshal([]byte(out), &claim) != nil || claim.Kind != "TenantClaim" || claim.Namespace != "signups-us" || claim.Spec.Pool != "no-such-pool" {
		t.Fatalf("claim with -n and -o yaml: err=%v\n%s", err, out)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"the context's namespace by default", nil, []string{"from-context"}},
		{"the namespace -n names", []string{"-n", "signups-us"}, []string{"from-flag"}},
		{"every namespace with -A", []string{"-A"}, []string{"from-context", "from-flag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, binaryName, append([]string{"get", "claims", "-o", "name", "--kubeconfig", kubeconfig}, tc.args...)...)
			var got []string
			for _, l := range strings.Fields(out) {
				if n := strings.TrimPrefix(l, "tenantclaim.tenancy.landlord.dev/"); n == "from-context" || n == "from-flag" {
					got = append(got, n)
				}
			}
			slices.Sort(got)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("err=%v claims %v, want %v\n%s", err, got, tc.want, out)
			}
		})
	}

	out, _, err = run(t, binaryName, "get", "claims", "-A", "--kubeconfig", kubeconfig)
	if err != nil || !regexp.MustCompile(`(?m)^signups-eu\s+from-context\s+no-such-pool\s+Pending\s+<none>\s+PoolNotFound\s`).MatchString(out) {
		t.Errorf("table with namespaces: err=%v\n%s", err, out)
	}
}

func TestStatusShowsConditionsComponentsAndTheObjectsLandlordManagesForTheTenant(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	createTenants(t, c, "status", []string{"status-a"}, "web=1.0.0")
	ns := defaultNamespace("status-a")

	out, _, err := run(t, binaryName, "status", "status-a", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Namespace:\s+` + regexp.QuoteMeta(ns) + `$`),
		regexp.MustCompile(`(?m)^Status:\s+Current: Resource is Ready$`),
		regexp.MustCompile(`(?m)^Conditions:\n  TYPE\s+STATUS\s+REASON\s+AGE\s+MESSAGE\n  Ready\s+True\s+Succeeded\s`),
		regexp.MustCompile(`(?m)^  ComponentsReady\s+True\s`),
		regexp.MustCompile(`(?m)^  web\s+1\.0\.0\s+1\.0\.0\s+<none>\s+true\s*$`),
		regexp.MustCompile(`(?m)^Databases:\n  <none>$`),
		// The component's ConfigMap, rendered from the template, and the tenant's own RBAC.
		regexp.MustCompile(`(?m)^  ConfigMap\s+web\s+web$`),
		regexp.MustCompile(`(?m)^  RoleBinding\.rbac\.authorization\.k8s\.io\s+\S+\s+<none>$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("status lacks %s:\n%s", want, out)
		}
	}

	out, _, err = run(t, binaryName, "status", "status-a", "-o", "json", "--kubeconfig", kubeconfig)
	var tenant tenancyv1alpha1.Tenant
	if err != nil || json.Unmarshal([]byte(out), &tenant) != nil || tenant.Kind != "Tenant" || tenant.Status.Namespace != ns {
		t.Errorf("-o json: err=%v\n%s", err, out)
	}

	if _, _, err := run(t, binaryName, "status", "nobody", "--kubeconfig", kubeconfig); !apierrors.IsNotFound(err) {
		t.Errorf("a tenant that does not exist: %v", err)
	}
}

func TestVersionReportsTheClientAndTheOperatorFoundInTheCluster(t *testing.T) {
	c, kubeconfig := sharedCluster(t)

	out, _, err := run(t, binaryName, "version", "--client", "-o", "json")
	var info versionInfo
	if err != nil || json.Unmarshal([]byte(out), &info) != nil || info.Client.Version == "" || info.Client.GoVersion == "" || info.Operator != nil {
		t.Fatalf("--client -o json: err=%v\n%s", err, out)
	}

	out, _, err = run(t, binaryName, "version", "--kubeconfig", emptyKubeconfig(t))
	if err != nil || !regexp.MustCompile(`(?m)^Client: \S+ \(commit \S+, go\S+, \S+/\S+\)\nOperator: unknown \(listing Deployments: `).MatchString(out) {
		t.Errorf("without a reachable cluster: err=%v\n%s", err, out)
	}

	// The operator as config/manager deploys it, in its own namespace.
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "landlord-system", Name: "landlord-controller-manager", Labels: operatorLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32),
			Selector: &metav1.LabelSelector{MatchLabels: operatorLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: operatorLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "ghcr.io/landlord-dev/landlord:v0.3.1"}}},
			},
		},
	}
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "landlord-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), deploy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), deploy) })
	// A tenant's look-alike, in a namespace listed before landlord-system, is not the operator.
	decoy := deploy.DeepCopy()
	decoy.Namespace, decoy.ResourceVersion, decoy.UID = "aaa-tenant", "", ""
	decoy.Spec.Template.Spec.Containers[0].Image = "ghcr.io/landlord-dev/landlord:v6.6.6"
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: decoy.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), decoy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), decoy) })
	out, _, err = run(t, binaryName, "version", "-o", "yaml", "--kubeconfig", kubeconfig)
	info = versionInfo{}
	if err != nil || yaml.Unmarshal([]byte(out), &info) != nil || info.Operator == nil ||
		*info.Operator != (operatorInfo{Version: "v0.3.1", Image: "ghcr.io/landlord-dev/landlord:v0.3.1", Namespace: "landlord-system"}) {
		t.Errorf("with the operator deployed: err=%v\n%s", err, out)
	}
}

func TestImageTagsAreTheOperatorsVersion(t *testing.T) {
	for image, want := range map[string]string{
		"ghcr.io/landlord-dev/landlord:v0.3.1":           "v0.3.1",
		"localhost:5000/landlord:dev":                    "dev",
		"localhost:5000/landlord":                        "unknown",
		"ghcr.io/landlord-dev/landlord:v1@sha256:abcdef": "v1",
		"ghcr.io/landlord-dev/landlord@sha256:abcdef":    "unknown",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
}

// TestTheKubectlPluginAnswersKubectlLandlord builds the CLI as kubectl-landlord, puts it on the
// PATH with the link kubectl runs to complete it (kubectl_complete-landlord), and runs it through
// the real kubectl, as a user who installed the plugin would: its exit codes reach the shell, and
// kubectl's own completion completes its commands and the cluster's tenants.
func TestTheKubectlPluginAnswersKubectlLandlord(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	createTenants(t, c, "plugin", []string{"plugin-a"})
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-landlord"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	if err := os.Symlink("kubectl-landlord", filepath.Join(dir, completionExecutable)); err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(testenv.RepoRoot(), "bin", "k8s", "1.37.2", "kubectl")
	env := append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)

	for _, tc := range []struct {
		name   string
		args   []string
		want   *regexp.Regexp
		exit   int
		stderr string
	}{
		{name: "kubectl plugin list finds it", args: []string{"plugin", "list"}, want: regexp.MustCompile(`(?m)/kubectl-landlord$`)},
		{name: "version reports the client and the operator", args: []string{"landlord", "version"},
			want: regexp.MustCompile(`^Client: \S+ \(commit \S+, go\S+, \S+/\S+\)\nOperator: unknown \(no Landlord operator Deployment found\)\n$`)},
		{name: "help speaks of kubectl landlord", args: []string{"landlord", "rollout", "--help"},
			want: regexp.MustCompile(`(?s)Usage:\n  kubectl landlord rollout .*\n  kubectl landlord rollout --component web --version 1\.2\.0`)},
		{name: "kubectl's global flags reach the plugin", args: []string{"landlord", "get", "tenants", "--context", "envtest", "-o", "name", "-l", "group=nobody-has-this"},
			want: regexp.MustCompile(`^$`)},
		{name: "a usage error exits 2, with the way to the help", args: []string{"landlord", "get", "tenats"}, want: regexp.MustCompile(`^$`),
			exit: exitUsage, stderr: "kubectl landlord: unknown kind \"tenats\": want one of tenants, claims, pools, rollouts, databaseservers, templates, backups, backupschedules, restores, backuprequests, restorerequests, classes, moves\nRun 'kubectl landlord get --help' for usage.\n"},
		{name: "a tenant that does not exist exits 1", args: []string{"landlord", "describe", "tenant", "nobody"}, want: regexp.MustCompile(`^$`),
			exit: exitError, stderr: "kubectl landlord: tenant \"nobody\" not found\n"},
		{name: "kubectl completes the plugin's commands", args: []string{"__complete", "landlord", "desc"},
			want: regexp.MustCompile(`(?m)^describe\t.*\n:4\n`)},
		{name: "kubectl completes the cluster's tenants after kubectl landlord", args: []string{"__complete", "landlord", "get", "tenants", "plugin-"},
			want: regexp.MustCompile(`^plugin-a\n:4\n`)},
		{name: "kubectl completes flags' values after kubectl landlord", args: []string{"__complete", "landlord", "describe", "tenant", "--context", "env"},
			want: regexp.MustCompile(`^envtest\n:4\n`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(kubectl, tc.args...)
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if cmd.ProcessState.ExitCode() != tc.exit || !tc.want.MatchString(stdout.String()) || tc.exit != exitOK && stderr.String() != tc.stderr {
				t.Errorf("kubectl %s: err=%v\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), err, stdout.String(), stderr.String())
			}
		})
	}

	t.Run("a watch interrupted with Ctrl-C exits 0", func(t *testing.T) {
		cmd := exec.Command(kubectl, "landlord", "get", "tenants", "-l", "group=plugin", "--watch")
		cmd.Env = env
		var stdout syncBuffer
		cmd.Stdout = &stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		NewWithT(t).Eventually(stdout.String).WithTimeout(waitLimit).Should(MatchRegexp(`(?m)^plugin-a\s+Active\s`))
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("the interrupted watch: %v\n%s", err, stdout.String())
		}
	})
}

// ---- template render: no cluster.

func TestTemplateRenderRendersForATenantAsTheOperatorWouldOrFailsWithTheTemplatesError(t *testing.T) {
	samples := filepath.Join(testenv.RepoRoot(), "config", "samples", "components")
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	template := func(name, manifests string) string {
		return write(name+".yaml", `apiVersion: tenancy.landlord.dev/v1alpha1
kind: ComponentTemplate
metadata: {name: `+name+`}
spec:
  component: web
  version: 1.0.0
  values: {replicas: 2}
  valuesSchema:
    type: object
    properties:
      replicas: {type: integer, minimum: 0, maximum: 20}
  manifests: |
`+indent(manifests, "    "))
	}
	tooMany := write("too-many.yaml", `apiVersion: tenancy.landlord.dev/v1alpha1
kind: Tenant
metadata: {name: greedy}
spec:
  organization: Greedy
  components: [{name: web, version: 1.0.0, values: {replicas: 50}}]
`)
	ns := defaultNamespace("pied-piper")

	t.Run("the sample template renders the tenant's replicas, image and namespace, labeled as the operator labels it", func(t *testing.T) {
		out, stderr, err := run(t, binaryName, "template", "render", "-f", filepath.Join(samples, "web-1.0.0.yaml"), "--tenant", filepath.Join(samples, "tenant.yaml"))
		if err != nil {
			t.Fatalf("err=%v stderr=%s", err, stderr)
		}
		docs := strings.Split(out, "---\n")
		var kinds []string
		for _, d := range docs {
			obj := map[string]any{}
			if err := yaml.Unmarshal([]byte(d), &obj); err != nil || len(obj) == 0 {
				continue
			}
			kinds = append(kinds, obj["kind"].(string))
			meta := obj["metadata"].(map[string]any)
			labels := meta["labels"].(map[string]any)
			if meta["namespace"] != ns || labels[tenancyv1alpha1.TenantLabel] != "pied-piper" || labels[tenancyv1alpha1.ComponentLabel] != "web" {
				t.Errorf("%s: metadata %v", obj["kind"], meta)
			}
		}
		if !slices.Equal(kinds, []string{"Deployment", "Service"}) {
			t.Errorf("kinds %v, want Deployment and Service\n%s", kinds, out)
		}
		for _, want := range []string{"replicas: 3\n", "image: ghcr.io/example/web:1.0.0\n", "value: pied-piper\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("without a tenant, a stand-in tenant named example gets the template's defaults", func(t *testing.T) {
		out, _, err := run(t, binaryName, "template", "render", "-f", filepath.Join(samples, "web-1.0.0.yaml"))
		if err != nil || !strings.Contains(out, "replicas: 2\n") || !strings.Contains(out, "namespace: "+defaultNamespace("example")+"\n") {
			t.Errorf("err=%v\n%s", err, out)
		}
	})

	for _, tc := range []struct {
		name, file, tenant string
		want               string
	}{
		{"a template that does not parse fails with the line", template("unclosed", "kind: ConfigMap\nmetadata: {name: {{ .Tenant.Name }}\n"), "",
			`ComponentTemplate unclosed does not render for tenant example: `},
		{"a required value that is missing fails with the template's message", template("required", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata:\n  url: {{ required \"values.url is required\" .Values.url }}\n"), "",
			"values.url is required"},
		{"values outside the schema fail as the tenant's status would say", template("schema", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"), tooMany,
			"replicas"},
		{"a kind components may not render is refused", template("clusterrole", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: web}\n"), "",
			"ClusterRole web: a component may never render"},
		{"an object in another namespace is refused", template("elsewhere", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: kube-system}\n"), "",
			"ConfigMap web is in namespace kube-system; a component may only create objects in the tenant namespace"},
		{"a file without a template is an error", tooMany, "", "no ComponentTemplate in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "render", "-f", tc.file}
			if tc.tenant != "" {
				args = append(args, "--tenant", tc.tenant)
			}
			out, _, err := run(t, binaryName, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
				t.Errorf("err=%v, want it to contain %q; out=%q", err, tc.want, out)
			}
		})
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// ---- A tenant that does not become Ready: the rollout names it, with why, and stops.

func TestARolloutNamesTheTenantsNotReadyInTimeAndStops(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	// A version whose Deployment can never be scheduled: the tenant stays not Ready.
	ct := &tenancyv1alpha1.ComponentTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2.0.0-unschedulable"},
		Spec: tenancyv1alpha1.ComponentTemplateSpec{
			Component: "web", Version: "2.0.0-unschedulable",
			Manifests: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {landlord.test/no-such-node: "true"}
      containers: [{name: web, image: web:2.0.0}]
`,
		},
	}
	if err := c.Create(context.Background(), ct); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	followingTenants(t, c, "pending", []string{"pending-a"}, "web=1.0.0")
	deleteRollouts(t, c, "web-2.0.0-unschedulable")

	out, err := landlordctlRollout(t, "--kubeconfig", kubeconfig, "rollout", "--component", "web", "--version", "2.0.0-unschedulable",
		"--selector", "group=pending", "--timeout", "5s")
	t.Logf("\n%s", out)
	if want := "ComponentRollout web-2.0.0-unschedulable stalled: TooManyFailures: 1 tenants failed, more than maxFailures (0): pending-a (ProgressDeadlineExceeded)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^context envtest: web-2\.0\.0-unschedulable: wave 1/1 started: pending-a$`),
		regexp.MustCompile(`(?m)^context envtest: web-2\.0\.0-unschedulable: wave 1/1: pending-a failed: ProgressDeadlineExceeded: not running web 2\.0\.0-unschedulable Ready 5s after its wave started: .*Deployment`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %s", want)
		}
	}

	// Following the rollout again: one list of it, then the watch.
	wc, requests := countingClient(t)
	err = followRollout(context.Background(), io.Discard, cluster{name: "envtest", client: wc}, "web-2.0.0-unschedulable")
	if err == nil || !strings.Contains(err.Error(), "stalled: TooManyFailures") {
		t.Errorf("err = %v", err)
	}
	if got, want := requests(), (testenv.Counts{"GET componentrollouts": 1}); !reflect.DeepEqual(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

// defaultNamespace is the tenant's namespace under the default operator configuration.
func defaultNamespace(tenant string) string {
	cfg := config.Default()
	return cfg.NamespaceName(tenant)
}

// ---- Waits are driven by watches: the requests they make do not grow with the time waited.

// countingClient is a client of the shared cluster whose requests other than watches are
// counted from now on. It has read Landlord's kinds once, so the counts leave out discovery.
func countingClient(t *testing.T) (client.WithWatch, func() testenv.Counts) {
	t.Helper()
	sharedCluster(t)
	counter := testenv.NewRequestCounter()
	cfg := rest.CopyConfig(fleet.env.Admin)
	cfg.Wrap(counter.Wrap)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, list := range []client.ObjectList{&tenancyv1alpha1.TenantList{}, &tenancyv1alpha1.TenantClaimList{}, &tenancyv1alpha1.ComponentRolloutList{}} {
		if err := c.List(context.Background(), list, client.Limit(1)); err != nil {
			t.Fatal(err)
		}
	}
	before := counter.Snapshot()
	return c, func() testenv.Counts { return counter.Snapshot().Sub(before) }
}

func TestWaitingForAClaimReadsItOnceAndListsItOnceHoweverLongItWaits(t *testing.T) {
	c, requests := countingClient(t)
	claim := &tenancyv1alpha1.TenantClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "watched"},
		Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "no-such-pool", Organization: "Acme Inc.", Email: "ops@acme.example.com"},
	}
	if err := fleet.env.AdminClient.Create(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	// The operator's verdict first, by the administrator's client (not counted): the wait is
	// then about what the wait reads, not about how busy the operator is.
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &tenancyv1alpha1.TenantClaim{}
		err := fleet.env.AdminClient.Get(ctx, client.ObjectKeyFromObject(claim), got)
		return err == nil && got.Status.Reason == tenancyv1alpha1.ReasonPoolNotFound, err
	}); err != nil {
		t.Fatalf("the operator did not say the pool is missing: %v", err)
	}
	var progress bytes.Buffer
	_, err := waitBound(context.Background(), c, claim, 3*time.Second, &progress)
	if err == nil || !strings.Contains(err.Error(), "not bound within 3s: Pending: PoolNotFound") {
		t.Fatalf("err = %v", err)
	}
	// One get, one list, then the watch (not counted); polling every 200ms would have made 15.
	if got, want := requests(), (testenv.Counts{"GET tenantclaims": 2}); !reflect.DeepEqual(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if !strings.Contains(progress.String(), "claim default/watched: Pending: PoolNotFound") {
		t.Errorf("progress = %q", progress.String())
	}
}
