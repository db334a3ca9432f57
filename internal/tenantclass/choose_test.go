package tenantclass

import (
	"cmp"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestATenantConvergesToTheRevisionItsClassesUpdatesRelease(t *testing.T) {
	cpu := func(n string) tenancyv1alpha1.TenantClassSpec {
		return tenancyv1alpha1.TenantClassSpec{Quota: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(n)}}
	}
	old, current := cpu("4"), cpu("8")
	oldRev, currentRev := Revision(old), Revision(current)
	if oldRev == currentRev || oldRev == "" {
		t.Fatalf("revisions %q and %q", oldRev, currentRev)
	}
	// A tenant Released at 50% and one not, found by their names.
	in, out := "", ""
	for i := 0; in == "" || out == ""; i++ {
		name := fmt.Sprintf("tenant-%d", i)
		if Released(name, 50) {
			in = cmp.Or(in, name)
		} else {
			out = cmp.Or(out, name)
		}
	}
	class := func(strategy tenancyv1alpha1.ClassUpdateStrategy, percent int32, observed int64) *tenancyv1alpha1.TenantClass {
		return &tenancyv1alpha1.TenantClass{
			ObjectMeta: metav1.ObjectMeta{Name: "standard", Generation: 2},
			Spec:       current,
			Status: tenancyv1alpha1.TenantClassStatus{
				ObservedGeneration: observed, Revision: currentRev,
				Revisions: []tenancyv1alpha1.ClassRevision{{Name: oldRev, Spec: old}, {Name: currentRev, Spec: current}},
				Rollout:   &tenancyv1alpha1.ClassRollout{Revision: currentRev, Strategy: strategy, ReleasedPercent: percent},
			},
		}
	}
	tenant := func(name, at string) *tenancyv1alpha1.Tenant {
		t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if at != "" {
			t.Status.Class = &tenancyv1alpha1.TenantClassRef{Name: "standard", Revision: at}
		}
		return t
	}
	for _, tc := range []struct {
		name   string
		tenant *tenancyv1alpha1.Tenant
		class  *tenancyv1alpha1.TenantClass
		want   string // "" when the tenant must wait
	}{
		{"a new tenant gets the current revision, whatever the strategy", tenant(out, ""), class(tenancyv1alpha1.ClassUpdateNewTenants, 0, 2), currentRev},
		{"a tenant at an earlier revision keeps it under NewTenants", tenant(in, oldRev), class(tenancyv1alpha1.ClassUpdateNewTenants, 0, 2), oldRev},
		{"a tenant at an earlier revision moves under Immediate", tenant(out, oldRev), class(tenancyv1alpha1.ClassUpdateImmediate, 100, 2), currentRev},
		{"a tenant a wave released moves", tenant(in, oldRev), class(tenancyv1alpha1.ClassUpdateWaves, 50, 2), currentRev},
		{"a tenant no wave released yet stays", tenant(out, oldRev), class(tenancyv1alpha1.ClassUpdateWaves, 50, 2), oldRev},
		{"a tenant at a revision no longer kept gets the current one", tenant(out, "gone"), class(tenancyv1alpha1.ClassUpdateNewTenants, 0, 2), currentRev},
		{"while the status lags the spec, a tenant keeps its revision", tenant(out, oldRev), class(tenancyv1alpha1.ClassUpdateImmediate, 100, 1), oldRev},
		{"while the status lags the spec, a new tenant waits", tenant(out, ""), class(tenancyv1alpha1.ClassUpdateImmediate, 100, 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, spec, ok := Choose(tc.tenant, tc.class)
			if tc.want == "" {
				if ok {
					t.Fatalf("Choose = %q, want a wait", got)
				}
				return
			}
			if !ok || got != tc.want {
				t.Fatalf("Choose = %q (ok %t), want %q", got, ok, tc.want)
			}
			if Revision(*spec) != got {
				t.Errorf("the spec given is revision %s, not %s", Revision(*spec), got)
			}
		})
	}
}
