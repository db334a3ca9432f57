package component

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// DecodeValues turns values from a ComponentTemplate, the operator configuration or a Tenant
// into a map; a nil or null source is an empty map. what names the source in the error, so a
// tenant's status says whose values are malformed.
//
// Whole numbers decode as int64, as in objects read from the API server, so that
// {{ .Values.replicas }} renders 1000000 rather than 1e+06 and schema validation sees integers.
func DecodeValues(what string, j *apiextensionsv1.JSON) (map[string]any, error) {
	if j == nil || len(bytes.TrimSpace(j.Raw)) == 0 {
		return map[string]any{}, nil
	}
	var v any
	if err := utiljson.Unmarshal(j.Raw, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	switch v := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("%s: values must be an object, not %s", what, jsonKind(v))
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

// MergeValues deep-merges layers of values, later layers winning: maps merge key by key, and any
// other value (a list, a scalar, null) replaces what was there, so a tenant overrides a list as a
// whole rather than appending to it. Nil layers are skipped. The result shares nothing with the
// layers, so rendering can never alter a template's or the operator's defaults. Values are JSON
// values, as DecodeValues returns them (int64, not int): anything else panics, as it does in an
// unstructured object.
func MergeValues(layers ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, layer := range layers {
		mergeInto(out, layer)
	}
	return out
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if srcMap, ok := v.(map[string]any); ok {
			if dstMap, ok := dst[k].(map[string]any); ok {
				mergeInto(dstMap, srcMap)
				continue
			}
		}
		dst[k] = runtime.DeepCopyJSONValue(v)
	}
}

// ValidateValues checks merged values against a template's valuesSchema, an OpenAPI v3 schema
// written as in a CRD, with the API server's own validator, so template authors get the checks
// and the messages they know from custom resources: each error names its field under "values"
// (values.replicas: Invalid value: ...). x-kubernetes-validations rules are evaluated too. A nil
// schema accepts anything. Defaults in the schema are not applied: defaults belong in the
// template's values.
func ValidateValues(schema *apiextensionsv1.JSON, values map[string]any) error {
	if schema == nil || len(bytes.TrimSpace(schema.Raw)) == 0 || bytes.Equal(bytes.TrimSpace(schema.Raw), []byte("null")) {
		return nil
	}
	props, err := decodeSchema(schema.Raw)
	if err != nil {
		return err
	}
	validator, _, err := validation.NewSchemaValidator(props)
	if err != nil {
		return fmt.Errorf("valuesSchema: %w", err)
	}
	path := field.NewPath("values")
	// The validator wants a JSON value; a nil map would be read as null rather than {}.
	var obj any = values
	if values == nil {
		obj = map[string]any{}
	}
	errs := validation.ValidateCustomResource(path, obj, validator)
	celErrs, err := validateRules(path, props, obj)
	if err != nil {
		return err
	}
	return append(errs, celErrs...).ToAggregate()
}

// decodeSchema reads a valuesSchema strictly: a misspelt keyword ("minimun") would otherwise be
// dropped and the constraint silently not enforced.
func decodeSchema(raw []byte) (*apiextensions.JSONSchemaProps, error) {
	var v1 apiextensionsv1.JSONSchemaProps
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v1); err != nil {
		return nil, fmt.Errorf("valuesSchema: %w", err)
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		return nil, fmt.Errorf("valuesSchema: %w", err)
	}
	return &internal, nil
}

// validateRules evaluates x-kubernetes-validations (CEL). The OpenAPI validator ignores them,
// and a rule an author wrote but Landlord skipped would let through exactly the values it was
// written to stop. CEL needs a structural schema, so only schemas with rules must be structural.
func validateRules(path *field.Path, props *apiextensions.JSONSchemaProps, obj any) (field.ErrorList, error) {
	if !hasRules(props) {
		return nil, nil
	}
	structural, err := structuralschema.NewStructural(props)
	if err != nil {
		return nil, fmt.Errorf("valuesSchema: x-kubernetes-validations need a structural schema: %w", err)
	}
	if errs := structuralschema.ValidateStructural(nil, structural); len(errs) > 0 {
		return nil, fmt.Errorf("valuesSchema: x-kubernetes-validations need a structural schema: %w", errs.ToAggregate())
	}
	v := cel.NewValidator(structural, false, celconfig.PerCallLimit)
	if v == nil {
		return nil, nil
	}
	// Running out of budget is reported among the errors, as the API server reports it.
	errs, _ := v.Validate(context.Background(), path, structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return errs, nil
}

func hasRules(s *apiextensions.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	if len(s.XValidations) > 0 {
		return true
	}
	for _, p := range s.Properties {
		if hasRules(&p) {
			return true
		}
	}
	if s.Items != nil {
		if hasRules(s.Items.Schema) {
			return true
		}
		for i := range s.Items.JSONSchemas {
			if hasRules(&s.Items.JSONSchemas[i]) {
				return true
			}
		}
	}
	if s.AdditionalProperties != nil && hasRules(s.AdditionalProperties.Schema) {
		return true
	}
	for _, group := range [][]apiextensions.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range group {
			if hasRules(&group[i]) {
				return true
			}
		}
	}
	return hasRules(s.Not)
}
