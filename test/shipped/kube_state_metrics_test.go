package shipped_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/landlord-dev/landlord/test/shipped"
)

// ksmConfig is the part of kube-state-metrics' custom resource state configuration that names
// fields of the objects.
type ksmConfig struct {
	Kind string `json:"kind"`
	Spec struct {
		Resources []struct {
			GroupVersionKind struct {
				Group, Version, Kind string
			} `json:"groupVersionKind"`
			MetricNamePrefix string              `json:"metricNamePrefix"`
			LabelsFromPath   map[string][]string `json:"labelsFromPath"`
			Metrics          []struct {
				Name string `json:"name"`
				Help string `json:"help"`
				Each struct {
					Type  string `json:"type"`
					Gauge *struct {
						Path           []string            `json:"path"`
						LabelsFromPath map[string][]string `json:"labelsFromPath"`
						ValueFrom      []string            `json:"valueFrom"`
					} `json:"gauge"`
					Info *struct {
						LabelsFromPath map[string][]string `json:"labelsFromPath"`
					} `json:"info"`
				} `json:"each"`
			} `json:"metrics"`
		} `json:"resources"`
	} `json:"spec"`
}

// objectMetadata is what a path may read under metadata, which CRD schemas do not spell out.
var objectMetadata = []string{"name", "namespace", "labels", "creationTimestamp", "generation"}

// resolve walks path through schema and returns the schema it ends at, or why it cannot. A
// "[field=value]" element selects an item of a list.
func resolve(schema apiextensionsv1.JSONSchemaProps, path []string) (apiextensionsv1.JSONSchemaProps, string) {
	for i, elem := range path {
		if strings.HasPrefix(elem, "[") {
			if schema.Type != "array" || schema.Items == nil || schema.Items.Schema == nil {
				return schema, elem + " selects from something that is not a list"
			}
			schema = *schema.Items.Schema
			continue
		}
		if i == 0 && elem == "metadata" {
			if len(path) < 2 || !slices.Contains(objectMetadata, path[1]) {
				return schema, "metadata has no such field in " + strings.Join(path, ".")
			}
			// A label's key is any string.
			return apiextensionsv1.JSONSchemaProps{Type: "string"}, ""
		}
		next, ok := schema.Properties[elem]
		if !ok && schema.AdditionalProperties != nil && schema.AdditionalProperties.Schema != nil {
			// A map (a ResourceList): any key, of the values' schema.
			next, ok = *schema.AdditionalProperties.Schema, true
		}
		if !ok {
			return schema, "no field " + elem + " in " + strings.Join(path[:i+1], ".")
		}
		schema = next
	}
	return schema, ""
}

// Every path of config/kube-state-metrics/landlord.yaml names a field the CRDs have, so a renamed
// field cannot leave a series silently empty; and every Landlord kind is there.
func TestKubeStateMetricsConfigurationNamesFieldsTheCRDsHave(t *testing.T) {
	data, err := os.ReadFile(shipped.Path("config", "kube-state-metrics", "landlord.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := ksmConfig{}
	// Only the fields that name paths are read; the rest (nilIsZero, ...) are kube-state-metrics'.
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != "CustomResourceStateMetrics" {
		t.Fatalf("kind %q", cfg.Kind)
	}
	crds := map[string]apiextensionsv1.JSONSchemaProps{}
	files, _ := filepath.Glob(shipped.Path("config", "crd", "bases", "*.yaml"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			crds[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = *v.Schema.OpenAPIV3Schema
		}
	}
	if len(crds) < 6 {
		t.Fatalf("read %d CRDs from config/crd/bases", len(crds))
	}
	covered := map[string]bool{}
	for _, r := range cfg.Spec.Resources {
		gvk := r.GroupVersionKind.Group + "/" + r.GroupVersionKind.Version + "/" + r.GroupVersionKind.Kind
		covered[gvk] = true
		t.Run(r.GroupVersionKind.Kind, func(t *testing.T) {
			root, ok := crds[gvk]
			if !ok {
				t.Fatalf("no CRD serves %s", gvk)
			}
			check := func(where string, from apiextensionsv1.JSONSchemaProps, path []string) {
				t.Helper()
				if _, why := resolve(from, path); why != "" {
					t.Errorf("%s: %s", where, why)
				}
			}
			for label, path := range r.LabelsFromPath {
				check("label "+label, root, path)
			}
			for _, m := range r.Metrics {
				name := r.MetricNamePrefix + "_" + m.Name
				if m.Help == "" {
					t.Errorf("%s has no help", name)
				}
				switch {
				case m.Each.Gauge != nil:
					at, why := resolve(root, m.Each.Gauge.Path)
					if why != "" {
						t.Errorf("%s: %s", name, why)
						continue
					}
					if at.Type == "array" && at.Items != nil && at.Items.Schema != nil {
						at = *at.Items.Schema
					}
					for label, path := range m.Each.Gauge.LabelsFromPath {
						check(name+" label "+label, at, path)
					}
					if len(m.Each.Gauge.ValueFrom) > 0 {
						check(name+" value", at, m.Each.Gauge.ValueFrom)
					}
				case m.Each.Info != nil:
					for label, path := range m.Each.Info.LabelsFromPath {
						check(name+" label "+label, root, path)
					}
				default:
					t.Errorf("%s is neither a gauge nor an info", name)
				}
			}
		})
	}
	for gvk := range crds {
		if !covered[gvk] {
			t.Errorf("%s has no metrics in config/kube-state-metrics/landlord.yaml", gvk)
		}
	}
}
