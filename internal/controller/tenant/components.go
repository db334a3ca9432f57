package tenant

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/resources"
)

// kindWatches starts, once per kind, an informer and a watch for the kinds components render,
// so a rendered object that drifts or rolls out re-triggers its tenant. Kinds are known only
// when a template renders them.
//
// A kind is used only once the operator is known to be allowed to list and watch it: an
// informer on a kind it may not list never syncs, and would hold whoever waits on it. Nothing
// is waited on under the lock, and the wait for a new informer ends at one deadline per kind,
// so a kind the API server cannot list (a conversion webhook or an aggregated API that is down)
// holds workers for one timeout in all, never one per reconcile, and one tenant's kind never
// holds another tenant's reconcile for longer.
type kindWatches struct {
	mu       sync.Mutex
	ctrl     controller.Controller
	cache    cache.Cache
	handler  handler.EventHandler
	client   client.Client
	timeout  time.Duration
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

func (w *kindWatches) ensure(ctx context.Context, gvk schema.GroupVersionKind) error {
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
	syncBy := kind.started.Add(w.timeout)
	waitCtx, cancel := context.WithDeadline(ctx, syncBy)
	defer cancel()
	if time.Now().After(syncBy) || !toolscache.WaitForCacheSync(waitCtx.Done(), kind.informer.HasSynced) {
		return fmt.Errorf("the informer for %s has not synced since it started at %s: the API server does not list %s for the operator (a conversion webhook or an aggregated API that is down?); tenants rendering it wait, and others go on",
			gvk.Kind, kind.started.UTC().Format(time.RFC3339), gvk.GroupKind())
	}
	return nil
}

// start registers the watch and the informer for a kind once; it never waits for the informer.
func (w *kindWatches) start(ctx context.Context, gvk schema.GroupVersionKind) (kindInformer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if kind, ok := w.watching[gvk]; ok {
		return kind, nil
	}
	u := newObject(w.client.Scheme(), gvk)
	informer, err := w.cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err != nil {
		return kindInformer{}, fmt.Errorf("starting the informer for %s: %w", gvk.Kind, err)
	}
	if err := w.ctrl.Watch(source.Kind[client.Object](w.cache, u, w.handler)); err != nil {
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
func (w *kindWatches) allowed(ctx context.Context, gvk schema.GroupVersionKind) error {
	mapping, err := w.client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("finding the resource of %s: %w", gvk.Kind, err)
	}
	resource := mapping.Resource.GroupResource().String()
	var refused []string
	for _, verb := range componentKindVerbs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: gvk.Group, Version: gvk.Version, Resource: mapping.Resource.Resource},
		}}
		if err := w.client.Create(ctx, review); err != nil {
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

// ensureComponents renders each pinned component, applies what differs from the cache, prunes
// what left its manifests (or the spec), records each component in the status draft, and
// reports whether every workload has rolled out. A component that cannot render keeps running
// what it ran before: nothing is pruned for it.
func (r *Reconciler) ensureComponents(ctx context.Context, s *tenantScope) outcome {
	t := s.tenant
	prev := map[string]*tenancyv1alpha1.ComponentStatus{}
	for i := range t.Status.Components {
		prev[t.Status.Components[i].Name] = &t.Status.Components[i]
	}

	var (
		statuses []tenancyv1alpha1.ComponentStatus
		stall    *outcome
		errs     []error
		waiting  []string
	)
	for _, c := range t.Spec.Components {
		chosen, err := r.versionOf(ctx, t, c)
		if err != nil {
			if p := prev[c.Name]; p != nil {
				statuses = append(statuses, *p)
			}
			delete(prev, c.Name)
			errs = append(errs, err)
			waiting = append(waiting, fmt.Sprintf("component %s: %v", c.Name, err))
			continue
		}
		c.Version = chosen.version
		st, res := r.ensureComponent(ctx, s, c, prev[c.Name])
		st.Reason = ""
		if res.stalled {
			st.Reason = res.reason
		}
		if st.Version == chosen.version {
			st.Rollout, st.RolloutCreated = chosen.rollout, chosen.created
		}
		delete(prev, c.Name)
		statuses = append(statuses, st)
		switch {
		case res.stalled:
			if stall == nil {
				stall = &res
			}
		case res.err != nil:
			errs = append(errs, res.err)
			waiting = append(waiting, res.message)
		case !st.Ready:
			waiting = append(waiting, fmt.Sprintf("component %s %s: %s", c.Name, c.Version, st.Message))
		}
	}
	// Components removed from the spec: everything they applied goes.
	for name, st := range prev {
		if err := r.prune(ctx, s, st.Inventory, nil); err != nil {
			statuses = append(statuses, *st)
			errs = append(errs, err)
			waiting = append(waiting, fmt.Sprintf("removing component %s: %v", name, err))
			continue
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonComponentRemoved, "Prune", "component %s removed", name)
	}
	slices.SortFunc(statuses, func(a, b tenancyv1alpha1.ComponentStatus) int { return cmp.Compare(a.Name, b.Name) })
	s.status.Components = statuses

	if stall == nil && len(errs) == 0 {
		// Every component applied, and those removed are pruned: the list is what they render.
		if err := r.recordWorkloads(ctx, s, inventoryWorkloads(statuses), true); err != nil {
			errs = append(errs, err)
			waiting = append(waiting, err.Error())
		}
	}
	switch {
	case stall != nil:
		return *stall
	case len(waiting) > 0:
		return outcome{reason: tenancyv1alpha1.ReasonRollingOut, message: strings.Join(waiting, "; "), err: errors.Join(errs...)}
	}
	return done(tenancyv1alpha1.ReasonSucceeded, "%d components rolled out", len(t.Spec.Components))
}

// ensureComponent converges one component and returns its status entry.
func (r *Reconciler) ensureComponent(ctx context.Context, s *tenantScope, c tenancyv1alpha1.Component, prev *tenancyv1alpha1.ComponentStatus) (tenancyv1alpha1.ComponentStatus, outcome) {
	t, nsName := s.tenant, s.namespace
	keep := func(res outcome) (tenancyv1alpha1.ComponentStatus, outcome) {
		st := tenancyv1alpha1.ComponentStatus{Name: c.Name}
		if prev != nil {
			st = *prev.DeepCopy()
		}
		st.Ready = false
		st.Message = res.message
		return st, res
	}
	stall := func(reason, format string, args ...any) (tenancyv1alpha1.ComponentStatus, outcome) {
		msg := fmt.Sprintf(format, args...)
		if prefix := fmt.Sprintf("component %s version %s", c.Name, c.Version); !strings.HasPrefix(msg, prefix) {
			msg = prefix + ": " + msg
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, reason, "Render", "%s", msg)
		componentRenderFailures.WithLabelValues(c.Name, reason).Inc()
		return keep(stalled(reason, "%s", msg))
	}

	tmpl := &tenancyv1alpha1.ComponentTemplate{}
	tmplName := tenancyv1alpha1.ComponentTemplateName(c.Name, c.Version)
	// Read without the cache's deep copy: the template is only read, and its manifests are
	// the largest part of it.
	if err := r.Client.Get(ctx, client.ObjectKey{Name: tmplName}, tmpl, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return stall(tenancyv1alpha1.ReasonTemplateNotFound, "ComponentTemplate %s not found", tmplName)
		}
		return keep(failed(tenancyv1alpha1.ReasonApplyFailed, err))
	}
	if tmpl.Spec.Component != c.Name || tmpl.Spec.Version != c.Version {
		return stall(tenancyv1alpha1.ReasonRenderFailed, "ComponentTemplate %s is for component %s version %s", tmplName, tmpl.Spec.Component, tmpl.Spec.Version)
	}

	objs, err := r.render(t, nsName, tmpl, c)
	if err != nil {
		return stall(tenancyv1alpha1.ReasonRenderFailed, "%v", err)
	}
	for _, obj := range objs {
		if err := r.checkKind(obj, nsName); err != nil {
			if _, ok := errors.AsType[*component.KindError](err); ok {
				return stall(tenancyv1alpha1.ReasonKindNotAllowed, "%v", err)
			}
			return stall(tenancyv1alpha1.ReasonRenderFailed, "%v", err)
		}
	}
	// Every kind is checked, and watched, before anything is applied: a component is not left
	// half applied for a kind the operator may not use.
	for _, gvk := range kindsOf(objs) {
		if err := r.Kinds.ensure(ctx, gvk); err != nil {
			var notAllowed *kindNotAllowedError
			if errors.As(err, &notAllowed) {
				return stall(tenancyv1alpha1.ReasonKindNotAllowed, "%v", err)
			}
			return keep(failed(tenancyv1alpha1.ReasonApplyFailed, err))
		}
	}

	// The scale policy knows Landlord's workloads by the namespace's list: listed first, they are
	// never applied unguarded.
	if err := r.recordWorkloads(ctx, s, workloadsOf(objs), false); err != nil {
		return keep(failed(tenancyv1alpha1.ReasonApplyFailed, err))
	}

	ownedByOthers, err := component.FieldsOwnedByOthers(tmpl.Spec.FieldsOwnedByOthers)
	if err != nil {
		return stall(tenancyv1alpha1.ReasonRenderFailed, "%v", err)
	}
	if t.Spec.State == tenancyv1alpha1.StateFrozen {
		ownedByOthers = component.WhileFrozen(ownedByOthers)
	}

	applier := r.applier(s)
	applier.OwnedByOthers = ownedByOthers
	applier.Repaired = writes.DriftRepaired(log.FromContext(ctx).WithValues("tenant", t.Name), r.Recorder, t)
	inventory := make([]string, 0, len(objs))
	current := map[string]bool{}
	// What the API server answered to this reconcile's writes: the cache sees them only later.
	written := map[string]*unstructured.Unstructured{}
	for _, obj := range objs {
		resources.StampComponentObject(t, nsName, c.Name, obj)
		if t.Spec.State == tenancyv1alpha1.StateFrozen {
			component.ScaleToZero([]*unstructured.Unstructured{obj})
		}
		_, answer, err := applier.ApplyLive(ctx, obj)
		if err != nil {
			res := r.applyFailed(t, obj, err)
			res.message = fmt.Sprintf("component %s version %s: %s", c.Name, c.Version, res.message)
			return keep(res)
		}
		key := component.InventoryKey(obj)
		if answer != nil {
			written[key] = answer
		}
		inventory = append(inventory, key)
		current[key] = true
	}
	sort.Strings(inventory)
	if prev != nil {
		if err := r.prune(ctx, s, prev.Inventory, current); err != nil {
			return keep(failed(tenancyv1alpha1.ReasonApplyFailed, err))
		}
	}

	st := tenancyv1alpha1.ComponentStatus{Name: c.Name, Version: c.Version, Ready: true, Inventory: inventory}
	// A version change is worth an event; a tenant's first apply is already in its history.
	if prev != nil && prev.Version != c.Version {
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonComponentApplied, "Apply", "component %s version %s applied", c.Name, c.Version)
	}
	var notReady, failures, quota []string
	for _, obj := range objs {
		var live client.Object
		health := component.CachedHealth
		if answer, ok := written[component.InventoryKey(obj)]; ok {
			live, health = answer, component.LiveHealth
		} else {
			live = newObject(r.Client.Scheme(), obj.GroupVersionKind())
			// Only read: no need for the cache's deep copy. The cache keeps the object's
			// health, worked out when it arrived, in place of its body.
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), live, client.UnsafeDisableDeepCopy); err != nil {
				// Not in the cache yet; its arrival re-triggers us.
				notReady = append(notReady, fmt.Sprintf("%s %s: waiting to be observed", obj.GetKind(), obj.GetName()))
				continue
			}
		}
		h, err := health(live, obj.GroupVersionKind())
		if err != nil {
			h.Message = err.Error()
		}
		line := fmt.Sprintf("%s %s: %s", obj.GetKind(), obj.GetName(), h.Message)
		if h.QuotaExceeded {
			// The version's pods would fit the quota: whose pods fill it decides whose failure
			// this is. Asked only of a workload refused by the quota, so it costs no request
			// otherwise.
			own, err := r.ownPodsFillQuota(ctx, s, h.Quota, objs)
			if err != nil {
				return keep(failed(tenancyv1alpha1.ReasonApplyFailed, err))
			}
			h.QuotaExceeded = own
		}
		switch {
		case h.QuotaExceeded:
			quota = append(quota, line)
		case h.Failed:
			failures = append(failures, line)
		case !h.Ready:
			notReady = append(notReady, line)
		}
	}
	if all := slices.Concat(quota, failures, notReady); len(all) > 0 {
		st.Ready = false
		st.Message = strings.Join(all, "; ")
	}
	if len(quota) > 0 {
		// The tenant's quota has no room for the version's pods, with the tenant's own among
		// them: the tenant's to free, the platform's to raise. A rollout counts it as the
		// tenant's own failure, not the version's (rollout.OwnCause).
		msg := fmt.Sprintf("component %s version %s: the tenant's quota has no room for its pods: %s", c.Name, c.Version, strings.Join(quota, "; "))
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonQuotaExceeded, "Rollout", "%s", msg)
		return st, stalled(tenancyv1alpha1.ReasonQuotaExceeded, "%s", msg)
	}
	if len(failures) > 0 {
		// A rollout that failed waits for a new version or values (or for its workload to
		// recover, whose status change re-triggers the tenant).
		return st, stalled(tenancyv1alpha1.ReasonRolloutFailed, "%s: %s", c.Name, strings.Join(failures, "; "))
	}
	return st, outcome{done: st.Ready}
}

// render merges the values (template defaults < operator defaults < tenant values), checks them
// against the template's schema, and renders the manifests.
func (r *Reconciler) render(t *tenancyv1alpha1.Tenant, nsName string, tmpl *tenancyv1alpha1.ComponentTemplate, c tenancyv1alpha1.Component) ([]*unstructured.Unstructured, error) {
	in := component.NewInput(t, nsName, tmpl)
	inputs := renderInputs{Template: string(tmpl.UID), Input: in}
	if c.Values != nil {
		inputs.Values = c.Values.Raw
	}
	fingerprint, err := apply.FingerprintOf(inputs)
	if err != nil {
		return nil, err
	}
	if objs, ok := r.rendered.get(nsName, c.Name, fingerprint); ok {
		return objs, nil
	}
	objs, err := r.renderNow(tmpl, c, in)
	if err != nil {
		return nil, err
	}
	r.rendered.put(nsName, c.Name, fingerprint, objs)
	return objs, nil
}

func (r *Reconciler) renderNow(tmpl *tenancyv1alpha1.ComponentTemplate, c tenancyv1alpha1.Component, in component.Input) ([]*unstructured.Unstructured, error) {
	return component.RenderForTenant(tmpl, c, in, r.Config.Components.DefaultValues[c.Name], r.Config.Components.Render.Limits())
}

// checkKind allows only kinds the API server knows, that components may render
// (components.allowedKinds, never a cluster-scoped kind or one the tenant's isolation is built
// of), in the tenant's namespace: a template must never reach outside the tenant, nor change what
// isolates it. A *component.KindError is a kind not allowed.
func (r *Reconciler) checkKind(obj *unstructured.Unstructured, nsName string) error {
	gvk := obj.GroupVersionKind()
	mapping, err := r.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s: unknown kind: %w", gvk.Kind, obj.GetName(), err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if err := component.CheckKind(r.Config.AllowedComponentKinds(), gvk.GroupKind(), obj.GetName(), namespaced); err != nil {
		return err
	}
	if ns := obj.GetNamespace(); ns != "" && ns != nsName {
		return fmt.Errorf("%s %s is in namespace %s; a component may only create objects in the tenant namespace %s", gvk.Kind, obj.GetName(), ns, nsName)
	}
	return nil
}

// prune deletes the objects of an inventory that are not current, if the tenant controls them.
func (r *Reconciler) prune(ctx context.Context, s *tenantScope, inventory []string, current map[string]bool) error {
	for _, key := range inventory {
		if current[key] {
			continue
		}
		gk, name, err := component.ParseInventoryKey(key)
		if err != nil {
			continue
		}
		mapping, err := r.Client.RESTMapper().RESTMapping(gk)
		if err != nil {
			if meta.IsNoMatchError(err) {
				// The kind is gone from the cluster, and its objects with it.
				continue
			}
			return err
		}
		obj := newObject(r.Client.Scheme(), mapping.GroupVersionKind)
		if err := r.Kinds.ensure(ctx, mapping.GroupVersionKind); err != nil {
			return err
		}
		key := client.ObjectKey{Namespace: s.namespace, Name: name}
		var target client.Object = obj
		switch err := r.Client.Get(ctx, key, obj); {
		case apierrors.IsNotFound(err):
			// The cache may not hold it and still it may be there: created by the reconcile
			// before, with the watch behind, or out of the cache's selection since. Forgotten
			// from the inventory, it would stay in the tenant's namespace for good: its metadata
			// is read from the API server instead, and gone only when it is gone there.
			live := &metav1.PartialObjectMetadata{}
			live.SetGroupVersionKind(mapping.GroupVersionKind)
			if err := r.APIReader.Get(ctx, key, live); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return err
			}
			target = live
		case err != nil:
			return err
		}
		if _, err := writes.DeleteIfControlled(ctx, r.Client, r.APIReader, target, s.tenant); err != nil {
			return fmt.Errorf("pruning %s %s: %w", gk.Kind, name, err)
		}
	}
	return nil
}
