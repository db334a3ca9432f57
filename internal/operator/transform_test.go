package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/landlord-dev/landlord/internal/apply"
)

func fields(manager, raw string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
}

func TestCacheTransform(t *testing.T) {
	cases := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{"an object only Landlord shaped carries no mark", []metav1.ManagedFieldsEntry{fields("landlord", `{"f:metadata":{},"f:spec":{"f:hard":{}}}`)}, ""},
		{"a controller writing status is not foreign", []metav1.ManagedFieldsEntry{fields("kube-controller-manager", `{"f:status":{"f:used":{}}}`)}, ""},
		{"a label added by hand is not the body", []metav1.ManagedFieldsEntry{fields("kubectl-label", `{"f:metadata":{"f:labels":{"f:team":{}}}}`)}, ""},
		{"a field added to the spec by hand is marked with its manager", []metav1.ManagedFieldsEntry{
			fields("landlord", `{"f:spec":{"f:hard":{}}}`), fields("kubectl-edit", `{"f:spec":{"f:scopeSelector":{}}}`),
		}, "kubectl-edit"},
		{"subjects added to a binding are marked, each manager once", []metav1.ManagedFieldsEntry{
			fields("kubectl-patch", `{"f:subjects":{}}`), fields("kubectl-client-side-apply", `{"f:subjects":{}}`), fields("kubectl-patch", `{"f:subjects":{}}`),
		}, "kubectl-client-side-apply,kubectl-patch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := cacheTransform()(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{
				ManagedFields: tc.entries,
				// The server's value of the annotation never counts: only the managed fields do.
				Annotations: map[string]string{apply.ForeignFieldsAnnotation: "forged"},
			}})
			if err != nil {
				t.Fatal(err)
			}
			q := out.(*corev1.ResourceQuota)
			if got := q.Annotations[apply.ForeignFieldsAnnotation]; got != tc.want {
				t.Errorf("mark = %q, want %q", got, tc.want)
			}
			if len(q.ManagedFields) != 0 {
				t.Error("managed fields kept")
			}
		})
	}
	t.Run("managed fields are stripped from every kind", func(t *testing.T) {
		out, _ := cacheTransform()(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "landlord"}},
		}})
		if len(out.(*rbacv1.RoleBinding).ManagedFields) != 0 {
			t.Error("managed fields kept")
		}
	})
}
