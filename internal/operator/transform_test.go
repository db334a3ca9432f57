package operator

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/internal/usage"
)

// fields is a managed-fields entry: Landlord's applies, everyone else's updates.
func fields(manager, raw string) metav1.ManagedFieldsEntry {
	op := metav1.ManagedFieldsOperationUpdate
	if manager == "landlord" {
		op = metav1.ManagedFieldsOperationApply
	}
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(raw)}
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
		{"a field only Landlord's own earlier update owns is marked: Landlord no longer sets it", []metav1.ManagedFieldsEntry{
			fields("landlord", `{"f:spec":{"f:hard":{}}}`),
			{Manager: "landlord", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:hard":{},"f:scopes":{}}}`)},
		}, "landlord"},
		{"subjects added to a binding are marked, each manager once", []metav1.ManagedFieldsEntry{
			fields("kubectl-patch", `{"f:subjects":{}}`), fields("kubectl-client-side-apply", `{"f:subjects":{}}`), fields("kubectl-patch", `{"f:subjects":{}}`),
		}, "kubectl-client-side-apply,kubectl-patch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := cacheTransform(tenancyv1alpha1.Scheme())(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{
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
			if !apply.ShapedByCache(q) {
				t.Errorf("managed fields kept: %v", q.ManagedFields)
			}
		})
	}
	t.Run("an object whose managed fields were stripped is marked as someone else's", func(t *testing.T) {
		out, _ := cacheTransform(tenancyv1alpha1.Scheme())(&corev1.ResourceQuota{})
		if got := out.(*corev1.ResourceQuota).Annotations[apply.ForeignFieldsAnnotation]; got != apply.UnknownManager {
			t.Errorf("mark = %q, want %q", got, apply.UnknownManager)
		}
	})
	t.Run("shaping an object no tenant owns twice keeps its mark", func(t *testing.T) {
		// An informer hands its initial list's objects over twice; a policy is no tenant's.
		transform := cacheTransform(tenancyv1alpha1.Scheme())
		once, _ := transform(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{fields("kubectl", `{"f:spec":{"f:hard":{}}}`)}}})
		twice, _ := transform(once)
		if got := twice.(*corev1.ResourceQuota).Annotations[apply.ForeignFieldsAnnotation]; got != "kubectl" {
			t.Errorf("mark after a second pass = %q, want kubectl", got)
		}
	})
	t.Run("managed fields are stripped from every kind", func(t *testing.T) {
		out, _ := cacheTransform(tenancyv1alpha1.Scheme())(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "landlord"}},
		}})
		if !apply.ShapedByCache(out.(*rbacv1.RoleBinding)) {
			t.Error("managed fields kept")
		}
	})
}

func tenantOwned(labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: "tenant-acme", Name: "x", Labels: labels, ResourceVersion: "5", UID: "object-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "tenancy.landlord.dev/v1alpha1", Kind: "Tenant", Name: "acme", UID: "u1", Controller: ptr.To(true)}},
	}
}

func TestTheCacheKeepsATenantsObjectsWithoutTheirBody(t *testing.T) {
	pods := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}
	cases := []struct {
		name    string
		obj     client.Object
		dropped bool
		check   func(t *testing.T, obj client.Object)
	}{
		{"a network policy keeps only its metadata", &networkingv1.NetworkPolicy{ObjectMeta: tenantOwned(nil), Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Ingress"}}}, true,
			func(t *testing.T, obj client.Object) {
				if len(obj.(*networkingv1.NetworkPolicy).Spec.PolicyTypes) != 0 {
					t.Error("spec kept")
				}
			}},
		{"a quota keeps its pods count and nothing else", &corev1.ResourceQuota{ObjectMeta: tenantOwned(nil),
			Spec:   corev1.ResourceQuotaSpec{Hard: pods},
			Status: corev1.ResourceQuotaStatus{Hard: pods, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("1")}}}, true,
			func(t *testing.T, obj client.Object) {
				q := obj.(*corev1.ResourceQuota)
				if len(q.Spec.Hard) != 0 || len(q.Status.Hard) != 0 || len(q.Status.Used) != 1 || q.Status.Used.Pods().Value() != 2 {
					t.Errorf("quota kept %+v %+v", q.Spec, q.Status)
				}
			}},
		{"a shared secret copy loses its data", &corev1.Secret{ObjectMeta: tenantOwned(nil), Data: map[string][]byte{"k": []byte("v")}}, true,
			func(t *testing.T, obj client.Object) {
				if len(obj.(*corev1.Secret).Data) != 0 {
					t.Error("data kept")
				}
			}},
		{"database credentials keep their data", &corev1.Secret{ObjectMeta: tenantOwned(map[string]string{"tenancy.landlord.dev/database-engine": "postgres"}), Data: map[string][]byte{"k": []byte("v")}}, false,
			func(t *testing.T, obj client.Object) {
				if len(obj.(*corev1.Secret).Data) != 1 {
					t.Error("data dropped")
				}
			}},
		{"a binding loses its subjects and roleRef", &rbacv1.RoleBinding{ObjectMeta: tenantOwned(nil), RoleRef: rbacv1.RoleRef{Name: "r"}, Subjects: []rbacv1.Subject{{Name: "s"}}}, true,
			func(t *testing.T, obj client.Object) {
				if b := obj.(*rbacv1.RoleBinding); b.RoleRef.Name != "" || len(b.Subjects) != 0 {
					t.Error("body kept")
				}
			}},
		{"a tenant's namespace is kept whole", &corev1.Namespace{ObjectMeta: tenantOwned(nil), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, false,
			func(t *testing.T, obj client.Object) {
				if obj.(*corev1.Namespace).Status.Phase != corev1.NamespaceTerminating {
					t.Error("status dropped")
				}
			}},
		{"a rendered object keeps its health in place of its body and status", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"namespace": "tenant-acme", "name": "web", "generation": int64(2), "resourceVersion": "5", "uid": "object-uid",
				"labels":          map[string]any{"tenancy.landlord.dev/component": "web"},
				"ownerReferences": []any{map[string]any{"apiVersion": "tenancy.landlord.dev/v1alpha1", "kind": "Tenant", "name": "acme", "uid": "u1", "controller": true}}},
			"spec":   map[string]any{"replicas": int64(3)},
			"status": map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)},
		}}, true,
			func(t *testing.T, obj client.Object) {
				u := obj.(*unstructured.Unstructured)
				if _, ok := u.Object["spec"]; ok {
					t.Error("spec kept")
				}
				h, err := component.CachedHealth(u, u.GroupVersionKind())
				if err != nil || h.Ready || !strings.Contains(h.Message, "1/3") {
					t.Errorf("health = %+v, %v; want not ready, 1/3 updated", h, err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := cacheTransform(tenancyv1alpha1.Scheme())(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			obj := out.(client.Object)
			// A content digest stands for the body exactly when the body is gone.
			if got := apply.CachedDigest(obj) != ""; got != tc.dropped {
				t.Errorf("body dropped = %v, want %v", got, tc.dropped)
			}
			// The UID goes with the body; an object kept whole keeps it.
			if uid := obj.GetUID(); (uid == "") != tc.dropped {
				t.Errorf("UID %q kept with the body dropped = %v", uid, tc.dropped)
			}
			tc.check(t, obj)
		})
	}
	t.Run("the server's values of the cache's own annotations are dropped", func(t *testing.T) {
		meta := tenantOwned(nil)
		meta.Annotations = map[string]string{apply.HealthAnnotation: `{"Ready":true}`}
		meta.ManagedFields = []metav1.ManagedFieldsEntry{fields("landlord", `{"f:metadata":{}}`)}
		out, _ := cacheTransform(tenancyv1alpha1.Scheme())(&corev1.Namespace{ObjectMeta: meta})
		if ns := out.(*corev1.Namespace); len(ns.Annotations) != 0 || apply.CachedDigest(ns) != "" {
			t.Errorf("kept annotations %v and digest %q", ns.Annotations, apply.CachedDigest(ns))
		}
	})
	t.Run("shaping an object twice keeps what the first time recorded", func(t *testing.T) {
		meta := tenantOwned(nil)
		meta.Annotations = map[string]string{apply.HashAnnotation: "applied"}
		transform := cacheTransform(tenancyv1alpha1.Scheme())
		once, _ := transform(&networkingv1.NetworkPolicy{ObjectMeta: meta})
		digest := apply.CachedDigest(once.(client.Object))
		twice, _ := transform(once)
		if got := apply.CachedDigest(twice.(client.Object)); got == "" || got != digest {
			t.Errorf("digest %q after a second pass, %q after the first", got, digest)
		}
		if got := twice.(client.Object).GetSelfLink(); got != "\x00"+digest+"applied" {
			t.Errorf("record %q after a second pass", got)
		}
	})
	t.Run("an object of Landlord's own API is kept whole, whatever controller it names", func(t *testing.T) {
		claim := &tenancyv1alpha1.TenantClaim{ObjectMeta: tenantOwned(nil), Spec: tenancyv1alpha1.TenantClaimSpec{Pool: "standard"}}
		out, err := cacheTransform(tenancyv1alpha1.Scheme())(claim)
		if err != nil {
			t.Fatal(err)
		}
		if c := out.(*tenancyv1alpha1.TenantClaim); c.Spec.Pool != "standard" || c.UID == "" || apply.CachedDigest(c) != "" {
			t.Errorf("a claim naming a Tenant as its controller was reshaped: %+v", c)
		}
	})
	t.Run("an object no tenant controls is kept whole", func(t *testing.T) {
		out, _ := cacheTransform(tenancyv1alpha1.Scheme())(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "landlord-templates", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}})
		s := out.(*corev1.Secret)
		if len(s.Data) != 1 || apply.CachedDigest(s) != "" {
			t.Errorf("a template secret was reshaped: %+v", s)
		}
	})
}

func TestTheContentDigestFollowsContentNotStatus(t *testing.T) {
	quota := func(hard, used string, label string) *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{ObjectMeta: tenantOwned(map[string]string{"team": label}),
			Spec:   corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(hard)}},
			Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(used)}}}
		return q
	}
	digest := func(q *corev1.ResourceQuota) string {
		out, err := cacheTransform(tenancyv1alpha1.Scheme())(q)
		if err != nil {
			t.Fatal(err)
		}
		return apply.CachedDigest(out.(*corev1.ResourceQuota))
	}
	base := digest(quota("10", "1", "a"))
	cases := []struct {
		name string
		q    *corev1.ResourceQuota
		same bool
	}{
		{"the same quota digests the same", quota("10", "1", "a"), true},
		{"a status change keeps the digest", quota("10", "5", "a"), true},
		{"a spec change moves the digest", quota("11", "1", "a"), false},
		{"a label change moves the digest", quota("10", "1", "b"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := digest(tc.q) == base; got != tc.same {
				t.Errorf("same digest = %v, want %v", got, tc.same)
			}
		})
	}
}

// A Tenant's status.usage is a dozen quantities: the cache keeps it as JSON, which what reads it
// decodes, and a copy about to be written gets it back whole.
func TestTheCacheKeepsATenantsUsageCompact(t *testing.T) {
	sampled := &tenancyv1alpha1.TenantUsage{
		SampledAt: metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)),
		Resources: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1500m"), corev1.ResourcePods: resource.MustParse("3")},
		Used:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("420m"), corev1.ResourceMemory: resource.MustParse("300Mi")},
		Databases: []tenancyv1alpha1.DatabaseUsage{{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Bytes: 7_654_321}},
	}
	tenant := func() *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Status: tenancyv1alpha1.TenantStatus{Usage: sampled.DeepCopy()}}
	}

	t.Run("the cached tenant holds its usage as JSON, and what reads it finds it whole", func(t *testing.T) {
		out, err := cacheTransform(tenancyv1alpha1.Scheme())(tenant())
		if err != nil {
			t.Fatal(err)
		}
		cached := out.(*tenancyv1alpha1.Tenant)
		if cached.Status.Usage != nil {
			t.Errorf("the cache keeps the typed usage: %+v", cached.Status.Usage)
		}
		if got := usage.Of(cached); !equality.Semantic.DeepEqual(got, sampled) {
			t.Errorf("usage.Of(cached) = %+v, want %+v", got, sampled)
		}
		restored := cached.DeepCopy()
		restored.Status.Usage = usage.Take(restored).Usage()
		if _, ok := restored.Annotations[usage.CachedAnnotation]; ok || !equality.Semantic.DeepEqual(restored.Status.Usage, sampled) {
			t.Errorf("restored = annotations %v, usage %+v; want no cache record and the usage whole", restored.Annotations, restored.Status.Usage)
		}
	})

	t.Run("a usage record the server holds is not the cache's and is dropped", func(t *testing.T) {
		forged := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme", Annotations: map[string]string{
			usage.CachedAnnotation: `{"sampledAt":"2026-12-01T00:00:00Z","databases":[{"engine":"postgres","name":"app","bytes":1}]}`,
		}}}
		// As the API server answers a write: the tenant as it holds it, never through the cache.
		if got := usage.Of(forged); got != nil {
			t.Errorf("usage.Of = %+v from a tenant as the server holds it, want none", got)
		}
		answered := forged.DeepCopy()
		answered.Status.Usage = usage.Take(answered).Usage()
		if _, ok := answered.Annotations[usage.CachedAnnotation]; ok || answered.Status.Usage != nil {
			t.Errorf("restored = annotations %v, usage %+v; want neither", answered.Annotations, answered.Status.Usage)
		}
		out, err := cacheTransform(tenancyv1alpha1.Scheme())(forged)
		if err != nil {
			t.Fatal(err)
		}
		if got := usage.Of(out.(*tenancyv1alpha1.Tenant)); got != nil {
			t.Errorf("usage.Of = %+v from an annotation set on the server, want none", got)
		}
	})
}
