// Command chart generates the parts of the Helm chart (charts/landlord) that config/ already
// says, so that the chart cannot drift from what `kubectl apply -k config/default` installs:
//
//   - templates/generated-crds.yaml: the CRDs of config/default as templates, so that `helm
//     upgrade` upgrades them (cert-manager's way), switched by crds.enabled, and kept by `helm
//     uninstall` while crds.keep;
//   - templates/generated-*.yaml: every other object of config/default (RBAC, admission policies,
//     the metrics Service, ...) with Helm's labels added, in the release's namespace;
//   - templates/generated-servicemonitor.yaml and -prometheusrule.yaml from config/prometheus,
//     when it exists, each switched by its value (metrics.serviceMonitor.enabled, with the
//     scraper's ServiceAccount, token Secret and binding; metrics.prometheusRule.enabled);
//   - dashboards/: config/grafana's dashboards, which templates/grafana-dashboards.yaml puts in
//     ConfigMaps for Grafana's sidecar;
//   - values.yaml: hack/chart/values.yaml, then config/manager/landlord.yaml (comments and all)
//     as the value `config`;
//   - values.schema.json: hack/chart/values.schema.json, with the schema of `config` made from
//     the operator's configuration types (internal/config), so a typo in any value is refused
//     before anything is applied, as the operator refuses one in its file.
//
// The objects the chart parameterises (the Deployment, the store's PersistentVolumeClaim and the
// configuration's ConfigMap) are templates written by hand in charts/landlord/templates, and the
// Namespace is Helm's release namespace: config/'s namespace, landlord-system, becomes the
// release's wherever config/ names it (metadata, binding subjects, the operator's identity in the
// admission policies). test/install compares what the whole chart renders in landlord-system with
// config/default. Run by `make chart`.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/landlord-dev/landlord/hack/kustomize/build"
	sigsyaml "sigs.k8s.io/yaml"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := generate(*root); err != nil {
		log.Fatal(err)
	}
}

// Handwritten names the objects of config/default that the chart's own templates render, with
// what values parameterise in them.
var Handwritten = map[string]string{
	"Namespace/landlord-system":              "Helm's release namespace",
	"Deployment/landlord-controller-manager": "templates/deployment.yaml",
	"PersistentVolumeClaim/landlord-secrets": "templates/pvc.yaml",
	"ConfigMap/landlord-config":              "templates/configmap.yaml",
}

// Switched says which value switches an object of config/prometheus: the PrometheusRule its
// own, everything else (the ServiceMonitor and the scraper identity it names) the
// ServiceMonitor's. Both need the prometheus-operator's CRDs.
func Switched(obj map[string]any) string {
	if obj["kind"] == "PrometheusRule" {
		return "metrics.prometheusRule"
	}
	return "metrics.serviceMonitor"
}

// Namespace is config/'s namespace for the operator, which the chart replaces with the release's.
const Namespace = "landlord-system"

// Key is how Handwritten names an object; a generated ConfigMap loses its content hash.
func Key(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if kind == "ConfigMap" && strings.HasPrefix(name, "landlord-config-") {
		name = "landlord-config"
	}
	return kind + "/" + name
}

func generate(root string) error {
	chart := filepath.Join(root, "charts", "landlord")
	objects, err := kustomize(filepath.Join(root, "config", "default"))
	if err != nil {
		return err
	}
	// Whatever an earlier run generated goes, so an object removed from config/ leaves the chart.
	generated, _ := filepath.Glob(filepath.Join(chart, "templates", "generated-*.yaml"))
	dashboards, _ := filepath.Glob(filepath.Join(chart, "dashboards", "*.json"))
	for _, f := range append(generated, dashboards...) {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	// The chart's CRDs are templates now; a crds/ directory Helm would install besides them goes.
	if err := os.RemoveAll(filepath.Join(chart, "crds")); err != nil {
		return err
	}

	files := map[string][]string{}
	for _, obj := range objects {
		kind, _ := obj["kind"].(string)
		if _, ok := Handwritten[Key(obj)]; ok {
			continue
		}
		if kind == "CustomResourceDefinition" {
			doc, err := CRDTemplate(obj)
			if err != nil {
				return err
			}
			files["generated-crds.yaml"] = append(files["generated-crds.yaml"], doc)
			continue
		}
		doc, err := Template(obj, "")
		if err != nil {
			return err
		}
		file := templateFile(obj)
		files[file] = append(files[file], doc)
	}

	monitoring, err := prometheusObjects(root)
	if err != nil {
		return err
	}
	inDefault := map[string]bool{}
	for _, obj := range objects {
		inDefault[Key(obj)] = true
	}
	for _, obj := range monitoring {
		if inDefault[Key(obj)] {
			continue // config/prometheus may name the metrics Service config/default installs.
		}
		value := Switched(obj)
		doc, err := Template(obj, value)
		if err != nil {
			return err
		}
		if obj["kind"] == "ServiceMonitor" {
			if doc, err = verifiedTLS(doc); err != nil {
				return err
			}
		}
		doc = fmt.Sprintf("{{- if .Values.%s.enabled }}\n%s{{- end }}\n", value, doc)
		file := "generated-" + strings.ToLower(strings.TrimPrefix(value, "metrics.")) + ".yaml"
		files[file] = append(files[file], doc)
	}

	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		text := header("config/") + strings.Join(files[name], "---\n")
		if err := os.WriteFile(filepath.Join(chart, "templates", name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := copyDashboards(root, chart); err != nil {
		return err
	}
	if err := writeSchema(root, chart); err != nil {
		return err
	}
	return writeValues(root, chart)
}

// skipVerify is how config/prometheus's ServiceMonitor trusts the operator's certificate, which
// it cannot verify: the operator makes it for itself at start-up.
const skipVerify = "    tlsConfig:\n      insecureSkipVerify: true\n"

// verifiedTLS makes the ServiceMonitor verify the certificate metrics.tls.secretName gives the
// operator, by the Secret's ca.crt and the metrics Service's name, and skip verifying only when
// there is none.
func verifiedTLS(doc string) (string, error) {
	if strings.Count(doc, skipVerify) != 1 {
		return "", fmt.Errorf("config/prometheus's ServiceMonitor no longer has one endpoint with tlsConfig.insecureSkipVerify: true; hack/chart replaces it when metrics.tls.secretName is set")
	}
	return strings.Replace(doc, skipVerify, `    tlsConfig:
      {{- with .Values.metrics.tls.secretName }}
      ca:
        secret:
          name: {{ . }}
          key: ca.crt
      serverName: landlord-controller-manager-metrics.{{ $.Release.Namespace }}.svc
      {{- else }}
      insecureSkipVerify: true
      {{- end }}
`, 1), nil
}

// copyDashboards copies config/grafana's dashboards into the chart, which reads them with
// .Files.Get: their text ({{instance}} in a legend) reaches Grafana as written.
func copyDashboards(root, chart string) error {
	files, _ := filepath.Glob(filepath.Join(root, "config", "grafana", "*.json"))
	if len(files) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(chart, "dashboards"), 0o755); err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(chart, "dashboards", filepath.Base(f)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func header(from string) string {
	return "# Generated from " + from + " by hack/chart (make chart): edit the source, not this file.\n"
}

// templateFile groups the generated objects by what they are about.
func templateFile(obj map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	switch {
	case strings.HasPrefix(apiVersion, "rbac.authorization.k8s.io/") || kind == "ServiceAccount":
		return "generated-rbac.yaml"
	case strings.HasPrefix(apiVersion, "admissionregistration.k8s.io/"):
		return "generated-admission-policies.yaml"
	default:
		return "generated-" + strings.ToLower(kind) + ".yaml"
	}
}

// Sentinels stand where template actions go once the object is marshalled.
const (
	labelsSentinel      = "zz.landlord.dev/helm-labels"
	annotationsSentinel = "zz-landlord-helm-annotations"
	keepSentinel        = "zz-landlord-helm-keep"
	namespaceSentinel   = "zzlandlordreleasenamespacezz"
)

// helmAction matches a template action in config/'s text (a PrometheusRule's {{ $labels.x }}),
// which Helm must print rather than run.
var helmAction = regexp.MustCompile(`\{\{.*?\}\}`)

// Template is one object as a Helm template: config/'s content, Helm's labels added (and the
// value's extra labels for a switched kind), the ServiceAccount's annotations from values.
func Template(obj map[string]any, value string) (string, error) {
	obj = deepCopy(obj)
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		return "", fmt.Errorf("%s has no metadata", Key(obj))
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	// Objects Landlord manages itself keep their managed-by label: the operator's cache
	// selects on it.
	include := "landlord.labels"
	if _, ok := labels["app.kubernetes.io/managed-by"]; ok {
		include = "landlord.chartLabels"
	}
	labels[labelsSentinel] = ""
	serviceAccount := Key(obj) == "ServiceAccount/landlord-controller-manager"
	if serviceAccount {
		if _, ok := meta["annotations"]; ok {
			return "", errors.New("config/rbac's ServiceAccount has annotations: the chart sets them from serviceAccount.annotations")
		}
		meta[annotationsSentinel] = ""
	}
	// Template actions in string values become tokens without spaces before marshalling, so
	// that the marshaller's line folding can never split one (the brace keeps a value that starts
	// with an action quoted, as the action itself would); each is put back escaped.
	// config/'s namespace, wherever a string names it (metadata, a binding's subject, the
	// operator's identity in a policy's expression), becomes the release's.
	var actions []string
	obj = mapStrings(obj, func(s string) string {
		s = helmAction.ReplaceAllStringFunc(s, func(action string) string {
			actions = append(actions, action)
			return fmt.Sprintf("{zzlandlordhelmaction%dzz}", len(actions)-1)
		})
		return releaseNamespace.ReplaceAllString(s, namespaceSentinel)
	}).(map[string]any)
	data, err := sigsyaml.Marshal(obj)
	if err != nil {
		return "", err
	}
	text := strings.ReplaceAll(string(data), namespaceSentinel, "{{ .Release.Namespace }}")
	for i := len(actions) - 1; i >= 0; i-- {
		text = strings.ReplaceAll(text, fmt.Sprintf("{zzlandlordhelmaction%dzz}", i), "{{`"+actions[i]+"`}}")
	}
	labelLines := `    {{- include "` + include + `" . | nindent 4 }}`
	if value != "" {
		labelLines += "\n    {{- with .Values." + value + ".labels }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}"
	}
	text = replaceLine(text, "    "+labelsSentinel+`: ""`, labelLines)
	if serviceAccount {
		text = replaceLine(text, "  "+annotationsSentinel+`: ""`,
			"  {{- with .Values.serviceAccount.annotations }}\n  annotations: {{- toYaml . | nindent 4 }}\n  {{- end }}")
	}
	if strings.Contains(text, "zz") && (strings.Contains(text, labelsSentinel) || strings.Contains(text, annotationsSentinel)) {
		return "", fmt.Errorf("%s: a sentinel was not replaced", Key(obj))
	}
	return text, nil
}

// releaseNamespace matches config/'s namespace as a whole name.
var releaseNamespace = regexp.MustCompile(`\b` + Namespace + `\b`)

// CRDTemplate is a CRD as a Helm template: config/'s CRD as it is (its text is never run by
// Helm: a description may hold template text, and no namespace in it is the operator's), with
// Helm's labels, and helm.sh/resource-policy: keep only while crds.keep.
func CRDTemplate(obj map[string]any) (string, error) {
	obj = deepCopy(obj)
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations["helm.sh/resource-policy"] != "keep" {
		return "", fmt.Errorf("%s lacks the annotation helm.sh/resource-policy: keep (its +kubebuilder:metadata:annotations marker)", Key(obj))
	}
	delete(annotations, "helm.sh/resource-policy")
	annotations[keepSentinel] = ""
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	labels[labelsSentinel] = ""
	if strings.Contains(fmt.Sprint(obj), "{{") {
		return "", fmt.Errorf("%s holds template text ({{), which Helm would run", Key(obj))
	}
	data, err := sigsyaml.Marshal(obj)
	if err != nil {
		return "", err
	}
	text := replaceLine(string(data), "    "+labelsSentinel+`: ""`, `    {{- include "landlord.labels" . | nindent 4 }}`)
	text = replaceLine(text, "    "+keepSentinel+`: ""`, "    {{- if .Values.crds.keep }}\n    helm.sh/resource-policy: keep\n    {{- end }}")
	if strings.Contains(text, keepSentinel) || strings.Contains(text, labelsSentinel) {
		return "", fmt.Errorf("%s: a sentinel was not replaced", Key(obj))
	}
	return "{{- if .Values.crds.enabled }}\n" + text + "{{- end }}\n", nil
}

func replaceLine(text, line, with string) string {
	return strings.Replace(text, line+"\n", with+"\n", 1)
}

func deepCopy(obj map[string]any) map[string]any {
	data, _ := sigsyaml.Marshal(obj)
	out := map[string]any{}
	_ = sigsyaml.Unmarshal(data, &out)
	return out
}

// prometheusObjects are config/prometheus's objects, when the directory exists.
func prometheusObjects(root string) ([]map[string]any, error) {
	dir := filepath.Join(root, "config", "prometheus")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err == nil {
		return kustomize(dir)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var objects []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := Decode(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		objects = append(objects, docs...)
	}
	return objects, nil
}

// kustomize builds the kustomization in dir with kustomize's library, as kubectl kustomize does.
func kustomize(dir string) ([]map[string]any, error) {
	out, err := build.Dir(dir)
	if err != nil {
		return nil, err
	}
	return Decode(out)
}

// Decode splits a YAML stream into objects, skipping empty documents.
func Decode(data []byte) ([]map[string]any, error) {
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objects []map[string]any
	for {
		obj := map[string]any{}
		if err := decoder.Decode(&obj); errors.Is(err, io.EOF) {
			return objects, nil
		} else if err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			objects = append(objects, obj)
		}
	}
}

// writeValues is hack/chart/values.yaml, then the operator's configuration file as `config`.
func writeValues(root, chart string) error {
	head, err := os.ReadFile(filepath.Join(root, "hack", "chart", "values.yaml"))
	if err != nil {
		return err
	}
	config, err := os.ReadFile(filepath.Join(root, "config", "manager", "landlord.yaml"))
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header("hack/chart/values.yaml and config/manager/landlord.yaml"))
	b.Write(head)
	b.WriteString("\n# The operator's configuration file, config/manager/landlord.yaml, mounted at\n" +
		"# /etc/landlord/landlord.yaml. secrets.store.backend chooses the store: \"file\" keeps it on the\n" +
		"# PersistentVolumeClaim above, one replica; \"gcs\" and \"url\" need no volume and allow replicas > 1.\n" +
		"# In another namespace than landlord-system, controller.identity and\n" +
		"# databases.credentialsNamespace follow the release's while they name landlord-system.\n" +
		"config:\n")
	for _, line := range strings.Split(strings.TrimRight(string(config), "\n"), "\n") {
		if line == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("  " + line + "\n")
	}
	return os.WriteFile(filepath.Join(chart, "values.yaml"), []byte(b.String()), 0o644)
}

// mapStrings returns v with f applied to every string value in it (not to keys).
func mapStrings(v any, f func(string) string) any {
	switch v := v.(type) {
	case string:
		return f(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = mapStrings(e, f)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = mapStrings(e, f)
		}
		return out
	default:
		return v
	}
}
