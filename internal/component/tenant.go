package component

import (
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// RenderForTenant renders a tenant's component c from its template, as the operator applies it:
// the template's values, under the operator's defaults for the component (operatorDefaults, as
// the configuration holds them), under the tenant's own values; checked against the template's
// schema; rendered within limits. The operator and `landlordctl template render` both call it,
// so a template that renders on a workstation renders the same in the cluster.
func RenderForTenant(tmpl *tenancyv1alpha1.ComponentTemplate, c tenancyv1alpha1.Component, in Input, operatorDefaults map[string]any, limits Limits) ([]*unstructured.Unstructured, error) {
	defaults, err := DecodeValues("template values", tmpl.Spec.Values)
	if err != nil {
		return nil, err
	}
	tenantValues, err := DecodeValues("spec.components["+c.Name+"].values", c.Values)
	if err != nil {
		return nil, err
	}
	var operator map[string]any
	if operatorDefaults != nil {
		// Through JSON, so whole numbers are int64 as in the other layers, not YAML's float64.
		raw, err := json.Marshal(operatorDefaults)
		if err != nil {
			return nil, err
		}
		if operator, err = DecodeValues("components.defaultValues."+c.Name, &apiextensionsv1.JSON{Raw: raw}); err != nil {
			return nil, err
		}
	}
	values := MergeValues(defaults, operator, tenantValues)
	if err := ValidateValues(tmpl.Spec.ValuesSchema, values); err != nil {
		return nil, err
	}
	return RenderWithin(tmpl, in, values, limits)
}
