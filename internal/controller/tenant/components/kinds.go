package components

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// KindWatches starts, once per kind, an informer and a watch for the kinds components render,
// so a rendered object that drifts or rolls out re-triggers its tenant. Kinds are known only
// when a template renders them.
//
// A kind is used only once the operator is known to be allowed to list and watch it: an
// informer on a kind it may not list never syncs, and would hold whoever waits on it. Nothing
// is waited on under the lock, and the wait for a new informer ends at one deadline per kind,
// so a kind the API server cannot list (a conversion webhook or an aggregated API that is down)
// holds workers for one timeout in all, never one per reconcile, and one tenant's kind never
// holds another tenant's reconcile for longer.
type KindWatches struct {
	// Controller gets a watch of each kind, through Cache, whose events Handler maps to
	// tenants.
	Controller controller.Controller
	Cache      cache.Cache
	Handler    handler.EventHandler
	// Client maps kinds to resources and asks the API server what the operator may do.
	Client client.Client
	// Timeout is how long after a kind's informer started it should have synced.
	Timeout time.Duration

	mu       sync.Mutex
	watching map[schema.GroupVersionKind]kindInformer
	asking   singleflight.Group
}

// kindInformer is a kind's informer and when it started: it should have synced a timeout later.
type kindInformer struct {
	informer cache.Informer
	started  time.Time
}

// kindNotAllowedError is a kind the operator may not read or write as a component's objects
// need: only a person can change that, by granting it or by taking the kind out of the template.
type kindNotAllowedError struct {
	gvk      schema.GroupVersionKind
	resource string
	verbs    []string
}

func (e *kindNotAllowedError) Error() string {
	return fmt.Sprintf("the operator may not %s %s (kind %s): grant Landlord's ServiceAccount %s on it, or take the kind out of the template",
		andList(e.verbs), e.resource, e.gvk.Kind, andList(componentKindVerbs))
}

// componentKindVerbs is what the operator does with a kind its components render: its informer
// lists and watches it, a cache miss or a comparison reads it (get), an apply creates or patches
// it, and a prune deletes it.
var componentKindVerbs = []string{"get", "list", "watch", "create", "patch", "delete"}

// andList joins words as a sentence does: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func (w *KindWatches) ensure(ctx context.Context, gvk schema.GroupVersionKind) error {
	w.mu.Lock()
	kind, ok := w.watching[gvk]
	w.mu.Unlock()
	if !ok {
		// One question per kind, however many reconciles render it at once (a restart).
		_, err, _ := w.asking.Do(gvk.String(), func() (any, error) {
			if err := w.allowed(ctx, gvk); err != nil {
				return nil, err
			}
			var err error
			kind, err = w.start(ctx, gvk)
			return nil, err
		})
		if err != nil {
			return err
		}
		w.mu.Lock()
		kind = w.watching[gvk]
		w.mu.Unlock()
	}
	if kind.informer.HasSynced() {
		return nil
	}
	// The first read of the kind must see the cluster, not an empty cache; past the kind's
	// deadline nobody waits any more, and the informer still syncs when the API server lists it.
	syncBy := kind.started.Add(w.Timeout)
	waitCtx, cancel := context.WithDeadline(ctx, syncBy)
	defer cancel()
	if time.Now().After(syncBy) || !toolscache.WaitForCacheSync(waitCtx.Done(), kind.informer.HasSynced) {
		return fmt.Errorf("the informer for %s has not synced since it started at %s: the API server does not list %s for the operator (a conversion webhook or an aggregated API that is down?); tenants rendering it wait, and others go on",
			gvk.Kind, kind.started.UTC().Format(time.RFC3339), gvk.GroupKind())
	}
	return nil
}

// start registers the watch and the informer for a kind once; it never waits for the informer.
func (w *KindWatches) start(ctx context.Context, gvk schema.GroupVersionKind) (kindInformer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if kind, ok := w.watching[gvk]; ok {
		return kind, nil
	}
	u := newObject(w.Client.Scheme(), gvk)
	informer, err := w.Cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err != nil {
		return kindInformer{}, fmt.Errorf("starting the informer for %s: %w", gvk.Kind, err)
	}
	if err := w.Controller.Watch(source.Kind[client.Object](w.Cache, u, w.Handler)); err != nil {
		return kindInformer{}, fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	if w.watching == nil {
		w.watching = map[schema.GroupVersionKind]kindInformer{}
	}
	kind := kindInformer{informer: informer, started: time.Now()}
	w.watching[gvk] = kind
	return kind, nil
}

// allowed asks the API server whether the operator may do with the kind, in every namespace,
// what it does with a component's objects (componentKindVerbs). Without list and watch, its
// informer would never sync; without a write, every apply or prune would be refused and retried
// for ever. A kind once allowed is not asked about again.
func (w *KindWatches) allowed(ctx context.Context, gvk schema.GroupVersionKind) error {
	mapping, err := w.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("finding the resource of %s: %w", gvk.Kind, err)
	}
	resource := mapping.Resource.GroupResource().String()
	var refused []string
	for _, verb := range componentKindVerbs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: gvk.Group, Version: gvk.Version, Resource: mapping.Resource.Resource},
		}}
		if err := w.Client.Create(ctx, review); err != nil {
			return fmt.Errorf("asking whether the operator may %s %s: %w", verb, resource, err)
		}
		if !review.Status.Allowed {
			refused = append(refused, verb)
		}
	}
	if len(refused) > 0 {
		return &kindNotAllowedError{gvk: gvk, resource: resource, verbs: refused}
	}
	return nil
}

// newObject is an empty object of the kind: typed when the scheme knows it, so that a kind a
// component renders and Landlord also watches (a Secret) is read through the one informer, and
// unstructured otherwise.
func newObject(scheme *runtime.Scheme, gvk schema.GroupVersionKind) client.Object {
	if typed, err := scheme.New(gvk); err == nil {
		if obj, ok := typed.(client.Object); ok {
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			return obj
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// kindsOf is the distinct kinds of objs, in order of first appearance.
func kindsOf(objs []*unstructured.Unstructured) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, obj := range objs {
		if gvk := obj.GroupVersionKind(); !slices.Contains(out, gvk) {
			out = append(out, gvk)
		}
	}
	return out
}
