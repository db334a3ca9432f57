package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/internal/config"
)

func TestComponentsDefaultToTheBuiltInKindsAndLimits(t *testing.T) {
	c, err := config.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.AllowedComponentKinds(), component.DefaultAllowedKinds(); !slices.Equal(got, want) {
		t.Errorf("allowed kinds = %v, want %v", got, want)
	}
	if got, want := c.Components.Render.Limits(), component.DefaultLimits(); got != want {
		t.Errorf("render limits = %+v, want %+v", got, want)
	}
}

func TestComponentKindsAndLimitsAreConfigurable(t *testing.T) {
	c, err := config.Parse([]byte(`
components:
  allowedKinds: [{group: apps, kind: Deployment}, {kind: ServiceAccount}]
  render: {timeout: 500ms, maxOutputBytes: 4096, maxIterations: 5000}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.GroupKind{{Group: "apps", Kind: "Deployment"}, {Kind: "ServiceAccount"}}
	if got := c.AllowedComponentKinds(); !slices.Equal(got, want) {
		t.Errorf("allowed kinds = %v, want %v", got, want)
	}
	if got := c.Components.Render.Limits(); got != (component.Limits{Timeout: 500 * time.Millisecond, MaxOutputBytes: 4096, MaxIterations: 5000}) {
		t.Errorf("render limits = %+v", got)
	}
}

// The kinds a tenant's isolation is built of can never be allowed to components, and a
// configuration that lists one is refused, naming the entry.
func TestComponentSettingsThatWouldBreakIsolationOrBoundsAreRefused(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"a Role":                     {"components: {allowedKinds: [{group: apps, kind: Deployment}, {group: rbac.authorization.k8s.io, kind: Role}]}", "components.allowedKinds[1]: Role.rbac.authorization.k8s.io can never be allowed"},
		"a ClusterRoleBinding":       {"components: {allowedKinds: [{group: rbac.authorization.k8s.io, kind: ClusterRoleBinding}]}", "components.allowedKinds[0]: ClusterRoleBinding.rbac.authorization.k8s.io"},
		"a NetworkPolicy":            {"components: {allowedKinds: [{group: networking.k8s.io, kind: NetworkPolicy}]}", "components.allowedKinds[0]: NetworkPolicy.networking.k8s.io can never be allowed"},
		"a ResourceQuota":            {"components: {allowedKinds: [{kind: ResourceQuota}]}", "components.allowedKinds[0]: ResourceQuota can never be allowed"},
		"a LimitRange":               {"components: {allowedKinds: [{kind: LimitRange}]}", "components.allowedKinds[0]: LimitRange can never be allowed"},
		"a Namespace":                {"components: {allowedKinds: [{kind: Namespace}]}", "components.allowedKinds[0]: Namespace can never be allowed"},
		"an admission policy":        {"components: {allowedKinds: [{group: admissionregistration.k8s.io, kind: ValidatingAdmissionPolicy}]}", "components.allowedKinds[0]: ValidatingAdmissionPolicy.admissionregistration.k8s.io"},
		"an entry without a kind":    {"components: {allowedKinds: [{group: apps}]}", "components.allowedKinds[0]: kind is required"},
		"a render timeout too short": {"components: {render: {timeout: 1ms}}", "components.render.timeout"},
		"a render timeout too long":  {"components: {render: {timeout: 1h}}", "components.render.timeout"},
		"an output limit too small":  {"components: {render: {maxOutputBytes: 10}}", "components.render.maxOutputBytes"},
		"an output limit too large":  {"components: {render: {maxOutputBytes: 1000000000}}", "components.render.maxOutputBytes"},
		"a negative iteration limit": {"components: {render: {maxIterations: -1}}", "components.render.maxIterations"},
	} {
		t.Run(name+" is refused", func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
