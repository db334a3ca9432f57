package components

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/component"
)

// workloadsFieldOwner is the field manager of the namespace's WorkloadsAnnotation, apart from
// the namespace phase's: each owns what it writes, and neither's apply removes the other's.
const workloadsFieldOwner = "landlord-workloads"

// scalableKinds are the kinds with a scale subresource, by the resource the scale policy
// (policy.ComponentScalePolicy) names them with.
var scalableKinds = map[schema.GroupKind]string{
	{Group: "apps", Kind: "Deployment"}:  "deployments.apps",
	{Group: "apps", Kind: "StatefulSet"}: "statefulsets.apps",
	{Group: "apps", Kind: "ReplicaSet"}:  "replicasets.apps",
	{Kind: "ReplicationController"}:      "replicationcontrollers",
}

// workloadEntry is how WorkloadsAnnotation lists a workload of kind gk: false for a kind without
// a scale subresource.
func workloadEntry(gk schema.GroupKind, name string) (string, bool) {
	resource, ok := scalableKinds[gk]
	if !ok {
		return "", false
	}
	return resource + "/" + name, true
}

// workloadsOf lists the workloads among rendered objects.
func workloadsOf(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if e, ok := workloadEntry(o.GroupVersionKind().GroupKind(), o.GetName()); ok {
			out = append(out, e)
		}
	}
	return out
}

// inventoryWorkloads lists the workloads in the components' inventories.
func inventoryWorkloads(statuses []tenancyv1alpha1.ComponentStatus) []string {
	var out []string
	for _, st := range statuses {
		for _, key := range st.Inventory {
			gk, name, err := component.ParseInventoryKey(key)
			if err != nil {
				continue
			}
			if e, ok := workloadEntry(gk, name); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// recordWorkloads makes the tenant namespace's WorkloadsAnnotation list want: with exact, want
// alone (once every component has converged, so that a workload gone from every component stops
// being listed); otherwise want beside what it lists already (before a component's objects are
// applied, so that no workload of Landlord's exists unlisted). The list is read from the cache
// once a reconcile and then kept in s, so that a second component's write does not take back
// the first's; nothing is written while it is already right, and a write is made against the
// API server's own copy.
func (e *Engine) recordWorkloads(ctx context.Context, s *scope, want []string, exact bool) error {
	if s.workloads == nil {
		ns := &corev1.Namespace{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: s.namespace}, ns, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("reading namespace %s: %w", s.namespace, err)
		}
		s.workloads = splitWorkloads(ns.Annotations[tenancyv1alpha1.WorkloadsAnnotation])
	}
	next := merged(want, s.workloads, exact)
	if slices.Equal(next, s.workloads) {
		return nil
	}
	// About to write: the cache may lag the last write (this tenant's previous reconcile), and a
	// list built from it would take back workloads listed since. The write is made against the
	// API server's copy, and refused if that changed before it lands.
	live := &corev1.Namespace{}
	if err := e.APIReader.Get(ctx, client.ObjectKey{Name: s.namespace}, live); err != nil {
		return fmt.Errorf("reading namespace %s: %w", s.namespace, err)
	}
	s.workloads = splitWorkloads(live.Annotations[tenancyv1alpha1.WorkloadsAnnotation])
	next = merged(want, s.workloads, exact)
	if slices.Equal(next, s.workloads) {
		return nil
	}
	metadata := map[string]any{"name": s.namespace, "resourceVersion": live.ResourceVersion}
	if len(next) > 0 {
		metadata["annotations"] = map[string]any{tenancyv1alpha1.WorkloadsAnnotation: strings.Join(next, ",")}
	}
	// An apply without the annotation gives it up, and the API server removes it.
	body, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{}
	ns.Name = s.namespace
	if err := e.Client.Patch(ctx, ns, client.RawPatch(types.ApplyYAMLPatchType, body), client.FieldOwner(workloadsFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("listing the workloads of tenant %s on namespace %s: %w", s.tenant.Name, s.namespace, err)
	}
	s.workloads = next
	return nil
}

// merged is want, with listed besides unless exact, sorted and each once.
func merged(want, listed []string, exact bool) []string {
	next := slices.Clone(want)
	if !exact {
		next = append(next, listed...)
	}
	slices.Sort(next)
	return slices.Compact(next)
}

// splitWorkloads is the sorted list a WorkloadsAnnotation holds, never nil.
func splitWorkloads(v string) []string {
	out := []string{}
	for e := range strings.SplitSeq(v, ",") {
		if e != "" {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
