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
)

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
	// README's kubectl create namespace): the chart does not carry it.
	if _, ok := want["Namespace//landlord-system"]; !ok {
		t.Fatal("config/default has no Namespace landlord-system; the chart's namespace check is stale")
	}
	delete(want, "Namespace//landlord-system")
	// The chart's defaults are config/default's but for the image tag (the chart's appVersion).
	rendered := render(t, filepath.Join(root, "charts", "landlord"), "image.repository=landlord", "image.tag=dev")
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
	t.Run("every object but Landlord's own policies carries Helm's labels", func(t *testing.T) {
		for _, obj := range rendered {
			k := key(obj)
			if obj["kind"] == "CustomResourceDefinition" {
				continue // crds/ is installed as it is, never templated.
			}
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
				if image := container(t, objects)["image"]; image != "ghcr.io/landlord-dev/landlord:v0.1.0" {
					t.Errorf("image %v, want the release's: ghcr.io/landlord-dev/landlord:v<appVersion>", image)
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
		{"another namespace than landlord-system is refused", "ops", "install Landlord into the namespace landlord-system", nil},
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

// configFile is the operator's configuration file as the chart's ConfigMap holds it.
func configFile(t *testing.T, objects map[string]object) map[string]any {
	t.Helper()
	cm := objects["ConfigMap/landlord-system/landlord-config"]
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

func TestTheChartPassesHelmLint(t *testing.T) {
	for name, values := range map[string]string{
		"with its defaults":                            "",
		"with the gcs store and a PodDisruptionBudget": "config.secrets.store.backend=gcs,replicas=2,podDisruptionBudget.enabled=true",
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", "--strict", filepath.Join(root, "charts", "landlord"), "--namespace", "landlord-system", "--kube-version", kubeVersion}
			if values != "" {
				args = append(args, "--set", values)
			}
			out := run(t, nil, helmPath(t), args...)
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint:\n%s", out)
			}
		})
	}
}
