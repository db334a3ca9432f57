package tenantbackup

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestOneRestoreWritesIntoATenantAtATime(t *testing.T) {
	restore := func(name string) *tenancyv1alpha1.TenantRestore {
		return &tenancyv1alpha1.TenantRestore{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid")}}
	}
	a, b, c := restore("a"), restore("b"), restore("c")
	var w writers
	take := func(t *testing.T, tenant string, rs *tenancyv1alpha1.TenantRestore, wantOK bool, wantOther string) {
		t.Helper()
		other, ok := w.take(tenant, rs)
		if ok != wantOK || other != wantOther {
			t.Errorf("take(%s, %s) = %q, %v; want %q, %v", tenant, rs.Name, other, ok, wantOther, wantOK)
		}
	}
	t.Run("the first restore into a tenant takes it", func(t *testing.T) { take(t, "acme", a, true, "") })
	t.Run("the same restore again keeps it", func(t *testing.T) { take(t, "acme", a, true, "") })
	t.Run("a second restore into it waits, told which", func(t *testing.T) { take(t, "acme", b, false, "a") })
	t.Run("a restore into another tenant does not wait", func(t *testing.T) { take(t, "bolt", c, true, "") })
	t.Run("once the first ends, the second takes it", func(t *testing.T) {
		w.release(a.UID)
		take(t, "acme", b, true, "")
	})
	t.Run("a restore deleted while it runs gives the tenant up", func(t *testing.T) {
		w.releaseNamed("b", "")
		take(t, "acme", a, true, "")
		take(t, "bolt", a, false, "c")
	})
	t.Run("a restore made again under a running one's name takes the tenant once the old one is seen gone", func(t *testing.T) {
		again := restore("a")
		again.UID = "a-again-uid"
		take(t, "acme", again, false, "a")
		w.releaseNamed("a", a.UID)
		take(t, "acme", again, false, "a")
		w.releaseNamed("a", again.UID)
		take(t, "acme", again, true, "")
	})
}
