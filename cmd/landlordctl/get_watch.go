package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchGet is `get --watch`: the objects as a table (unless --watch-only), then a row for each
// change under the same header, or each changed object in the -o format, until ctx ends. The
// watch starts at the list's resourceVersion, so no change between the two is lost, and resumes
// from the last change seen when the API server ends it, as it does every half hour or so.
func watchGet(ctx context.Context, out, errOut io.Writer, c client.WithWatch, o *getOptions, k *resourceKind,
	namespace string, selector labels.Selector, names []string) error {
	scope := watchScope{list: k.newList(), namespace: namespace, labels: selector}
	if len(names) == 1 {
		scope.fields = fields.OneTermEqualSelector("metadata.name", names[0])
	}
	list := k.newList()
	if err := c.List(ctx, list, &client.ListOptions{Namespace: namespace, LabelSelector: scope.labels, FieldSelector: scope.fields}); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	if len(names) == 1 && len(items) == 0 {
		return k.notFound(namespace, names[0])
	}
	p, err := newWatchPrinter(out, o, k, namespace == "")
	if err != nil {
		return err
	}
	if !o.watchOnly {
		if len(items) == 0 && o.output.human() {
			fmt.Fprintln(errOut, noneFound(k, namespace))
		}
		if err := p.printList(list, items); err != nil {
			return err
		}
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), scope.listerWatcher(c))
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, open := <-w.ResultChan():
			if !open {
				return nil
			}
			switch ev.Type {
			case watch.Bookmark:
				continue
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return fmt.Errorf("the watch fell too far behind the API server (%w): run the command again", err)
				}
				return fmt.Errorf("watching %s: %w", k.name(), err)
			}
			if err := p.print(ev.Type, ev.Object); err != nil {
				return err
			}
		}
	}
}

// watchPrinter prints a watch's objects: as rows of one table in the human formats (the header
// once), else each object in the -o format.
type watchPrinter struct {
	out    io.Writer
	k      *resourceKind
	events bool
	// managedFields is --show-managed-fields: as kubectl, the objects are printed without them.
	managedFields bool
	table         printers.ResourcePrinter
	object        printers.ResourcePrinter
}

func newWatchPrinter(out io.Writer, o *getOptions, k *resourceKind, allNamespaces bool) (*watchPrinter, error) {
	p := &watchPrinter{out: out, k: k, events: o.watchEvents, managedFields: o.output.print.JSONYamlPrintFlags.ShowManagedFields}
	if o.output.human() {
		p.table = o.output.tablePrinter(k.namespaced && allNamespaces)
		return p, nil
	}
	// One printer for the whole watch: YAML documents are then separated as they follow.
	printer, err := o.output.print.ToPrinter()
	p.object = printer
	return p, err
}

// printList prints what the list found, before the watch.
func (p *watchPrinter) printList(list client.ObjectList, items []runtime.Object) error {
	if p.table != nil && !p.events {
		if len(items) == 0 {
			return nil
		}
		return p.table.PrintObj(p.k.table(list), p.out)
	}
	for _, item := range items {
		if err := p.print(watch.Added, item); err != nil {
			return err
		}
	}
	return nil
}

// print prints one object a watch handed over.
func (p *watchPrinter) print(change watch.EventType, obj runtime.Object) error {
	cobj, ok := obj.(client.Object)
	if !ok {
		return errors.New("the watch handed over something that is not an object")
	}
	var printed runtime.Object = cobj
	if p.table != nil {
		table, err := tableOf(p.k, cobj)
		if err != nil {
			return err
		}
		printed = table
	} else {
		cobj.GetObjectKind().SetGroupVersionKind(p.k.gvk())
		if !p.managedFields {
			// The -o printer leaves them out of the objects it is given, not out of the objects
			// inside the watch events it is given.
			cobj.SetManagedFields(nil)
		}
	}
	if p.events {
		printed = &metav1.WatchEvent{Type: string(change), Object: runtime.RawExtension{Object: printed}}
	}
	if p.table != nil {
		return p.table.PrintObj(printed, p.out)
	}
	return p.object.PrintObj(printed, p.out)
}
