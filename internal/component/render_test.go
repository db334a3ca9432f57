package component_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/component"
)

const webManifests = `{{- define "web.labels" -}}
app.kubernetes.io/name: {{ .Component.Name }}
app.kubernetes.io/version: {{ .Component.Version | quote }}
{{- end -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Component.Name }}
  labels:
    {{- include "web.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Component.Name }}
  template:
    metadata:
      labels:
        {{- include "web.labels" . | nindent 8 }}
    spec:
      containers:
        - name: web
          image: {{ .Component.ImageRef }}
          ports:
            - containerPort: {{ .Values.port }}
          env:
            - name: TENANT
              value: {{ .Tenant.Name | quote }}
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef:
                  name: {{ .Databases.app.SecretName }}
                  key: url
            - name: POOL_SIZE
              value: {{ .PgBouncer.DefaultPoolSize | quote }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Component.Name }}
spec:
  selector:
    app.kubernetes.io/name: {{ .Component.Name }}
  ports:
    - port: 80
      targetPort: {{ .Values.port }}
---
# What the application reads at start.
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Component.Name }}-settings
  namespace: {{ .Tenant.Namespace }}
data:
  organization: {{ .Tenant.Organization | quote }}
  contact: {{ .Tenant.Email | quote }}
  plan: {{ .Tenant.Labels.plan | default "standard" | quote }}
  cache-engine: {{ .Databases.cache.Engine | quote }}
  cache-secret: {{ .Databases.cache.SecretName | quote }}
  features: {{ keys .Values.features | join "," | quote }}
{{- if .Values.debug }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Component.Name }}-debug
{{- end }}
`

func testTenant() *tenancyv1alpha1.Tenant {
	t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", Labels: map[string]string{"plan": "enterprise"}}}
	t.Spec.Organization = "Acme Corp"
	t.Spec.Email = "ops@acme.example.com"
	t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	t.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: "cache"}}
	t.Spec.PgBouncer = &tenancyv1alpha1.PgBouncer{DefaultPoolSize: 25}
	return t
}

func testTemplate(manifests string) *tenancyv1alpha1.ComponentTemplate {
	return &tenancyv1alpha1.ComponentTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1.2.0"},
		Spec: tenancyv1alpha1.ComponentTemplateSpec{
			Component: "web",
			Version:   "1.2.0",
			Image:     "registry.example.com/web",
			Manifests: manifests,
			Values:    &apiextensionsv1.JSON{Raw: []byte(`{"replicas": 2, "port": 8080, "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}, "features": {"search": true, "export": false}}`)},
		},
	}
}

// render renders manifests for the test tenant with the given values.
func render(t *testing.T, manifests string, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	tmpl := testTemplate(manifests)
	return component.Render(tmpl, component.NewInput(testTenant(), "tenant-acme", tmpl), values)
}

// renderValue renders one printed expression into a ConfigMap and returns what it printed.
func renderValue(t *testing.T, expr string, values map[string]any) (string, error) {
	t.Helper()
	objs, err := render(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: '"+expr+"'\n", values)
	if err != nil {
		return "", err
	}
	v, _, _ := unstructured.NestedString(objs[0].Object, "data", "v")
	return v, nil
}

func mustField(t *testing.T, obj *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if err != nil || !found {
		t.Fatalf("%s %s: %s not found (err %v)", obj.GetKind(), obj.GetName(), strings.Join(path, "."), err)
	}
	return v
}

func TestRenderingARealisticTemplate(t *testing.T) {
	tmpl := testTemplate(webManifests)
	defaults, err := component.DecodeValues("template web-1.2.0", tmpl.Spec.Values)
	if err != nil {
		t.Fatal(err)
	}
	values := component.MergeValues(defaults, map[string]any{"replicas": int64(3)})
	objs, err := component.Render(tmpl, component.NewInput(testTenant(), "tenant-acme", tmpl), values)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("it renders the objects in document order, skipping the section that is off", func(t *testing.T) {
		var got []string
		for _, o := range objs {
			got = append(got, component.InventoryKey(o))
		}
		want := []string{"apps/Deployment/web", "/Service/web", "/ConfigMap/web-settings"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	if len(objs) != 3 {
		t.FailNow()
	}
	deploy, svc, cm := objs[0], objs[1], objs[2]
	container := mustField(t, deploy, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	env := map[string]any{}
	for _, e := range container["env"].([]any) {
		env[e.(map[string]any)["name"].(string)] = e
	}

	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"the tenant's values win over the template's defaults", mustField(t, deploy, "spec", "replicas"), int64(3)},
		{"the template's defaults fill what the tenant leaves out", mustField(t, svc, "spec", "ports").([]any)[0].(map[string]any)["targetPort"], int64(8080)},
		{"the image is pinned to the component version", container["image"], "registry.example.com/web:1.2.0"},
		{"a named template included with nindent lands at the right depth", deploy.GetLabels(), map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/version": "1.2.0"}},
		{"the database secret name comes from the tenant's database", env["DATABASE_URL"].(map[string]any)["valueFrom"].(map[string]any)["secretKeyRef"].(map[string]any)["name"], "db-app"},
		{"the pooler size comes from the tenant spec", env["POOL_SIZE"].(map[string]any)["value"], "25"},
		{"the tenant name is available", env["TENANT"].(map[string]any)["value"], "acme"},
		{"toYaml renders nested values as YAML", container["resources"], map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}},
		{"the tenant namespace is available", cm.GetNamespace(), "tenant-acme"},
		{"the organization is available", mustField(t, cm, "data", "organization"), "Acme Corp"},
		{"the contact email is available", mustField(t, cm, "data", "contact"), "ops@acme.example.com"},
		{"the tenant's labels are available", mustField(t, cm, "data", "plan"), "enterprise"},
		{"a MySQL database has its engine", mustField(t, cm, "data", "cache-engine"), "mysql"},
		{"a MySQL database has its secret", mustField(t, cm, "data", "cache-secret"), "db-cache"},
		{"map keys come out sorted, so the output never changes between renders", mustField(t, cm, "data", "features"), "export,search"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}

	t.Run("a section turned on by a value is rendered", func(t *testing.T) {
		objs, err := component.Render(tmpl, component.NewInput(testTenant(), "tenant-acme", tmpl), component.MergeValues(values, map[string]any{"debug": true}))
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 4 || objs[3].GetName() != "web-debug" {
			t.Errorf("got %d objects", len(objs))
		}
	})
	t.Run("rendering twice gives equal objects", func(t *testing.T) {
		again, err := component.Render(tmpl, component.NewInput(testTenant(), "tenant-acme", tmpl), values)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(objs, again) {
			t.Error("two renders differ")
		}
	})
	t.Run("a template that changes its values in place leaves the caller's alone", func(t *testing.T) {
		values := map[string]any{"nested": map[string]any{"a": "x"}}
		if _, err := renderValue(t, `{{ $_ := set .Values.nested "a" "changed" }}{{ $_ := unset .Values "nested" }}`, values); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(values, map[string]any{"nested": map[string]any{"a": "x"}}) {
			t.Errorf("values changed: %#v", values)
		}
	})
	t.Run("rendering leaves the values untouched", func(t *testing.T) {
		if !reflect.DeepEqual(defaults["replicas"], int64(2)) || values["replicas"] != int64(3) {
			t.Errorf("defaults %v, values %v", defaults["replicas"], values["replicas"])
		}
	})
}

func TestNumbersDecodeAsTheAPIServerReturnsThem(t *testing.T) {
	objs, err := render(t, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ .Values.replicas }}
  progressDeadlineSeconds: 600
  minReadySeconds: {{ .Values.big }}
  template:
    metadata:
      annotations:
        ratio: "0.5"
    spec:
      terminationGracePeriodSeconds: {{ add .Values.replicas 1 }}
  x-ratio: 0.25
`, map[string]any{"replicas": int64(3), "big": int64(10000000)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path []string
		want any
	}{
		{"a whole number from the values is an int64", []string{"spec", "replicas"}, int64(3)},
		{"a whole number written in the template is an int64", []string{"spec", "progressDeadlineSeconds"}, int64(600)},
		{"a large whole number is not printed in scientific notation", []string{"spec", "minReadySeconds"}, int64(10000000)},
		{"arithmetic in the template gives an int64", []string{"spec", "template", "spec", "terminationGracePeriodSeconds"}, int64(4)},
		{"a fraction is a float64", []string{"spec", "x-ratio"}, 0.25},
		{"a quoted number stays a string", []string{"spec", "template", "metadata", "annotations", "ratio"}, "0.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustField(t, objs[0], tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
		})
	}
}

func TestMissingValues(t *testing.T) {
	values := map[string]any{"replicas": int64(0), "name": "", "nested": map[string]any{"a": "x"}}
	for _, tc := range []struct {
		name, expr, want string
	}{
		{"a missing value with a default gives the default", `{{ .Values.missing | default 3 }}`, "3"},
		{"a missing value alone renders as nothing", `{{ .Values.missing }}`, ""},
		{"a missing value under a missing map renders as nothing", `{{ .Values.missing.deeper.still }}`, ""},
		{"a missing value under a missing map takes a default", `{{ .Values.missing.deeper | default "d" }}`, "d"},
		{"a missing key of a present map renders as nothing", `{{ .Values.nested.b }}`, ""},
		{"a present nested value renders", `{{ .Values.nested.a }}`, "x"},
		{"a database the tenant does not have renders as nothing", `{{ .Databases.none.SecretName }}`, ""},
		{"a label the tenant does not have renders as nothing", `{{ .Tenant.Labels.none }}`, ""},
		{"a missing value inside a condition renders as nothing", `{{ if true }}{{ .Values.missing }}{{ end }}`, ""},
		{"a missing value in a named template renders as nothing", `{{ define "x" }}{{ .Values.missing }}{{ end }}{{ include "x" . }}`, ""},
		{"text an author writes is left alone", `<no value>`, "<no value>"},
		{"a variable declaration prints nothing", `{{ $r := .Values.replicas }}{{ $r }}`, "0"},
		{"zero is a value, not a missing one", `{{ .Values.replicas }}`, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderValue(t, tc.expr, values)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		errMsg string
	}{
		{"a missing required value fails with the author's message", map[string]any{}, "set values.domain to the tenant's host name"},
		{"an empty required value fails with the author's message", map[string]any{"domain": ""}, "set values.domain to the tenant's host name"},
		{"a present required value renders", map[string]any{"domain": "acme.example.com"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderValue(t, `{{ required "set values.domain to the tenant's host name" .Values.domain }}`, tc.values)
			if tc.errMsg == "" {
				if err != nil || got != "acme.example.com" {
					t.Fatalf("got %q, %v", got, err)
				}
				return
			}
			if err == nil || !strings.HasSuffix(err.Error(), tc.errMsg) {
				t.Fatalf("got error %v, want one ending in %q", err, tc.errMsg)
			}
			if !strings.HasPrefix(err.Error(), "component web version 1.2.0, line 6: ") {
				t.Errorf("error %q does not name the component and line", err)
			}
		})
	}
	t.Run("a required database the tenant does not have fails", func(t *testing.T) {
		_, err := renderValue(t, `{{ required "this component needs a database named reports" .Databases.reports.SecretName }}`, nil)
		if err == nil || !strings.Contains(err.Error(), "needs a database named reports") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("zero and false are values", func(t *testing.T) {
		got, err := renderValue(t, `{{ required "r" .Values.replicas }} {{ required "d" .Values.debug }}`, map[string]any{"replicas": int64(0), "debug": false})
		if err != nil || got != "0 false" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
}

func TestTemplateErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name      string
		manifests string
		line      int
		cause     string
	}{
		{
			name:      "a syntax error reports its line",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Values.a }\n",
			line:      6,
			cause:     "unexpected",
		},
		{
			name:      "an unclosed block reports where the template ends",
			manifests: "apiVersion: v1\nkind: ConfigMap\n{{ if .Values.a }}\nmetadata:\n  name: x\n",
			line:      6,
			cause:     "unexpected EOF",
		},
		{
			name:      "an execution error reports its line",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: ok\n  b: {{ index .Values.replicas 1 }}\n",
			line:      7,
			cause:     "can't index item of type int64",
		},
		{
			name:      "a misspelt built-in reports its line",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Tenant.Nmae }}\n", //nolint:misspell // the misspelling is the test's input
			line:      4,
			cause:     "can't evaluate field Nmae", //nolint:misspell // the misspelling is the test's input
		},
		{
			name:      "a failure inside an included template reports the line inside it",
			manifests: "{{ define \"host\" }}\n{{ required \"values.domain is required\" .Values.domain }}\n{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  host: {{ include \"host\" . }}\n",
			line:      2,
			cause:     "values.domain is required",
		},
		{
			name:      "fail stops the render with the author's message",
			manifests: "apiVersion: v1\n{{ fail \"this version needs a database named app\" }}\n",
			line:      2,
			cause:     "this version needs a database named app",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.manifests, map[string]any{"replicas": int64(2)})
			var re *component.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a RenderError", err)
			}
			if re.Line != tc.line || re.Document != 0 {
				t.Errorf("line %d document %d, want line %d: %v", re.Line, re.Document, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.cause) {
				t.Errorf("error %q does not say %q", err, tc.cause)
			}
			if re.Component != "web" || re.Version != "1.2.0" {
				t.Errorf("component %q version %q", re.Component, re.Version)
			}
		})
	}
	t.Run("the message names the component, version and line once", func(t *testing.T) {
		_, err := render(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: ok\n  b: {{ index .Values.replicas 1 }}\n", map[string]any{"replicas": int64(2)})
		want := `component web version 1.2.0, line 7: executing "web" at <index .Values.replicas 1>: error calling index: can't index item of type int64`
		if err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	})
	t.Run("a failure inside an included template reads as that template's", func(t *testing.T) {
		_, err := render(t, "{{ define \"host\" }}\n{{ required \"values.domain is required\" .Values.domain }}\n{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  host: {{ include \"host\" . }}\n", nil)
		want := `component web version 1.2.0, line 2: executing "host" at <required "values.domain is required" .Values.domain>: error calling required: values.domain is required`
		if err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	})
	t.Run("a template that includes itself fails instead of exhausting the stack", func(t *testing.T) {
		_, err := render(t, "{{ define \"loop\" }}{{ include \"loop\" . }}{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"loop\" . }}\n", nil)
		if err == nil || !strings.Contains(err.Error(), "nested more than") {
			t.Fatalf("got %v", err)
		}
		if len(err.Error()) > 400 {
			t.Errorf("the message repeats itself for every level: %d bytes", len(err.Error()))
		}
	})
}

func TestFunctionsThatWouldMakeRenderingDependOnTheOutside(t *testing.T) {
	for _, fn := range []string{"env", "expandenv", "getHostByName", "randInt", "randAlphaNum", "uuidv4", "now", "date", "ago", "toDate", "genPrivateKey", "genCA", "derivePassword"} {
		t.Run(fn+" is not available, so a template using it fails to parse", func(t *testing.T) {
			_, err := render(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ "+fn+" \"HOME\" }}\n", nil)
			var re *component.RenderError
			if !errors.As(err, &re) || re.Line != 6 || !strings.Contains(err.Error(), `function "`+fn+`" not defined`) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestHelmFunctions(t *testing.T) {
	values := map[string]any{
		"resources": map[string]any{"limits": map[string]any{"cpu": "1"}},
		"config":    "connections: 10000000\nhosts: [a, b]\n",
		"list":      "- 1\n- 2\n",
	}
	for _, tc := range []struct {
		name, expr, want string
	}{
		{"toYaml renders a map without a trailing newline", `toYaml .Values.resources`, "limits:\n  cpu: \"1\""},
		{"fromYaml reads a map, with whole numbers as integers", `(fromYaml .Values.config).connections`, "10000000"},
		{"fromYamlArray reads a list", `fromYamlArray .Values.list | len`, "2"},
		{"toJson renders JSON", `toJson .Values.resources`, `{"limits":{"cpu":"1"}}`},
		{"indent indents every line", `"a\nb" | indent 2`, "  a\n  b"},
		{"nindent starts with a newline", `"a" | nindent 2`, "\n  a"},
		{"values come out in key order", `values (dict "b" 2 "a" 1 "c" 3) | toJson`, "[1,2,3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// toJson keeps a multi-line result on one line of the rendered YAML.
			objs, err := render(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: {{ ("+tc.expr+") | toString | toJson }}\n", values)
			if err != nil {
				t.Fatal(err)
			}
			if got := mustField(t, objs[0], "data", "v"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestYAMLErrorsNameTheDocument(t *testing.T) {
	for _, tc := range []struct {
		name      string
		manifests string
		document  int
		line      int
		cause     string
	}{
		{
			name:      "invalid YAML reports the document and where it starts",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# the second one\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n   labels: {}\n",
			document:  2,
			line:      7,
			cause:     "yaml: line",
		},
		{
			name:      "a document without kind is refused",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nmetadata:\n  name: b\n",
			document:  2,
			line:      6,
			cause:     "object has no kind",
		},
		{
			name:      "a document without apiVersion is refused",
			manifests: "kind: ConfigMap\nmetadata:\n  name: a\n",
			document:  1,
			line:      1,
			cause:     "object has no apiVersion",
		},
		{
			name:      "a document without a name is refused",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: a-\n",
			document:  1,
			line:      1,
			cause:     "ConfigMap has no metadata.name",
		},
		{
			name:      "a malformed apiVersion is refused",
			manifests: "apiVersion: v1/core/x\nkind: ConfigMap\nmetadata:\n  name: a\n",
			document:  1,
			line:      1,
			cause:     `apiVersion: unexpected GroupVersion string: v1/core/x`,
		},
		{
			name:      "a document that is not an object is refused",
			manifests: "- apiVersion: v1\n  kind: ConfigMap\n",
			document:  1,
			line:      1,
			cause:     "must be a Kubernetes object, not a list",
		},
		{
			name:      "a List is refused",
			manifests: "apiVersion: v1\nkind: List\nmetadata:\n  name: all\nitems: []\n",
			document:  1,
			line:      1,
			cause:     "List is a list",
		},
		{
			name:      "the same object twice is refused",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
			document:  3,
			line:      11,
			cause:     "ConfigMap a is also rendered by document 1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.manifests, nil)
			var re *component.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a RenderError", err)
			}
			if re.Document != tc.document || re.Line != tc.line {
				t.Errorf("document %d line %d, want document %d line %d: %v", re.Document, re.Line, tc.document, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.cause) {
				t.Errorf("error %q does not say %q", err, tc.cause)
			}
		})
	}
	t.Run("the message says the line is in the rendered output", func(t *testing.T) {
		_, err := render(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nmetadata:\n  name: b\n", nil)
		want := "component web version 1.2.0, rendered document 2 (output line 6): object has no kind"
		if err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	})
}

func TestDocumentSplitting(t *testing.T) {
	for _, tc := range []struct {
		name      string
		manifests string
		want      []string
	}{
		{"empty and comment-only documents are skipped", "---\n\n---\n# nothing here\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n   \n", []string{"/ConfigMap/a"}},
		{"a template that renders nothing gives no objects", "{{ if false }}apiVersion: v1{{ end }}\n", nil},
		{"a separator may carry a comment", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n--- # next\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n", []string{"/ConfigMap/a", "/ConfigMap/b"}},
		{"a document may end in a null", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n~\n", []string{"/ConfigMap/a"}},
		{"dashes inside a block scalar are content", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  doc: |\n    ---\n    x: 1\n", []string{"/ConfigMap/a"}},
		{"windows line endings are understood", "apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\n---\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: b\r\n", []string{"/ConfigMap/a", "/ConfigMap/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := render(t, tc.manifests, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, component.InventoryKey(o))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewInput(t *testing.T) {
	tenant := testTenant()
	tmpl := testTemplate("")
	in := component.NewInput(tenant, "tenant-acme", tmpl)
	want := component.Input{
		Tenant:    component.Tenant{Name: "acme", Namespace: "tenant-acme", Organization: "Acme Corp", Email: "ops@acme.example.com", Labels: map[string]string{"plan": "enterprise"}},
		Component: component.Info{Name: "web", Version: "1.2.0", Image: "registry.example.com/web", ImageRef: "registry.example.com/web:1.2.0"},
		Databases: map[string]component.Database{
			"app":   {Engine: "postgres", SecretName: "db-app"},
			"cache": {Engine: "mysql", SecretName: "db-cache"},
		},
		PgBouncer: component.PgBouncer{DefaultPoolSize: 25},
	}
	t.Run("it carries the tenant, the component, the databases and the pooler", func(t *testing.T) {
		if !reflect.DeepEqual(in, want) {
			t.Errorf("got  %+v\nwant %+v", in, want)
		}
	})
	t.Run("a template without an image has no image reference", func(t *testing.T) {
		tmpl := testTemplate("")
		tmpl.Spec.Image = ""
		if got := component.NewInput(tenant, "tenant-acme", tmpl).Component.ImageRef; got != "" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("a tenant without pooler settings has a pool size of zero", func(t *testing.T) {
		bare := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
		in := component.NewInput(bare, "tenant-bare", tmpl)
		if in.PgBouncer.DefaultPoolSize != 0 || in.Databases == nil || in.Tenant.Labels == nil {
			t.Errorf("got %+v", in)
		}
	})
	t.Run("the labels are a copy of the tenant's", func(t *testing.T) {
		in.Tenant.Labels["plan"] = "changed"
		if tenant.Labels["plan"] != "enterprise" {
			t.Error("the tenant's labels changed")
		}
	})
}
