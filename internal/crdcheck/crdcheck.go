// Package crdcheck tells whether the installed Landlord CRDs declare the fields this build
// writes: Helm never upgrades a chart's crds/, and the API server silently drops a field its
// CRD does not declare.
package crdcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// tenantFields are the Tenant fields the operator relies on that earlier releases' CRDs lack.
// The API server silently prunes a field its CRD does not declare: without spec.suspend a
// suspend is lost, and without status.lastHandledReconcileAt a reconcile request is never seen
// as handled; without spec.components[].followRollouts no ComponentRollout moves a tenant, and
// without status.components[].rollout a tenant forgets that a rollout moved it, and goes back
// to its spec's version once the rollout is deleted; without status.shard and
// status.handoverTo a tenant relabelled for another shard is never taken over. ("[]" stands for
// an array's items.)
var tenantFields = [][]string{
	{"spec", "suspend"},
	{"status", "lastHandledReconcileAt"},
	{"spec", "components", "[]", "followRollouts"},
	{"status", "components", "[]", "rollout"},
	{"status", "shard"},
	{"status", "handoverTo"},
}

// OutdatedError is an installed Tenant CRD that lacks fields this build needs.
type OutdatedError struct {
	Missing []string
}

func (e *OutdatedError) Error() string {
	return fmt.Sprintf("the installed Tenant CRD is older than this build of Landlord: it lacks %s, which the API server drops; "+
		"apply the CRDs of this release (Helm never upgrades crds/: kubectl apply --server-side -f the chart's crds/)",
		strings.Join(e.Missing, " and "))
}

// Tenant reports the Tenant fields the installed CRD lacks (an *OutdatedError), from the API server's
// OpenAPI v3 document of the group: readable by every authenticated user (system:discovery),
// so the operator needs no permission on CustomResourceDefinitions for it.
func Tenant(ctx context.Context, cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	paths, err := openapi.ToClientWithContext(dc.OpenAPIV3()).PathsWithContext(ctx)
	if err != nil {
		return fmt.Errorf("reading the API server's OpenAPI v3 paths: %w", err)
	}
	gv := tenancyv1alpha1.GroupVersion
	path, ok := paths["apis/"+gv.Group+"/"+gv.Version]
	if !ok {
		return fmt.Errorf("the API server serves no %s: the Landlord CRDs are not installed", gv)
	}
	raw, err := path.SchemaWithContext(ctx, "application/json")
	if err != nil {
		return fmt.Errorf("reading the OpenAPI v3 schema of %s: %w", gv, err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]openAPISchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("decoding the OpenAPI v3 schema of %s: %w", gv, err)
	}
	var tenant *openAPISchema
	for _, s := range doc.Components.Schemas {
		for _, gvk := range s.GVK {
			if gvk.Group == gv.Group && gvk.Version == gv.Version && gvk.Kind == "Tenant" {
				tenant = &s
			}
		}
	}
	if tenant == nil {
		return fmt.Errorf("the API server's schema of %s has no Tenant", gv)
	}
	var missing []string
	for _, field := range tenantFields {
		if !tenant.has(field) {
			missing = append(missing, strings.ReplaceAll(strings.Join(field, "."), ".[]", "[]"))
		}
	}
	if len(missing) > 0 {
		return &OutdatedError{Missing: missing}
	}
	return nil
}

// openAPISchema is the part of an OpenAPI v3 schema the check reads.
type openAPISchema struct {
	Properties map[string]openAPISchema `json:"properties"`
	Items      *openAPISchema           `json:"items"`
	GVK        []struct {
		Group, Version, Kind string
	} `json:"x-kubernetes-group-version-kind"`
}

func (s openAPISchema) has(path []string) bool {
	for _, p := range path {
		if p == "[]" {
			if s.Items == nil {
				return false
			}
			s = *s.Items
			continue
		}
		next, ok := s.Properties[p]
		if !ok {
			return false
		}
		s = next
	}
	return true
}
