package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/landlord-dev/landlord/internal/config"
)

// writeSchema writes values.schema.json: hack/chart/values.schema.json, the chart's own values,
// with the value `config` described by the operator's configuration types.
func writeSchema(root, chart string) error {
	data, err := os.ReadFile(filepath.Join(root, "hack", "chart", "values.schema.json"))
	if err != nil {
		return err
	}
	schema := map[string]any{}
	if err := json.Unmarshal(data, &schema); err != nil {
		return fmt.Errorf("hack/chart/values.schema.json: %w", err)
	}
	properties, _ := schema["properties"].(map[string]any)
	if properties == nil {
		return fmt.Errorf("hack/chart/values.schema.json has no properties")
	}
	configSchema := ConfigSchema(reflect.TypeFor[config.Config]())
	configSchema["description"] = "The operator's configuration file (config/manager/landlord.yaml), every field as internal/config reads it."
	properties["config"] = configSchema
	schema["$comment"] = "Generated from hack/chart/values.schema.json and internal/config by hack/chart (make chart): edit the sources, not this file."
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(schema); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(chart, "values.schema.json"), out.Bytes(), 0o644)
}

// Types whose JSON form is their own: what they accept, not their Go fields.
var ownJSON = map[reflect.Type]map[string]any{
	reflect.TypeFor[metav1.Duration]():    {"type": "string", "description": "a duration: 30s, 5m, 1h"},
	reflect.TypeFor[resource.Quantity]():  {"type": []any{"string", "number"}, "description": "a quantity: 500m, 2Gi, 4"},
	reflect.TypeFor[intstr.IntOrString](): {"type": []any{"string", "integer"}},
}

// ConfigSchema is the JSON schema of a configuration type as sigs.k8s.io/yaml's strict
// unmarshalling reads it: a struct takes its JSON fields and no others, a map any key.
func ConfigSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := ownJSON[t]; ok {
		return copyMap(s)
	}
	switch t.Kind() {
	case reflect.Struct:
		properties := map[string]any{}
		addFields(t, properties)
		return map[string]any{"type": "object", "properties": properties, "additionalProperties": false}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": ConfigSchema(t.Elem())}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": ConfigSchema(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	default: // interface{}: anything
		return map[string]any{}
	}
}

// addFields adds a struct's JSON fields, those of embedded structs inlined.
func addFields(t reflect.Type, properties map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(ft, properties)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		properties[name] = ConfigSchema(f.Type)
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
