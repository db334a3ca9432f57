package install_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/test/alerts"
)

// grepLines are the lines of text that contain s.
func grepLines(text, s string) string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// chartLabels are the labels the chart adds for Helm's tooling; config/ has none of them.
var chartLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

// render renders charts/landlord (with its CRDs) as `helm install -n landlord-system` would.
func render(t *testing.T, chart string, values ...string) []object {
	t.Helper()
	out, err := renderErr(t, chart, "landlord-system", values...)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

func renderErr(t *testing.T, chart, namespace string, values ...string) (string, error) {
	args := []string{"template", "landlord", chart, "--namespace", namespace, "--include-crds", "--kube-version", kubeVersion}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	return runErr(nil, helmPath(t), args...)
}

// configDefault is what `kubectl apply -k config/default` installs.
func configDefault(t *testing.T) []object {
	t.Helper()
	return decode(t, run(t, nil, kubectlPath(t), "kustomize", filepath.Join(root, "config", "default")))
}

// hashedConfigMap is the name kustomize's configMapGenerator gives the configuration.
var hashedConfigMap = regexp.MustCompile(`^landlord-config-[a-z0-9]{10}$`)

// normalize takes out of an object what differs between the two installers by construction:
// the chart's labels for Helm and its config checksum (which rolls the pods, as the ConfigMap
// name's hash does for kustomize), the hash in that name, and the configuration file's
// comments and layout (it is compared as the YAML it is).
func normalize(t *testing.T, obj object) object {
	t.Helper()
	data, err := sigsyaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := object{}
	if err := sigsyaml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	meta := out["metadata"].(map[string]any)
	if labels, ok := meta["labels"].(map[string]any); ok {
		for _, l := range chartLabels {
			delete(labels, l)
		}
		if labels["app.kubernetes.io/managed-by"] == "Helm" {
			delete(labels, "app.kubernetes.io/managed-by")
		}
		if len(labels) == 0 {
			delete(meta, "labels")
		}
	}
	if name := str(meta["name"]); out["kind"] == "ConfigMap" && hashedConfigMap.MatchString(name) {
		meta["name"] = "landlord-config"
	}
	if out["kind"] == "ConfigMap" && meta["name"] == "landlord-config" {
		data := out["data"].(map[string]any)
		config := map[string]any{}
		if err := sigsyaml.Unmarshal([]byte(str(data["landlord.yaml"])), &config); err != nil {
			t.Fatal(err)
		}
		data["landlord.yaml"] = config
	}
	if out["kind"] == "Deployment" {
		pod := field(out, "spec", "template").(map[string]any)
		podMeta := pod["metadata"].(map[string]any)
		if annotations, ok := podMeta["annotations"].(map[string]any); ok {
			delete(annotations, "checksum/config")
			if len(annotations) == 0 {
				delete(podMeta, "annotations")
			}
		}
		for _, v := range field(pod, "spec", "volumes").([]any) {
			if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok && hashedConfigMap.MatchString(str(cm["name"])) {
				cm["name"] = "landlord-config"
			}
		}
	}
	return out
}

func TestTheChartInstallsWhatConfigDefaultInstalls(t *testing.T) {
	normalizeAll := func(objects []object) map[string]object {
		out := make([]object, len(objects))
		for i, obj := range objects {
			out[i] = normalize(t, obj)
		}
		return byKey(t, out)
	}
	want := normalizeAll(configDefault(t))
	// Helm installs into a namespace that exists (helm install --create-namespace, or the
	// the install's kubectl create namespace): the chart does not carry it.
	if _, ok := want["Namespace//landlord-system"]; !ok {
		t.Fatal("config/default has no Namespace landlord-system; the chart's namespace check is stale")
	}
	delete(want, "Namespace//landlord-system")
	// The chart's defaults are config/default's, the release's image included.
	rendered := render(t, filepath.Join(root, "charts", "landlord"))
	got := normalizeAll(rendered)

	keys := func(m map[string]object) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
		t.Fatalf("the chart's objects (+) differ from config/default's (-):\n%s", diff)
	}
	if len(want) < 40 {
		t.Fatalf("config/default has %d objects; expected CRDs, RBAC, policies and the Deployment", len(want))
	}
	for k := range want {
		t.Run(k+" is config/default's", func(t *testing.T) {
			if diff := cmp.Diff(want[k], got[k]); diff != "" {
				t.Errorf("the chart's %s (+) differs from config/default's (-):\n%s", k, diff)
			}
		})
	}
	t.Run("every object, the CRDs included, carries Helm's labels, and all but Landlord's own policies its managed-by", func(t *testing.T) {
		for _, obj := range rendered {
			k := key(obj)
			labels, _ := field(obj, "metadata", "labels").(map[string]any)
			for _, l := range chartLabels {
				if labels[l] == nil {
					t.Errorf("%s has no label %s", k, l)
				}
			}
			if managedBy := labels["app.kubernetes.io/managed-by"]; managedBy != "Helm" && managedBy != "landlord" {
				t.Errorf("%s is managed by %v", k, managedBy)
			}
		}
	})
}

func TestTheChartsValues(t *testing.T) {
	chart := filepath.Join(root, "charts", "landlord")
	deployment := func(t *testing.T, objects map[string]object) object {
		t.Helper()
		d, ok := objects["Deployment/landlord-system/landlord-controller-manager"]
		if !ok {
			t.Fatal("no Deployment rendered")
		}
		return d
	}
	container := func(t *testing.T, objects map[string]object) map[string]any {
		return field(deployment(t, objects), "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	}
	volumes := func(t *testing.T, objects map[string]object) []string {
		var names []string
		for _, v := range field(deployment(t, objects), "spec", "template", "spec", "volumes").([]any) {
			names = append(names, str(v.(map[string]any)["name"]))
		}
		return names
	}
	const claim = "PersistentVolumeClaim/landlord-system/landlord-secrets"
	const pdb = "PodDisruptionBudget/landlord-system/landlord-controller-manager"

	cases := []struct {
		name   string
		values []string
		check  func(t *testing.T, objects map[string]object)
	}{
		{
			name: "by default the file store runs one replica, recreated, on a claim Helm keeps",
			check: func(t *testing.T, objects map[string]object) {
				d := deployment(t, objects)
				if field(d, "spec", "replicas") != float64(1) || field(d, "spec", "strategy", "type") != "Recreate" {
					t.Errorf("replicas %v, strategy %v; want 1, Recreate", field(d, "spec", "replicas"), field(d, "spec", "strategy", "type"))
				}
				if !slices.Contains(volumes(t, objects), "secrets") {
					t.Error("the store's volume is not mounted")
				}
				if policy := field(objects[claim], "metadata", "annotations", "helm.sh/resource-policy"); policy != "keep" {
					t.Errorf("the store's claim has resource policy %v, want keep", policy)
				}
				if _, ok := objects[pdb]; ok {
					t.Error("a PodDisruptionBudget is rendered though it is off by default")
				}
				if image, want := container(t, objects)["image"], "ghcr.io/landlord-dev/landlord:"+releaseVersion(t); image != want {
					t.Errorf("image %v, want the release's: %s", image, want)
				}
			},
		},
		{
			name:   "the gcs store runs leader-elected replicas without a claim",
			values: []string{"config.secrets.store.backend=gcs", "config.secrets.store.gcs.bucket=acme", "replicas=3"},
			check: func(t *testing.T, objects map[string]object) {
				d := deployment(t, objects)
				if field(d, "spec", "replicas") != float64(3) || field(d, "spec", "strategy", "type") != "RollingUpdate" {
					t.Errorf("replicas %v, strategy %v; want 3, RollingUpdate", field(d, "spec", "replicas"), field(d, "spec", "strategy", "type"))
				}
				if !slices.Contains(container(t, objects)["args"].([]any), any("--leader-elect")) {
					t.Error("the replicas do not elect a leader")
				}
				if _, ok := objects[claim]; ok {
					t.Error("a claim is rendered for the gcs store")
				}
				if slices.Contains(volumes(t, objects), "secrets") {
					t.Error("a store volume is mounted for the gcs store")
				}
				if config := configFile(t, objects); field(config, "secrets", "store", "backend") != "gcs" || field(config, "secrets", "store", "gcs", "bucket") != "acme" {
					t.Errorf("the configuration's store is %v", field(config, "secrets", "store"))
				}
			},
		},
		{
			name:   "the memory limit reaches LANDLORD_MEMORY_LIMIT through the Downward API",
			values: []string{"resources.limits.memory=2Gi"},
			check: func(t *testing.T, objects map[string]object) {
				c := container(t, objects)
				if limit := field(c, "resources", "limits", "memory"); limit != "2Gi" {
					t.Errorf("limits.memory %v, want 2Gi", limit)
				}
				env := c["env"].([]any)[0].(map[string]any)
				if env["name"] != "LANDLORD_MEMORY_LIMIT" || field(env, "valueFrom", "resourceFieldRef", "resource") != "limits.memory" {
					t.Errorf("env %v, want LANDLORD_MEMORY_LIMIT from limits.memory", env)
				}
			},
		},
		{
			name: "the image, its pull policy and the configuration are values, and a new configuration rolls the pods",
			values: []string{"image.repository=registry.example.com/landlord", "image.tag=v0.2.0", "image.pullPolicy=Always",
				"config.namespacePrefix=t-"},
			check: func(t *testing.T, objects map[string]object) {
				c := container(t, objects)
				if c["image"] != "registry.example.com/landlord:v0.2.0" || c["imagePullPolicy"] != "Always" {
					t.Errorf("image %v pulled %v", c["image"], c["imagePullPolicy"])
				}
				if prefix := configFile(t, objects)["namespacePrefix"]; prefix != "t-" {
					t.Errorf("namespacePrefix %v, want t-", prefix)
				}
				defaults := byKey(t, render(t, chart))
				checksum := func(objects map[string]object) any {
					return field(deployment(t, objects), "spec", "template", "metadata", "annotations", "checksum/config")
				}
				if checksum(objects) == nil || checksum(objects) == checksum(defaults) {
					t.Errorf("the pods' config checksum %v does not change with the configuration", checksum(objects))
				}
			},
		},
		{
			name: "a PodDisruptionBudget, topology spread and scheduling values render when set",
			values: []string{"podDisruptionBudget.enabled=true", "topologySpreadConstraints[0].maxSkew=1",
				"topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone", "topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
				"nodeSelector.pool=system", "priorityClassName=system-cluster-critical", "serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=landlord@acme.iam.gserviceaccount.com"},
			check: func(t *testing.T, objects map[string]object) {
				if got := field(objects[pdb], "spec", "maxUnavailable"); got != float64(1) {
					t.Errorf("the PodDisruptionBudget's maxUnavailable is %v, want 1", got)
				}
				if got := field(objects[pdb], "spec", "selector", "matchLabels", "app.kubernetes.io/component"); got != "controller-manager" {
					t.Errorf("the PodDisruptionBudget selects %v", field(objects[pdb], "spec", "selector"))
				}
				pod := field(deployment(t, objects), "spec", "template", "spec").(map[string]any)
				spread, _ := pod["topologySpreadConstraints"].([]any)
				if len(spread) != 1 || field(spread[0].(map[string]any), "topologyKey") != "topology.kubernetes.io/zone" {
					t.Errorf("topologySpreadConstraints %v", pod["topologySpreadConstraints"])
				}
				if field(pod, "nodeSelector", "pool") != "system" || pod["priorityClassName"] != "system-cluster-critical" {
					t.Errorf("nodeSelector %v, priorityClassName %v", pod["nodeSelector"], pod["priorityClassName"])
				}
				sa := objects["ServiceAccount/landlord-system/landlord-controller-manager"]
				if got := field(sa, "metadata", "annotations", "iam.gke.io/gcp-service-account"); got != "landlord@acme.iam.gserviceaccount.com" {
					t.Errorf("the ServiceAccount's annotations are %v", field(sa, "metadata", "annotations"))
				}
			},
		},
		{
			name: "extra arguments, environment, pod labels and annotations reach the operator's pods, and the selector stays",
			values: []string{"extraArgs[0]=--zap-log-level=debug", "extraEnv[0].name=HTTPS_PROXY", "extraEnv[0].value=http://proxy:3128",
				"podLabels.team=platform", "podLabels.app\\.kubernetes\\.io/name=other", "podAnnotations.example\\.com/owner=platform"},
			check: func(t *testing.T, objects map[string]object) {
				c := container(t, objects)
				args := c["args"].([]any)
				if args[len(args)-1] != "--zap-log-level=debug" || !slices.Contains(args, any("--leader-elect")) {
					t.Errorf("args %v, want the chart's then --zap-log-level=debug", args)
				}
				env := c["env"].([]any)
				if last := env[len(env)-1].(map[string]any); last["name"] != "HTTPS_PROXY" || last["value"] != "http://proxy:3128" {
					t.Errorf("env %v, want LANDLORD_MEMORY_LIMIT then HTTPS_PROXY", env)
				}
				d := deployment(t, objects)
				labels := field(d, "spec", "template", "metadata", "labels").(map[string]any)
				if labels["team"] != "platform" || labels["app.kubernetes.io/name"] != "landlord" {
					t.Errorf("the pods' labels are %v: want team=platform, and the selector's app.kubernetes.io/name=landlord kept", labels)
				}
				if got := field(d, "spec", "template", "metadata", "annotations", "example.com/owner"); got != "platform" {
					t.Errorf("the pods' annotation example.com/owner is %v", got)
				}
				if _, ok := field(d, "spec", "selector", "matchLabels").(map[string]any)["team"]; ok {
					t.Error("a pod label joined the Deployment's selector, which cannot change after install")
				}
			},
		},
		{
			name:   "an image digest pins the image by tag and digest, pulled with the given secrets",
			values: []string{"image.digest=sha256:" + strings.Repeat("ab", 32), "imagePullSecrets[0].name=registry"},
			check: func(t *testing.T, objects map[string]object) {
				want := "ghcr.io/landlord-dev/landlord:" + releaseVersion(t) + "@sha256:" + strings.Repeat("ab", 32)
				if image := container(t, objects)["image"]; image != want {
					t.Errorf("image %v, want %s", image, want)
				}
				secrets := field(deployment(t, objects), "spec", "template", "spec", "imagePullSecrets")
				if diff := cmp.Diff([]any{map[string]any{"name": "registry"}}, secrets); diff != "" {
					t.Errorf("imagePullSecrets (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "by default the CRDs are templates Helm upgrades and uninstall keeps",
			check: func(t *testing.T, objects map[string]object) {
				for _, name := range policy.CRDNames {
					crd, ok := objects["CustomResourceDefinition//"+name]
					if !ok {
						t.Errorf("CRD %s is not rendered", name)
						continue
					}
					if got := field(crd, "metadata", "annotations", "helm.sh/resource-policy"); got != "keep" {
						t.Errorf("CRD %s has resource policy %v, want keep", name, got)
					}
				}
			},
		},
		{
			name:   "crds.keep=false lets helm uninstall delete the CRDs",
			values: []string{"crds.keep=false"},
			check: func(t *testing.T, objects map[string]object) {
				for _, name := range policy.CRDNames {
					if got := field(objects["CustomResourceDefinition//"+name], "metadata", "annotations", "helm.sh/resource-policy"); got != nil {
						t.Errorf("CRD %s has resource policy %v, want none", name, got)
					}
				}
			},
		},
		{
			name:   "crds.enabled=false leaves the CRDs out and nothing else",
			values: []string{"crds.enabled=false"},
			check: func(t *testing.T, objects map[string]object) {
				all := byKey(t, render(t, chart))
				for k := range all {
					_, rendered := objects[k]
					if isCRD := strings.HasPrefix(k, "CustomResourceDefinition/"); rendered == isCRD {
						t.Errorf("%s rendered: %v", k, rendered)
					}
				}
			},
		},
		{
			name:   "the Grafana dashboard is a ConfigMap Grafana's sidecar loads, holding config/grafana's JSON as written",
			values: []string{"grafana.dashboards.enabled=true", "grafana.dashboards.namespace=monitoring", "grafana.dashboards.annotations.grafana_folder=Landlord"},
			check: func(t *testing.T, objects map[string]object) {
				cm, ok := objects["ConfigMap/monitoring/landlord-dashboard"]
				if !ok {
					t.Fatal("no ConfigMap landlord-dashboard in the namespace monitoring")
				}
				if got := field(cm, "metadata", "labels", "grafana_dashboard"); got != "1" {
					t.Errorf("label grafana_dashboard is %v, want \"1\"", got)
				}
				if got := field(cm, "metadata", "annotations", "grafana_folder"); got != "Landlord" {
					t.Errorf("annotation grafana_folder is %v", got)
				}
				want, err := os.ReadFile(filepath.Join(root, "config", "grafana", "landlord.json"))
				if err != nil {
					t.Fatal(err)
				}
				if got := str(field(cm, "data", "landlord.json")); got != strings.TrimRight(string(want), "\n") {
					t.Error("the ConfigMap's landlord.json is not config/grafana/landlord.json")
				}
			},
		},
		{
			name:   "a metrics certificate is served by the operator and verified by the ServiceMonitor, by its CA and the Service's name",
			values: []string{"metrics.tls.secretName=landlord-metrics-tls", "metrics.serviceMonitor.enabled=true"},
			check: func(t *testing.T, objects map[string]object) {
				c := container(t, objects)
				if !slices.Contains(c["args"].([]any), any("--metrics-cert-dir=/etc/landlord/metrics-tls")) {
					t.Errorf("args %v lack --metrics-cert-dir", c["args"])
				}
				mounted := false
				for _, m := range c["volumeMounts"].([]any) {
					mounted = mounted || field(m.(map[string]any), "mountPath") == "/etc/landlord/metrics-tls"
				}
				if !mounted || !slices.Contains(volumes(t, objects), "metrics-tls") {
					t.Errorf("the certificate's Secret is not mounted at /etc/landlord/metrics-tls: volumes %v", volumes(t, objects))
				}
				monitor := objects["ServiceMonitor/landlord-system/landlord-controller-manager-metrics"]
				tls := field(monitor["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any), "tlsConfig")
				want := map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "landlord-metrics-tls", "key": "ca.crt"}},
					"serverName": "landlord-controller-manager-metrics.landlord-system.svc"}
				if diff := cmp.Diff(want, tls); diff != "" {
					t.Errorf("the ServiceMonitor's tlsConfig (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "in another namespace every object, binding subject, policy and the operator's identity name the release's namespace",
			check: func(t *testing.T, _ map[string]object) {
				out, err := renderErr(t, chart, "platform", "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true")
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(out, "landlord-system") {
					t.Errorf("rendered into platform, the chart still names landlord-system:\n%s", grepLines(out, "landlord-system"))
				}
				objects := byKey(t, decode(t, out))
				if _, ok := objects["Deployment/platform/landlord-controller-manager"]; !ok {
					t.Error("no Deployment in the namespace platform")
				}
				config := configFile(t, objects, "platform")
				if got := field(config, "controller", "identity"); got != "system:serviceaccount:platform:landlord-controller-manager" {
					t.Errorf("the operator's identity is %v", got)
				}
				if got := field(config, "databases", "credentialsNamespace"); got != "platform" {
					t.Errorf("the credentials namespace is %v", got)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, byKey(t, render(t, chart, c.values...)))
		})
	}

	refusals := []struct {
		name, namespace, want string
		values                []string
	}{
		{"two replicas on the file store are refused", "landlord-system", "single writer", []string{"replicas=2"}},
		{"a misspelt value is refused by the schema before anything is applied", "landlord-system", "additional properties 'imagee' not allowed", []string{"imagee.tag=v1.0.0"}},
		{"a misspelt field of the operator's configuration is refused by the schema", "landlord-system", "additional properties 'namespacePrefx' not allowed", []string{"config.namespacePrefx=t-"}},
		{"a field of the configuration with the wrong type is refused by the schema", "landlord-system", "maxConcurrentReconciles", []string{"config.controller.maxConcurrentReconciles=many"}},
		{"an image digest that is not sha256 is refused by the schema", "landlord-system", "digest", []string{"image.digest=latest"}},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			_, err := renderErr(t, chart, r.namespace, r.values...)
			if err == nil || !strings.Contains(err.Error(), r.want) {
				t.Fatalf("helm template: %v; want a refusal saying %q", err, r.want)
			}
		})
	}
}

// configFile is the operator's configuration file as the chart's ConfigMap holds it (in the
// namespace given, landlord-system by default).
func configFile(t *testing.T, objects map[string]object, namespace ...string) map[string]any {
	t.Helper()
	ns := "landlord-system"
	if len(namespace) > 0 {
		ns = namespace[0]
	}
	cm := objects["ConfigMap/"+ns+"/landlord-config"]
	config := map[string]any{}
	if err := sigsyaml.Unmarshal([]byte(str(field(cm, "data", "landlord.yaml"))), &config); err != nil {
		t.Fatal(err)
	}
	return config
}

// TestTheChartsMonitoringObjectsAreSwitchedByValues renders the ServiceMonitor and
// PrometheusRule config/prometheus ships (none while it ships none) on and off.
func TestTheChartsMonitoringObjectsAreSwitchedByValues(t *testing.T) {
	shipped := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(root, "config", "prometheus", "*.yaml"))
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range decode(t, string(data)) {
			shipped[str(obj["kind"])]++
		}
	}
	chart := filepath.Join(root, "charts", "landlord")
	for _, c := range []struct {
		kind, value string
	}{{"ServiceMonitor", "metrics.serviceMonitor"}, {"PrometheusRule", "metrics.prometheusRule"}} {
		for _, on := range []bool{false, true} {
			want := 0
			if on {
				want = shipped[c.kind]
			}
			name := c.kind + " objects rendered with " + c.value + ".enabled=" + map[bool]string{false: "false", true: "true"}[on] + " are config/prometheus's"
			t.Run(name, func(t *testing.T) {
				objects := render(t, chart, c.value+".enabled="+map[bool]string{false: "false", true: "true"}[on], c.value+".labels.release=prometheus")
				got := 0
				for _, obj := range objects {
					if obj["kind"] == c.kind {
						got++
						if field(obj, "metadata", "labels", "release") != "prometheus" {
							t.Errorf("%s lacks the extra label from %s.labels", key(obj), c.value)
						}
					}
				}
				if got != want {
					t.Errorf("%d %s objects rendered, want %d", got, c.kind, want)
				}
			})
		}
	}
}

// everyValueOn sets every value of the chart away from its default, as a platform team might:
// helm lint, helm template and a server-side dry run (install_test.go) each take it.
var everyValueOn = []string{
	"image.repository=registry.example.com/landlord", "image.tag=v9.9.9", "image.digest=sha256:" + strings.Repeat("0f", 32),
	"image.pullPolicy=Always", "imagePullSecrets[0].name=registry",
	"crds.enabled=true", "crds.keep=true",
	"config.secrets.store.backend=gcs", "config.secrets.store.gcs.bucket=acme", "replicas=2", "shards[0]=eu-1",
	"resources.limits.memory=2Gi", "persistence.size=2Gi",
	"serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=landlord@acme.iam.gserviceaccount.com",
	"podLabels.team=platform", "podAnnotations.example\\.com/team=platform",
	"extraArgs[0]=--zap-log-level=debug", "extraEnv[0].name=HTTPS_PROXY", "extraEnv[0].value=http://proxy.example.com:3128",
	"priorityClassName=system-cluster-critical", "nodeSelector.kubernetes\\.io/os=linux",
	"tolerations[0].key=dedicated", "tolerations[0].operator=Exists",
	"affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1",
	"affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=kubernetes.io/hostname",
	"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname",
	"topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
	"topologySpreadConstraints[0].labelSelector.matchLabels.app\\.kubernetes\\.io/name=landlord",
	"podDisruptionBudget.enabled=true", "podDisruptionBudget.minAvailable=1",
	"metrics.tls.secretName=landlord-metrics-tls",
	"metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prometheus",
	"metrics.prometheusRule.enabled=true", "metrics.prometheusRule.labels.release=prometheus",
	"grafana.dashboards.enabled=true", "grafana.dashboards.labels.team=platform", "grafana.dashboards.annotations.grafana_folder=Landlord",
}

func TestTheChartPassesHelmLint(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []string
	}{
		{"with its defaults", nil},
		{"with the gcs store and a PodDisruptionBudget", []string{"config.secrets.store.backend=gcs", "replicas=2", "podDisruptionBudget.enabled=true"}},
		{"with every value on", everyValueOn},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"lint", "--strict", filepath.Join(root, "charts", "landlord"), "--namespace", "landlord-system", "--kube-version", kubeVersion}
			for _, v := range c.values {
				args = append(args, "--set", v)
			}
			out := run(t, nil, helmPath(t), args...)
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint:\n%s", out)
			}
		})
	}
}

func TestTheChartRendersEveryValue(t *testing.T) {
	objects := byKey(t, render(t, filepath.Join(root, "charts", "landlord"), everyValueOn...))
	for _, k := range []string{
		"Deployment/landlord-system/landlord-controller-manager",
		"Deployment/landlord-system/landlord-controller-manager-eu-1",
		"PodDisruptionBudget/landlord-system/landlord-controller-manager",
		"ServiceMonitor/landlord-system/landlord-controller-manager-metrics",
		"ServiceAccount/landlord-system/landlord-metrics-scraper",
		"Secret/landlord-system/landlord-metrics-scraper-token",
		"ClusterRoleBinding//landlord-metrics-scraper",
		"PrometheusRule/landlord-system/landlord",
		"ConfigMap/landlord-system/landlord-dashboard",
		"ClusterRole//landlord-view",
		"ClusterRole//landlord-edit",
		"ClusterRole//landlord-claimer",
		"CustomResourceDefinition//tenants.tenancy.landlord.dev",
	} {
		t.Run("helm template with every value on renders "+k, func(t *testing.T) {
			if _, ok := objects[k]; !ok {
				t.Errorf("%s is not rendered", k)
			}
		})
	}
	t.Run("helm template with every value on leaves out the file store's claim, which the gcs store does not use", func(t *testing.T) {
		if _, ok := objects["PersistentVolumeClaim/landlord-system/landlord-secrets"]; ok {
			t.Error("the claim is rendered for the gcs store")
		}
	})
}

// TestTheServiceMonitorScrapesWithATokenFromASecret checks what the operator's metrics endpoint
// needs of a scraper: a bearer token the API server authenticates (a TokenReview) that may GET
// /metrics (a SubjectAccessReview), over HTTPS.
func TestTheServiceMonitorScrapesWithATokenFromASecret(t *testing.T) {
	objects := byKey(t, render(t, filepath.Join(root, "charts", "landlord"), "metrics.serviceMonitor.enabled=true"))
	monitor := objects["ServiceMonitor/landlord-system/landlord-controller-manager-metrics"]
	endpoints, _ := field(monitor, "spec", "endpoints").([]any)
	if len(endpoints) != 1 {
		t.Fatalf("the ServiceMonitor has %d endpoints, want 1", len(endpoints))
	}
	endpoint := endpoints[0].(map[string]any)
	secretName := str(field(endpoint, "authorization", "credentials", "name"))
	secret := objects["Secret/landlord-system/"+secretName]
	binding := objects["ClusterRoleBinding//landlord-metrics-scraper"]
	reader := objects["ClusterRole//landlord-metrics-reader"]
	for _, c := range []struct {
		name string
		ok   bool
		got  any
	}{
		{"the endpoint sends a bearer token", field(endpoint, "authorization", "type") == "Bearer", field(endpoint, "authorization")},
		{"the token is read from a key of a Secret, not from a file of Prometheus's", field(endpoint, "bearerTokenFile") == nil && field(endpoint, "authorization", "credentials", "key") == "token", endpoint},
		{"the Secret is the chart's, a ServiceAccount token Kubernetes fills in", secret != nil && secret["type"] == "kubernetes.io/service-account-token", secret},
		{"the token's ServiceAccount is bound to the role that may GET /metrics", binding != nil &&
			field(binding, "roleRef", "name") == "landlord-metrics-reader" &&
			field(binding["subjects"].([]any)[0].(map[string]any), "name") == field(secret, "metadata", "annotations", "kubernetes.io/service-account.name"), binding},
		{"that role grants GET on /metrics", reader != nil && cmp.Equal(field(reader["rules"].([]any)[0].(map[string]any), "nonResourceURLs"), []any{"/metrics"}), reader},
		{"the endpoint is scraped over HTTPS, the operator's port", endpoint["scheme"] == "https" && endpoint["port"] == "https", endpoint},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok {
				t.Errorf("got %v", c.got)
			}
		})
	}
}

// TestTheAggregatedRolesCoverEveryKind: whoever is bound to view reads every kind of Landlord's
// and its status, whoever is bound to edit writes every kind and never a status.
func TestTheAggregatedRolesCoverEveryKind(t *testing.T) {
	objects := byKey(t, render(t, filepath.Join(root, "charts", "landlord")))
	rules := func(role string) (resources map[string][]any) {
		resources = map[string][]any{}
		obj, ok := objects["ClusterRole//"+role]
		if !ok {
			t.Fatalf("ClusterRole %s is not rendered", role)
		}
		for _, r := range obj["rules"].([]any) {
			rule := r.(map[string]any)
			for _, res := range rule["resources"].([]any) {
				resources[str(res)] = rule["verbs"].([]any)
			}
		}
		return resources
	}
	view, edit, claimer := rules("landlord-view"), rules("landlord-edit"), rules("landlord-claimer")
	for _, c := range []struct {
		role, label string
	}{
		{"landlord-view", "rbac.authorization.k8s.io/aggregate-to-view"},
		{"landlord-view", "rbac.authorization.k8s.io/aggregate-to-edit"},
		{"landlord-edit", "rbac.authorization.k8s.io/aggregate-to-edit"},
		{"landlord-edit", "rbac.authorization.k8s.io/aggregate-to-admin"},
	} {
		t.Run(c.role+" is aggregated by its label "+c.label, func(t *testing.T) {
			if got := field(objects["ClusterRole//"+c.role], "metadata", "labels", c.label); got != "true" {
				t.Errorf("label %s is %v", c.label, got)
			}
		})
	}
	t.Run("landlord-claimer is aggregated into no role", func(t *testing.T) {
		for label := range objects["ClusterRole//landlord-claimer"]["metadata"].(map[string]any)["labels"].(map[string]any) {
			if strings.HasPrefix(label, "rbac.authorization.k8s.io/aggregate-to-") {
				t.Errorf("landlord-claimer carries %s", label)
			}
		}
	})
	for _, name := range policy.CRDNames {
		plural, _, _ := strings.Cut(name, ".")
		t.Run("view reads "+plural+" and their status, edit (or, for claims, claimer; for requests, the tenant's admins) writes "+plural, func(t *testing.T) {
			if !slices.Equal(view[plural], []any{"get", "list", "watch"}) || !slices.Equal(view[plural+"/status"], []any{"get", "list", "watch"}) {
				t.Errorf("landlord-view grants %v on %s and %v on its status", view[plural], plural, view[plural+"/status"])
			}
			if plural == "backuprequests" || plural == "restorerequests" {
				// A tenant's own, made by its admins: whoever may edit a namespace is not for
				// that the admin of the tenant whose data a restore replaces.
				if _, ok := edit[plural]; ok {
					t.Errorf("landlord-edit, in every namespace's edit and admin roles, grants %v on %s", edit[plural], plural)
				}
				return
			}
			if plural == "tenantclaims" {
				// Each claim bound is a new tenant: claiming is granted on its own.
				if _, ok := edit[plural]; ok {
					t.Errorf("landlord-edit, in every namespace's edit and admin roles, grants %v on tenantclaims", edit[plural])
				}
				if !slices.Contains(claimer[plural], any("create")) || !slices.Contains(claimer[plural], any("delete")) {
					t.Errorf("landlord-claimer grants %v on %s", claimer[plural], plural)
				}
				return
			}
			if !slices.Contains(edit[plural], any("create")) || !slices.Contains(edit[plural], any("delete")) {
				t.Errorf("landlord-edit grants %v on %s", edit[plural], plural)
			}
			if _, ok := edit[plural+"/status"]; ok {
				t.Errorf("landlord-edit writes %s/status, which is the operator's", plural)
			}
		})
	}
}

// The chart's alerts select the operator's series by the release's namespace: rendered into
// another namespace than landlord-system, they name it alone, and pass test/alerts' scenarios
// with every series scraped from it.
func TestTheChartsAlertsSelectTheReleaseNamespace(t *testing.T) {
	const namespace = "platform-landlord"
	out, err := renderErr(t, filepath.Join(root, "charts", "landlord"), namespace, "metrics.prometheusRule.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	var rule object
	for _, obj := range decode(t, out) {
		if obj["kind"] == "PrometheusRule" {
			rule = obj
		}
	}
	if rule == nil {
		t.Fatal("the chart rendered no PrometheusRule")
	}
	data, err := sigsyaml.Marshal(rule)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := alerts.RuleGroups(data)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(groups), "landlord-system") {
		t.Fatalf("the chart's alerts still name landlord-system:\n%s", grepLines(string(groups), "landlord-system"))
	}
	files, _ := filepath.Glob(filepath.Join(root, "test", "alerts", "testdata", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no scenarios in test/alerts/testdata")
	}
	for _, file := range files {
		f, err := alerts.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) { alerts.Run(t, groups, f, namespace) })
	}
}
