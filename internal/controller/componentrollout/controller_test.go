package componentrollout

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	. "github.com/landlord-dev/landlord/internal/controller/controllertest"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

// rolloutFleet is the rollout "web-2" of web 2.0.0, one tenant a wave, its published template,
// the three tenants "web-0" to "web-2" that let rollouts move their web 1.0.0, and n tenants of
// each kind the rollout never moves: running web pinned, and running another component that
// follows rollouts.
func rolloutFleet(n int) []client.Object {
	tenant := func(name string, c tenancyv1alpha1.Component) *tenancyv1alpha1.Tenant {
		return &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
			Spec:       tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{c}},
		}
	}
	objs := []client.Object{
		&tenancyv1alpha1.ComponentRollout{
			ObjectMeta: metav1.ObjectMeta{Name: "web-2"},
			Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "2.0.0",
				Strategy: tenancyv1alpha1.RolloutStrategy{BatchSize: ptr.To(intstr.FromInt32(1))}},
		},
		&tenancyv1alpha1.ComponentTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.ComponentTemplateName("web", "2.0.0")},
			Spec:       tenancyv1alpha1.ComponentTemplateSpec{Component: "web", Version: "2.0.0"},
		},
	}
	for i := range 3 {
		objs = append(objs, tenant(fmt.Sprintf("web-%d", i), tenancyv1alpha1.Component{Name: "web", Version: "1.0.0", FollowRollouts: true}))
	}
	for i := range n {
		objs = append(objs,
			tenant(fmt.Sprintf("pinned-%d", i), tenancyv1alpha1.Component{Name: "web", Version: "1.0.0"}),
			tenant(fmt.Sprintf("api-%d", i), tenancyv1alpha1.Component{Name: "api", Version: "1.0.0", FollowRollouts: true}))
	}
	return objs
}

// A rollout's reconcile visits the tenants that let it move its component, and no other: the
// tenants running the component pinned, or other components, are not read, however many there
// are. A tenant of a finished wave that stops following the rollout stays in its wave, so that
// following again does not plan it twice, and one deleted leaves it. Each step states the lists it makes, the objects the cache visits for them
// (the three tenants and the one rollout), the gets, and the waves after it, at 20 and at 2,000
// tenants of each kind the rollout never moves.
func TestARolloutVisitsOnlyTheTenantsFollowingItsComponent(t *testing.T) {
	for _, n := range []int{20, 2000} {
		t.Run(fmt.Sprintf("with %d tenants pinning its component and %d following another", n, n), func(t *testing.T) {
			ctx := context.Background()
			builder := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
				WithStatusSubresource(&tenancyv1alpha1.Tenant{}, &tenancyv1alpha1.ComponentRollout{}).
				WithObjects(rolloutFleet(n)...)
			if err := indexes.Add(ctx, BuilderIndexes{ClientBuilder: builder}); err != nil {
				t.Fatal(err)
			}
			inner := builder.Build()
			reader := &CacheVisits{Client: inner}
			now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
			r := &Reconciler{Client: reader, Now: func() time.Time { return now }}
			getTenant := func(t *testing.T, name string) *tenancyv1alpha1.Tenant {
				return Get(t, inner, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{})
			}

			for _, step := range []struct {
				name                 string
				do                   func(t *testing.T)
				lists, visited, gets int
				waves                [][]string
				released             int32
			}{
				{
					name: "the first reconcile plans the tenants following web one a wave and releases the first",
					do:   func(*testing.T) {},
					// The rollout and its template are read by name.
					lists: 2, visited: 3 + 1, gets: 2,
					waves: [][]string{{"web-0"}, {"web-1"}, {"web-2"}}, released: 1,
				},
				{
					name: "web-0 running 2.0.0 Ready completes its wave and the next is released",
					do: func(t *testing.T) {
						tn := getTenant(t, "web-0")
						tn.Status.Components = []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: "2.0.0", Ready: true}}
						if err := inner.Status().Update(ctx, tn); err != nil {
							t.Fatal(err)
						}
					},
					lists: 2, visited: 3 + 1, gets: 2,
					waves: [][]string{{"web-0"}, {"web-1"}, {"web-2"}}, released: 2,
				},
				{
					name: "web-0 pinned after its wave finished stays in the wave, read by its name",
					do: func(t *testing.T) {
						tn := getTenant(t, "web-0")
						tn.Spec.Components[0].FollowRollouts = false
						if err := inner.Update(ctx, tn); err != nil {
							t.Fatal(err)
						}
					},
					lists: 2, visited: 2 + 1, gets: 2 + 1,
					waves: [][]string{{"web-0"}, {"web-1"}, {"web-2"}}, released: 2,
				},
				{
					name: "web-0 following again is not planned a second time",
					do: func(t *testing.T) {
						tn := getTenant(t, "web-0")
						tn.Spec.Components[0].FollowRollouts = true
						if err := inner.Update(ctx, tn); err != nil {
							t.Fatal(err)
						}
					},
					lists: 2, visited: 3 + 1, gets: 2,
					waves: [][]string{{"web-0"}, {"web-1"}, {"web-2"}}, released: 2,
				},
				{
					name: "web-0 deleted leaves the rollout's status with its finished wave",
					do: func(t *testing.T) {
						if err := inner.Delete(ctx, getTenant(t, "web-0")); err != nil {
							t.Fatal(err)
						}
					},
					lists: 2, visited: 2 + 1, gets: 2 + 1,
					waves: [][]string{{"web-1"}, {"web-2"}}, released: 1,
				},
			} {
				t.Run(step.name, func(t *testing.T) {
					step.do(t)
					reader.Lists, reader.Visited, reader.Gets = 0, 0, 0
					if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "web-2"}}); err != nil {
						t.Fatal(err)
					}
					if reader.Lists != step.lists || reader.Visited != step.visited || reader.Gets != step.gets {
						t.Errorf("%d lists visiting %d objects and %d gets, want %d visiting %d and %d gets",
							reader.Lists, reader.Visited, reader.Gets, step.lists, step.visited, step.gets)
					}
					ro := Get(t, inner, client.ObjectKey{Name: "web-2"}, &tenancyv1alpha1.ComponentRollout{})
					var waves [][]string
					for _, w := range ro.Status.Waves {
						waves = append(waves, w.Tenants)
					}
					if !slices.EqualFunc(waves, step.waves, slices.Equal) || ro.Status.Released != step.released {
						t.Errorf("waves %v with %d released, want %v with %d", waves, ro.Status.Released, step.waves, step.released)
					}
				})
			}
		})
	}
}

// A tenant whose failure was counted as the version's (its pods crashed) could turn it into a
// trouble of its own while its wave was still judged: delete a crashing pod and fill the freed
// room in its quota with a pod of its own, and the rollout, no longer halted, went on to the
// fleet. A version's failure stays the version's.
func TestAVersionsFailureStaysTheVersionsInTheWaveBeingJudged(t *testing.T) {
	now := time.Now()
	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2"},
		Spec:       tenancyv1alpha1.ComponentRolloutSpec{Component: "web", Version: "2.0.0"},
	}
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", Generation: 1},
		Spec:       tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0", FollowRollouts: true}}},
		Status: tenancyv1alpha1.TenantStatus{
			Components: []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: "2.0.0", Rollout: "web-2", Reason: tenancyv1alpha1.ReasonQuotaExceeded}},
			Conditions: []metav1.Condition{
				{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonQuotaExceeded, LastTransitionTime: metav1.NewTime(now)},
				{Type: tenancyv1alpha1.ComponentsReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonQuotaExceeded},
			},
		},
	}
	status := tenancyv1alpha1.ComponentRolloutStatus{
		Released: 1,
		Waves: []tenancyv1alpha1.RolloutWave{{
			Tenants:   []string{"acme"},
			StartedAt: &metav1.Time{Time: now.Add(-time.Minute)},
			Failed:    []tenancyv1alpha1.RolloutFailure{{Tenant: "acme", Reason: tenancyv1alpha1.ReasonRolloutFailed}},
		}},
	}
	failed := count(ro, labels.Everything(), nil, &status, map[string]*tenancyv1alpha1.Tenant{"acme": tenant}, now, func(time.Duration) {})
	if failed != 1 || len(status.Waves[0].Failed) != 1 || status.Waves[0].Failed[0].OwnCause {
		t.Errorf("failed = %d, wave failures %+v: want the version's failure kept", failed, status.Waves[0].Failed)
	}
}
