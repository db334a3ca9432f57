package resources

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// routeKinds are the Gateway API routes that name hosts (spec.hostnames) and that the operator
// may list and delete, each with the versions it has been served in, newest first: TLSRoute is
// v1alpha2 in the Gateway API's experimental channel and v1 once standard. A cluster without the
// Gateway API, or without one of the kinds, has none of it to hand over.
var routeKinds = []struct {
	kind     string
	versions []string
}{
	{"HTTPRoute", []string{"v1"}},
	{"GRPCRoute", []string{"v1"}},
	{"TLSRoute", []string{"v1", "v1alpha3", "v1alpha2"}},
}

// EachRouteKind calls list with each route kind's list kind, in the newest version the API
// server serves, read as list answers: a version it does not serve (NoMatch or NotFound) is
// followed by the next, and a kind served in none is skipped. Asking the server rather than the
// REST mapper's cache finds a kind whose versions changed since the operator started, and the
// list that answers is the one the caller needed: no request is made twice.
func EachRouteKind(list func(gvk schema.GroupVersionKind) error) error {
	for _, rk := range routeKinds {
		for _, v := range rk.versions {
			err := list(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: v, Kind: rk.kind + "List"})
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("listing %s: %w", rk.kind, err)
			}
			break
		}
	}
	return nil
}
