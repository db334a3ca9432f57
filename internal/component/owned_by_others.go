package component

import (
	"fmt"
	"slices"
	"strings"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
)

// FieldsOwnedByOthers are the fields a template declares others own (spec.fieldsOwnedByOthers),
// as the applier takes them. The API server refuses at admission what this refuses (the CRD's
// rules on jsonPointer say the same); a declaration refused here names its entry.
func FieldsOwnedByOthers(decls []tenancyv1alpha1.FieldOwnedByOthers) ([]apply.OthersField, error) {
	fields := make([]apply.OthersField, 0, len(decls))
	for i, d := range decls {
		path, err := ownedByOthersPath(d.JSONPointer)
		if err != nil {
			return nil, fmt.Errorf("spec.fieldsOwnedByOthers[%d].jsonPointer: %w", i, err)
		}
		fields = append(fields, apply.OthersField{Group: d.Group, Kind: d.Kind, Name: d.Name, Path: path})
	}
	return fields, nil
}

// ownedByOthersPath parses a JSON pointer (RFC 6901) to a field that others may own into its
// field names, refusing what Landlord must own.
func ownedByOthersPath(pointer string) ([]string, error) {
	path, err := parseJSONPointer(pointer)
	if err != nil {
		return nil, err
	}
	for _, name := range path {
		if name == "-" || strings.Trim(name, "0123456789") == "" {
			return nil, fmt.Errorf("jsonPointer %s names an element of a list: only fields of objects can be owned by others (name the list itself to hand over all of it)", pointer)
		}
	}
	switch path[0] {
	case "apiVersion", "kind", "status":
		return nil, fmt.Errorf("jsonPointer %s is never owned by others: apiVersion and kind are what the object is, and Landlord never writes status", pointer)
	case "metadata":
		if len(path) != 3 || (path[1] != "labels" && path[1] != "annotations") {
			return nil, fmt.Errorf("jsonPointer %s is metadata Landlord must own: of metadata, only a single label or annotation (/metadata/annotations/NAME) can be owned by others", pointer)
		}
		if landlordsKey(path[2]) {
			return nil, fmt.Errorf("jsonPointer %s is a label or annotation of Landlord (app.kubernetes.io/managed-by, tenancy.landlord.dev/*), which it keeps on every object it renders", pointer)
		}
	}
	return path, nil
}

// landlordsKey is whether a label or annotation key is one Landlord sets on what it renders:
// the labels its cache selects objects by and the annotation that records what it applied.
func landlordsKey(key string) bool {
	return key == tenancyv1alpha1.ManagedByLabel || strings.HasPrefix(key, "tenancy.landlord.dev/")
}

// parseJSONPointer splits a JSON pointer into the names it is made of, unescaping ~1 to '/' and
// ~0 to '~'. The root ("") and empty names are refused: neither names a field others could own.
func parseJSONPointer(pointer string) ([]string, error) {
	rest, ok := strings.CutPrefix(pointer, "/")
	if !ok {
		return nil, fmt.Errorf("jsonPointer %s is not a JSON pointer to a field: it must be /-separated field names, such as /spec/replicas, with ~1 for a / and ~0 for a ~ within a name", pointer)
	}
	names := strings.Split(rest, "/")
	for i, name := range names {
		if name == "" || strings.Contains(strings.NewReplacer("~0", "", "~1", "").Replace(name), "~") {
			return nil, fmt.Errorf("jsonPointer %s is not a JSON pointer to a field: it must be /-separated field names, such as /spec/replicas, with ~1 for a / and ~0 for a ~ within a name", pointer)
		}
		// RFC 6901's order, ~1 before ~0: ~01 is the name ~1, not /.
		names[i] = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	}
	return names, nil
}

// WhileFrozen are the fields others own that stay theirs while the tenant is Frozen: not the
// replica count ScaleToZero sets, nor a field holding it. A Frozen tenant runs nothing, whoever
// sized its workloads, and an autoscaler leaves a workload scaled to zero alone; thawed, the
// count is the template's again until the autoscaler takes it over.
func WhileFrozen(fields []apply.OthersField) []apply.OthersField {
	return slices.DeleteFunc(slices.Clone(fields), func(f apply.OthersField) bool {
		scaled := (f.Group == "" || f.Group == "apps") && (f.Kind == "Deployment" || f.Kind == "StatefulSet")
		replicas := []string{"spec", "replicas"}
		return scaled && len(f.Path) <= len(replicas) && slices.Equal(f.Path, replicas[:len(f.Path)])
	})
}
