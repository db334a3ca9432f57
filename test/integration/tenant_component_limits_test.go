package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// A template that runs unbounded would hold a reconcile worker and the operator's memory. A
// render past a limit ends, and stalls its tenant with a message naming the component and the
// limit.
func TestAComponentPastARenderLimitStallsItsTenant(t *testing.T) {
	cases := map[string]struct {
		component, manifests string
		want                 []string
	}{
		"a range over a huge integer": {
			component: "runaway-range",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: '{{ range 1000000000 }}{{ end }}'\n",
			want:      []string{"component runaway-range version 1.0.0, line 6", "more than 100000 range iterations", "components.render.maxIterations"},
		},
		"output past the byte limit": {
			component: "runaway-output",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: '{{ range 60000 }}xxxxxxxxxxxxxxxxxxxx{{ end }}'\n",
			want:      []string{"component runaway-output version 1.0.0", "rendered output is larger than 1048576 bytes", "components.render.maxOutputBytes"},
		},
		"a generator asked for too much": {
			component: "runaway-repeat",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: '{{ repeat 1000000000 \"x\" }}'\n",
			want:      []string{"component runaway-repeat version 1.0.0", "repeat: the result is larger than 1048576 bytes"},
		},
	}
	for name, tc := range cases {
		t.Run(name+" stalls the tenant with a message naming the component and the limit", func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			publish(t, tc.component, "1.0.0", tc.manifests, "")
			tenant := "limits-" + tc.component
			g.Expect(k8s.Create(context.Background(), newTenant(tenant, pin(tc.component, "1.0.0", "")))).To(Succeed())
			t.Cleanup(func() { deleteTenant(t, tenant) })

			msg := waitComponentsStalled(t, tenant, tenancyv1alpha1.ReasonRenderFailed)
			for _, w := range tc.want {
				g.Expect(msg).To(ContainSubstring(w))
			}
		})
	}
}
