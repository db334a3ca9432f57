package component_test

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/landlord-dev/landlord/internal/component"
)

func TestDecodeValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *apiextensionsv1.JSON
		want map[string]any
		err  string
	}{
		{"no values are an empty map", nil, map[string]any{}, ""},
		{"null values are an empty map", &apiextensionsv1.JSON{Raw: []byte("null")}, map[string]any{}, ""},
		{"whole numbers are int64 and fractions float64", &apiextensionsv1.JSON{Raw: []byte(`{"replicas": 3, "big": 10000000000, "ratio": 0.5}`)},
			map[string]any{"replicas": int64(3), "big": int64(10000000000), "ratio": 0.5}, ""},
		{"a list is refused, naming the source", &apiextensionsv1.JSON{Raw: []byte(`[1]`)}, nil, "tenant acme component web: values must be an object, not an array"},
		{"malformed JSON is refused, naming the source", &apiextensionsv1.JSON{Raw: []byte(`{"a":`)}, nil, "tenant acme component web: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := component.DecodeValues("tenant acme component web", tc.in)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("got error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestMergeValues(t *testing.T) {
	template := map[string]any{
		"replicas": int64(1),
		"image":    map[string]any{"pullPolicy": "IfNotPresent", "tag": "1.2.0"},
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
			"limits":   map[string]any{"memory": "256Mi"},
		},
		"hosts": []any{"a.example.com", "b.example.com"},
		"debug": false,
	}
	operator := map[string]any{
		"replicas":  int64(2),
		"resources": map[string]any{"requests": map[string]any{"cpu": "200m"}},
	}
	tenant := map[string]any{
		"replicas": int64(3),
		"image":    "registry.example.com/custom",
		"resources": map[string]any{
			"limits": map[string]any{"cpu": "1"},
		},
		"hosts": []any{"acme.example.com"},
		"debug": nil,
	}
	snapshot := func() []map[string]any {
		return []map[string]any{
			component.MergeValues(template), component.MergeValues(operator), component.MergeValues(tenant),
		}
	}
	before := snapshot()
	got := component.MergeValues(template, nil, operator, tenant)

	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"the tenant wins over the operator and the template", got["replicas"], int64(3)},
		{"nested maps merge key by key, later layers winning", got["resources"], map[string]any{
			"requests": map[string]any{"cpu": "200m", "memory": "128Mi"},
			"limits":   map[string]any{"memory": "256Mi", "cpu": "1"},
		}},
		{"a scalar replaces a map", got["image"], "registry.example.com/custom"},
		{"a list replaces a list as a whole", got["hosts"], []any{"acme.example.com"}},
		{"null replaces a value, so default applies again", got["debug"], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}
	t.Run("a map replaces a scalar", func(t *testing.T) {
		got := component.MergeValues(map[string]any{"a": "x"}, map[string]any{"a": map[string]any{"b": int64(1)}})
		if !reflect.DeepEqual(got, map[string]any{"a": map[string]any{"b": int64(1)}}) {
			t.Errorf("got %#v", got)
		}
	})
	t.Run("the layers are not changed", func(t *testing.T) {
		if after := snapshot(); !reflect.DeepEqual(before, after) {
			t.Errorf("layers changed:\nbefore %#v\nafter  %#v", before, after)
		}
	})
	t.Run("changing the result does not reach the layers", func(t *testing.T) {
		got := component.MergeValues(template, operator)
		got["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] = "9"
		got["hosts"].([]any)[0] = "changed"
		if template["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] != "100m" || operator["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] != "200m" {
			t.Error("a nested map of a layer changed")
		}
		if template["hosts"].([]any)[0] != "a.example.com" {
			t.Error("a list of a layer changed")
		}
	})
	t.Run("no layers give an empty map", func(t *testing.T) {
		if got := component.MergeValues(); got == nil || len(got) != 0 {
			t.Errorf("got %#v", got)
		}
	})
}

const valuesSchema = `{
  "type": "object",
  "required": ["replicas"],
  "properties": {
    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
    "plan": {"type": "string", "enum": ["standard", "enterprise"]},
    "resources": {
      "type": "object",
      "properties": {"requests": {"type": "object", "additionalProperties": {"type": "string"}}}
    }
  }
}`

func TestValidateValues(t *testing.T) {
	schema := &apiextensionsv1.JSON{Raw: []byte(valuesSchema)}
	for _, tc := range []struct {
		name   string
		schema *apiextensionsv1.JSON
		values map[string]any
		errs   []string
	}{
		{"values that satisfy the schema pass", schema, map[string]any{"replicas": int64(3), "plan": "enterprise", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}, nil},
		{"a value out of range names its field", schema, map[string]any{"replicas": int64(20)}, []string{"values.replicas: Invalid value: 20: replicas in body should be less than or equal to 10"}},
		{"a value of the wrong type names its field", schema, map[string]any{"replicas": "three"}, []string{`values.replicas: Invalid value: "string": replicas in body must be of type integer: "string"`}},
		{"a missing required value names its field", schema, map[string]any{}, []string{"values.replicas: Required value"}},
		{"a value outside an enum names its field and the choices", schema, map[string]any{"replicas": int64(1), "plan": "gold"}, []string{`values.plan: Unsupported value: "gold": supported values: "standard", "enterprise"`}},
		{"a nested value names its full path", schema, map[string]any{"replicas": int64(1), "resources": map[string]any{"requests": map[string]any{"cpu": int64(1)}}}, []string{"values.resources.requests.cpu: Invalid value"}},
		{"every error is reported", schema, map[string]any{"replicas": int64(0), "plan": "gold"}, []string{"values.replicas: Invalid value", "values.plan: Unsupported value"}},
		{"no schema accepts anything", nil, map[string]any{"anything": true}, nil},
		{"a null schema accepts anything", &apiextensionsv1.JSON{Raw: []byte("null")}, map[string]any{"anything": true}, nil},
		{"a misspelt schema keyword is an error rather than an unenforced constraint", &apiextensionsv1.JSON{Raw: []byte(`{"type": "object", "properties": {"replicas": {"type": "integer", "minimun": 1}}}`)}, map[string]any{}, []string{`valuesSchema: json: unknown field "minimun"`}},
		{"a CEL rule is enforced, naming its field", &apiextensionsv1.JSON{Raw: []byte(`{
			"type": "object",
			"properties": {"minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}},
			"x-kubernetes-validations": [{"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"}]
		}`)}, map[string]any{"minReplicas": int64(5), "maxReplicas": int64(2)}, []string{"values: Invalid value: minReplicas must not exceed maxReplicas"}},
		{"a CEL rule that holds passes", &apiextensionsv1.JSON{Raw: []byte(`{
			"type": "object",
			"properties": {"minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}},
			"x-kubernetes-validations": [{"rule": "self.minReplicas <= self.maxReplicas"}]
		}`)}, map[string]any{"minReplicas": int64(1), "maxReplicas": int64(2)}, nil},
		{"a CEL rule on a nested field names the nested field", &apiextensionsv1.JSON{Raw: []byte(`{
			"type": "object",
			"properties": {"domain": {"type": "string", "x-kubernetes-validations": [{"rule": "self.endsWith('.example.com')", "message": "must be under example.com"}]}}
		}`)}, map[string]any{"domain": "acme.test"}, []string{`values.domain: Invalid value: "acme.test": must be under example.com`}},
		{"a CEL rule that does not compile is reported", &apiextensionsv1.JSON{Raw: []byte(`{
			"type": "object",
			"properties": {"replicas": {"type": "integer"}},
			"x-kubernetes-validations": [{"rule": "self.replicaz > 0"}]
		}`)}, map[string]any{"replicas": int64(1)}, []string{"rule compile error", "undefined field 'replicaz'"}},
		{"CEL rules in a schema that is not structural are refused", &apiextensionsv1.JSON{Raw: []byte(`{
			"type": "object",
			"properties": {"replicas": {}},
			"x-kubernetes-validations": [{"rule": "self.replicas > 0"}]
		}`)}, map[string]any{"replicas": int64(1)}, []string{"valuesSchema: x-kubernetes-validations need a structural schema: properties[replicas].type: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := component.ValidateValues(tc.schema, tc.values)
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("got no error")
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}
