package apply_test

import (
	"context"
	"errors"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/landlord-dev/landlord/internal/apply"
)

const clusterRoleName = "landlord-tenant-acme-viewer"

// controlledBy is a controller owner reference to a tenant; controller false makes it a plain
// owner reference, which controls nothing.
func controlledBy(tenant string, uid types.UID, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "tenancy.landlord.dev/v1alpha1", Kind: "Tenant", Name: tenant, UID: uid,
		Controller: ptr.To(controller),
	}
}

// clusterRole is a cluster-scoped object of a tenant's, which shares its name with the whole
// cluster.
func clusterRole(verb string, owners ...metav1.OwnerReference) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: clusterRoleName, OwnerReferences: owners},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{verb}}},
	}
}

// A cluster-scoped name the informer cache does not hold may still be taken on the API server:
// by another team's object, or another tenant's. ApplyLive writes it only when it is absent or
// controlled by the same owner, and never takes anything over.
func TestApplyLiveOfAClusterScopedNameMissingFromTheCache(t *testing.T) {
	acme := controlledBy("acme", "uid-acme", true)
	cases := map[string]struct {
		// existing is what the API server holds under the name, if anything.
		existing *rbacv1.ClusterRole
		desired  *rbacv1.ClusterRole
		want     apply.Result
		// conflict is the error expected, nil when the write goes through.
		conflict *apply.ConflictError
	}{
		"a name taken by an object with no owner is refused": {
			existing: clusterRole("list"),
			desired:  clusterRole("get", acme),
			want:     apply.Unchanged,
			conflict: &apply.ConflictError{Kind: "ClusterRole", Name: clusterRoleName, Owner: `Tenant "acme"`},
		},
		"a name controlled by another tenant is refused": {
			existing: clusterRole("list", controlledBy("initech", "uid-initech", true)),
			desired:  clusterRole("get", acme),
			want:     apply.Unchanged,
			conflict: &apply.ConflictError{Kind: "ClusterRole", Name: clusterRoleName, Owner: `Tenant "acme"`},
		},
		"a name controlled by another object of the same name is refused": {
			existing: clusterRole("list", controlledBy("acme", "uid-of-an-earlier-acme", true)),
			desired:  clusterRole("get", acme),
			want:     apply.Unchanged,
			conflict: &apply.ConflictError{Kind: "ClusterRole", Name: clusterRoleName, Owner: `Tenant "acme"`},
		},
		"a name the same tenant owns without controlling it is refused": {
			existing: clusterRole("list", controlledBy("acme", "uid-acme", false)),
			desired:  clusterRole("get", acme),
			want:     apply.Unchanged,
			conflict: &apply.ConflictError{Kind: "ClusterRole", Name: clusterRoleName, Owner: `Tenant "acme"`},
		},
		"a taken name is refused to a desired object that names no controller": {
			existing: clusterRole("list", acme),
			desired:  clusterRole("get"),
			want:     apply.Unchanged,
			conflict: &apply.ConflictError{Kind: "ClusterRole", Name: clusterRoleName, Owner: "this owner"},
		},
		"an object the same tenant controls is updated although the cache lacks it": {
			existing: clusterRole("list", acme),
			desired:  clusterRole("get", acme),
			want:     apply.Updated,
		},
		"an absent name is created": {
			desired: clusterRole("get", acme),
			want:    apply.Created,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			builder := fake.NewClientBuilder()
			if tc.existing != nil {
				builder = builder.WithObjects(tc.existing.DeepCopy())
			}
			server := builder.Build()
			before := &rbacv1.ClusterRole{}
			if tc.existing != nil {
				if err := server.Get(ctx, client.ObjectKey{Name: clusterRoleName}, before); err != nil {
					t.Fatal(err)
				}
			}
			// The cache selects on Landlord's labels and holds nothing under this name; writes
			// go to the API server.
			cache := interceptor.NewClient(server, interceptor.Funcs{
				Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
					return apierrors.NewNotFound(rbacv1.Resource("clusterroles"), key.Name)
				},
			})
			applier := &apply.Applier{Client: cache, APIReader: server}

			result, written, err := applier.ApplyLive(ctx, tc.desired.DeepCopy())

			if result != tc.want {
				t.Errorf("result = %v, want %v", result, tc.want)
			}
			after := &rbacv1.ClusterRole{}
			getErr := server.Get(ctx, client.ObjectKey{Name: clusterRoleName}, after)
			if tc.conflict != nil {
				var conflict *apply.ConflictError
				if !errors.As(err, &conflict) {
					t.Fatalf("error = %v, want a ConflictError", err)
				}
				if *conflict != *tc.conflict {
					t.Errorf("conflict = %+v, want %+v", *conflict, *tc.conflict)
				}
				if written != nil {
					t.Errorf("returned a written object on a conflict: %v", written)
				}
				if getErr != nil {
					t.Fatalf("the existing object is gone: %v", getErr)
				}
				if !equality.Semantic.DeepEqual(after, before) {
					t.Errorf("the existing object was changed:\nbefore %+v\nafter  %+v", before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("error = %v, want none", err)
			}
			if written == nil {
				t.Error("no written object returned")
			} else if written.GetName() != clusterRoleName || written.GetKind() != "ClusterRole" {
				t.Errorf("returned %s %s, want ClusterRole %s", written.GetKind(), written.GetName(), clusterRoleName)
			}
			if getErr != nil {
				t.Fatalf("nothing was written: %v", getErr)
			}
			if !equality.Semantic.DeepEqual(after.Rules, tc.desired.Rules) {
				t.Errorf("rules on the server = %+v, want %+v", after.Rules, tc.desired.Rules)
			}
			if c := metav1.GetControllerOf(after); c == nil || c.UID != acme.UID {
				t.Errorf("controller on the server = %+v, want tenant uid %s", c, acme.UID)
			}
			if after.Annotations[apply.HashAnnotation] == "" {
				t.Errorf("annotations on the server = %v, want the applied digest", after.Annotations)
			}
		})
	}
}
