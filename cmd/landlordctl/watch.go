package main

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listThenWatch is a ListerWatcher that lists, then watches from the list's resourceVersion,
// rather than asking for a streamed initial list: every API server and client serves that.
type listThenWatch struct{ *cache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// watchScope is what a wait lists and watches: objects of list's type, in namespace ("" for
// cluster-scoped kinds or all namespaces), narrowed by field and label selectors (nil for none).
type watchScope struct {
	list      client.ObjectList
	namespace string
	fields    fields.Selector
	labels    labels.Selector
}

func (s watchScope) listerWatcher(c client.WithWatch) listThenWatch {
	opts := func(raw metav1.ListOptions) *client.ListOptions {
		return &client.ListOptions{Raw: &raw, Namespace: s.namespace, FieldSelector: s.fields, LabelSelector: s.labels}
	}
	return listThenWatch{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list := s.list.DeepCopyObject().(client.ObjectList)
			return list, c.List(ctx, list, opts(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, s.list.DeepCopyObject().(client.ObjectList), opts(o))
		},
	}}
}

// watchUntil lists the scope, hands every object to seen, then hands it each object that
// changes, until seen says the wait is over (or fails), or ctx ends. A deleted object comes with
// deleted set. Waiting is driven by the API server's watch: nothing is read again on a timer,
// and a dropped watch is resumed by the informer underneath.
func watchUntil(ctx context.Context, c client.WithWatch, scope watchScope, objType client.Object,
	seen func(obj runtime.Object, deleted bool) (bool, error), settle func(store cache.Store) (bool, error)) error {
	precondition := func(store cache.Store) (bool, error) {
		for _, obj := range store.List() {
			if done, err := seen(obj.(runtime.Object), false); done || err != nil {
				return done, err
			}
		}
		return settle(store)
	}
	_, err := watchtools.UntilWithSync(ctx, scope.listerWatcher(c), objType, precondition, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Added, watch.Modified:
			return seen(ev.Object, false)
		case watch.Deleted:
			return seen(ev.Object, true)
		}
		return false, nil
	})
	return err
}
