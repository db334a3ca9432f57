// Package components renders each component a tenant pins (or a rollout moves it to) from its
// ComponentTemplate, applies what differs from the cache, prunes what left its manifests or the
// spec, lists the workloads the scale policy guards, and reports whether every workload has
// rolled out. It watches each kind a template renders once the operator is known to be allowed
// it, and remembers each component's last rendering. The tenant reconciler's components phase
// calls it, and the reconciler's watch handlers tell it what to forget.
package components

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/tenant/migrations"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/resources"
)

// Reasons of the events the engine records on a Tenant for what it did, beside the Warning
// events whose reason is the one the tenant's conditions report.
const (
	// ReasonComponentApplied: a component was applied at another version than it ran.
	ReasonComponentApplied = "ComponentApplied"
	// ReasonComponentRemoved: a component no longer in the tenant's spec was removed, with the
	// objects it had rendered.
	ReasonComponentRemoved = "ComponentRemoved"
)

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=componenttemplates,verbs=get;list;watch

// Engine is what rendering, applying and pruning a tenant's components needs of the operator.
type Engine struct {
	// Client reads through the cache and writes; APIReader reads what the cache does not hold
	// (the namespace's workloads list about to be written, an object to prune the cache misses,
	// the pods filling a quota).
	Client    client.Client
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	// Applied remembers the objects found in place, with the tenant's other objects.
	Applied *apply.Memo
	// Kinds watches the kinds components render; set once the tenant controller is built.
	Kinds *KindWatches
	// Migrations runs the migrations of a version a component moves to.
	Migrations *migrations.Engine
	// ApplyFailed classifies a write the API server refused, and records it on the tenant, as
	// the tenant's other phases do.
	ApplyFailed phase.ApplyFailed

	// rendered remembers each component's last rendering.
	rendered renderMemo
}

// scope is one reconcile of one tenant's components: the tenant as the cache holds it (read
// only) and the name of its namespace.
type scope struct {
	tenant    *tenancyv1alpha1.Tenant
	namespace string
	// verify: a reconcile was asked for, and the objects found in place before are compared
	// with the API server's copies again.
	verify bool
	// workloads is the tenant namespace's WorkloadsAnnotation as this reconcile last wrote or
	// read it; nil until then.
	workloads []string
	// switched is when the tenant's databases last switched server, stamped on its pods; ""
	// when they never did.
	switched string
}

// Ensure renders each pinned component of the tenant, whose namespace is namespace, applies
// what differs from the cache, prunes what left its manifests (or the spec), and returns each
// component's status entry (status.components) and whether every workload has rolled out. A
// component that cannot render keeps running what it ran before: nothing is pruned for it. With
// verify, the objects found in place before are compared with the API server's copies again.
//
// switched is when a DatabaseMove last switched one of the tenant's databases to another server
// (component.StampSwitched): the workloads restart onto the new server's credentials.
func (e *Engine) Ensure(ctx context.Context, t *tenancyv1alpha1.Tenant, namespace string, verify bool, switched string) ([]tenancyv1alpha1.ComponentStatus, phase.Result) {
	s := &scope{tenant: t, namespace: namespace, verify: verify, switched: switched}
	prev := map[string]*tenancyv1alpha1.ComponentStatus{}
	for i := range t.Status.Components {
		prev[t.Status.Components[i].Name] = &t.Status.Components[i]
	}

	var (
		statuses []tenancyv1alpha1.ComponentStatus
		stall    *phase.Result
		errs     []error
		waiting  []string
		// migrating: a component waits for its migrations.
		migrating bool
		// wait: how long until a rollout waiting for the tenant's maintenance window may move it.
		wait time.Duration
	)
	for _, c := range t.Spec.Components {
		chosen, err := e.versionOf(ctx, t, c)
		wait = phase.Sooner(wait, chosen.wait)
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
		st, res := e.move(ctx, s, c, prev[c.Name])
		st.Reason = ""
		if res.Stalled {
			st.Reason = res.Reason
		}
		if st.Version == chosen.version {
			st.Rollout, st.RolloutCreated = chosen.rollout, chosen.created
		}
		delete(prev, c.Name)
		statuses = append(statuses, st)
		switch {
		case res.Stalled:
			if stall == nil {
				stall = &res
			}
		case res.Err != nil:
			errs = append(errs, res.Err)
			waiting = append(waiting, res.Message)
		case !st.Ready:
			waiting = append(waiting, fmt.Sprintf("component %s %s: %s", c.Name, c.Version, st.Message))
			migrating = migrating || migrations.Running(st.Migration)
		}
	}
	// Components removed from the spec: everything they applied goes.
	for name, st := range prev {
		if err := e.prune(ctx, s, st.Inventory, nil); err != nil {
			statuses = append(statuses, *st)
			errs = append(errs, err)
			waiting = append(waiting, fmt.Sprintf("removing component %s: %v", name, err))
			continue
		}
		e.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonComponentRemoved, "Prune", "component %s removed", name)
	}
	slices.SortFunc(statuses, func(a, b tenancyv1alpha1.ComponentStatus) int { return cmp.Compare(a.Name, b.Name) })

	if stall == nil && len(errs) == 0 {
		// Every component applied, and those removed are pruned: the list is what they render.
		if err := e.recordWorkloads(ctx, s, inventoryWorkloads(statuses), true); err != nil {
			errs = append(errs, err)
			waiting = append(waiting, err.Error())
		}
	}
	switch {
	case stall != nil:
		return statuses, stall.After(wait)
	case len(waiting) > 0:
		reason := tenancyv1alpha1.ReasonRollingOut
		if migrating && len(errs) == 0 {
			reason = tenancyv1alpha1.ReasonMigrating
		}
		return statuses, phase.Result{Reason: reason, Message: strings.Join(waiting, "; "), Err: errors.Join(errs...), RequeueAfter: wait}
	}
	return statuses, phase.Result{Done: true, Reason: tenancyv1alpha1.ReasonSucceeded, Message: fmt.Sprintf("%d components rolled out", len(t.Spec.Components)), RequeueAfter: wait}
}

// ensureComponent converges one component and returns its status entry.
// With fence, its workloads are scaled to zero, as a Frozen tenant's are.
func (e *Engine) ensureComponent(ctx context.Context, s *scope, c tenancyv1alpha1.Component, prev *tenancyv1alpha1.ComponentStatus, fence bool) (tenancyv1alpha1.ComponentStatus, phase.Result) {
	t, nsName := s.tenant, s.namespace
	keep := func(res phase.Result) (tenancyv1alpha1.ComponentStatus, phase.Result) {
		st := tenancyv1alpha1.ComponentStatus{Name: c.Name}
		if prev != nil {
			st = *prev.DeepCopy()
		}
		st.Ready = false
		st.Message = res.Message
		return st, res
	}
	stall := func(reason, format string, args ...any) (tenancyv1alpha1.ComponentStatus, phase.Result) {
		msg := fmt.Sprintf(format, args...)
		if prefix := fmt.Sprintf("component %s version %s", c.Name, c.Version); !strings.HasPrefix(msg, prefix) {
			msg = prefix + ": " + msg
		}
		e.Recorder.Eventf(t, nil, corev1.EventTypeWarning, reason, "Render", "%s", msg)
		componentRenderFailures.WithLabelValues(c.Name, reason).Inc()
		return keep(phase.Stalled(reason, "%s", msg))
	}

	tmpl := &tenancyv1alpha1.ComponentTemplate{}
	tmplName := tenancyv1alpha1.ComponentTemplateName(c.Name, c.Version)
	// Read without the cache's deep copy: the template is only read, and its manifests are
	// the largest part of it.
	if err := e.Client.Get(ctx, client.ObjectKey{Name: tmplName}, tmpl, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return stall(tenancyv1alpha1.ReasonTemplateNotFound, "ComponentTemplate %s not found", tmplName)
		}
		return keep(phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err))
	}
	if tmpl.Spec.Component != c.Name || tmpl.Spec.Version != c.Version {
		return stall(tenancyv1alpha1.ReasonRenderFailed, "ComponentTemplate %s is for component %s version %s", tmplName, tmpl.Spec.Component, tmpl.Spec.Version)
	}

	objs, err := e.render(t, nsName, tmpl, c)
	if err != nil {
		return stall(tenancyv1alpha1.ReasonRenderFailed, "%v", err)
	}
	for _, obj := range objs {
		if err := e.checkKind(obj, nsName); err != nil {
			if _, ok := errors.AsType[*component.KindError](err); ok {
				return stall(tenancyv1alpha1.ReasonKindNotAllowed, "%v", err)
			}
			return stall(tenancyv1alpha1.ReasonRenderFailed, "%v", err)
		}
	}
	// Every kind is checked, and watched, before anything is applied: a component is not left
	// half applied for a kind the operator may not use.
	for _, gvk := range kindsOf(objs) {
		if err := e.Kinds.ensure(ctx, gvk); err != nil {
			var notAllowed *kindNotAllowedError
			if errors.As(err, &notAllowed) {
				return stall(tenancyv1alpha1.ReasonKindNotAllowed, "%v", err)
			}
			return keep(phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err))
		}
	}

	// The scale policy knows Landlord's workloads by the namespace's list: listed first, they are
	// never applied unguarded.
	if err := e.recordWorkloads(ctx, s, workloadsOf(objs), false); err != nil {
		return keep(phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err))
	}

	ownedByOthers, err := component.FieldsOwnedByOthers(tmpl.Spec.FieldsOwnedByOthers)
	if err != nil {
		return stall(tenancyv1alpha1.ReasonRenderFailed, "%v", err)
	}
	scaledToZero := fence || t.Spec.State == tenancyv1alpha1.StateFrozen
	if scaledToZero {
		ownedByOthers = component.WhileFrozen(ownedByOthers)
	}

	applier := e.applier(s)
	applier.OwnedByOthers = ownedByOthers
	applier.Repaired = writes.DriftRepaired(log.FromContext(ctx).WithValues("tenant", t.Name), e.Recorder, t)
	inventory := make([]string, 0, len(objs))
	current := map[string]bool{}
	// What the API server answered to this reconcile's writes: the cache sees them only later.
	written := map[string]*unstructured.Unstructured{}
	for _, obj := range objs {
		resources.StampComponentObject(t, nsName, c.Name, obj)
		component.StampSwitched(obj, s.switched)
		if scaledToZero {
			component.ScaleToZero([]*unstructured.Unstructured{obj})
		}
		_, answer, err := applier.ApplyLive(ctx, obj)
		if err != nil {
			res := e.ApplyFailed(t, obj, err)
			res.Message = fmt.Sprintf("component %s version %s: %s", c.Name, c.Version, res.Message)
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
		if err := e.prune(ctx, s, prev.Inventory, current); err != nil {
			return keep(phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err))
		}
	}

	st := tenancyv1alpha1.ComponentStatus{Name: c.Name, Version: c.Version, Ready: true, Inventory: inventory}
	// A version change is worth an event; a tenant's first apply is already in its history.
	if prev != nil && prev.Version != c.Version {
		e.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonComponentApplied, "Apply", "component %s version %s applied", c.Name, c.Version)
	}
	var notReady, failures, quota []string
	for _, obj := range objs {
		var live client.Object
		health := component.CachedHealth
		if answer, ok := written[component.InventoryKey(obj)]; ok {
			live, health = answer, component.LiveHealth
		} else {
			live = newObject(e.Client.Scheme(), obj.GroupVersionKind())
			// Only read: no need for the cache's deep copy. The cache keeps the object's
			// health, worked out when it arrived, in place of its body.
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), live, client.UnsafeDisableDeepCopy); err != nil {
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
			own, err := e.ownPodsFillQuota(ctx, s, h.Quota, objs)
			if err != nil {
				return keep(phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err))
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
		e.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonQuotaExceeded, "Rollout", "%s", msg)
		return st, phase.Stalled(tenancyv1alpha1.ReasonQuotaExceeded, "%s", msg)
	}
	if len(failures) > 0 {
		// A rollout that failed waits for a new version or values (or for its workload to
		// recover, whose status change re-triggers the tenant).
		return st, phase.Stalled(tenancyv1alpha1.ReasonRolloutFailed, "%s: %s", c.Name, strings.Join(failures, "; "))
	}
	return st, phase.Result{Done: st.Ready}
}

// applier applies the tenant's objects: cache-compared, remembered once found in place, and
// compared with the API server's copies when a reconcile was asked for (scope.verify).
func (e *Engine) applier(s *scope) *apply.Applier {
	return &apply.Applier{Client: e.Client, APIReader: e.APIReader, Memo: e.Applied, Verify: s.verify}
}

// render merges the values (template defaults < operator defaults < tenant values), checks them
// against the template's schema, and renders the manifests.
func (e *Engine) render(t *tenancyv1alpha1.Tenant, nsName string, tmpl *tenancyv1alpha1.ComponentTemplate, c tenancyv1alpha1.Component) ([]*unstructured.Unstructured, error) {
	in := component.NewInput(t, nsName, tmpl)
	inputs := renderInputs{Template: string(tmpl.UID), Input: in}
	if c.Values != nil {
		inputs.Values = c.Values.Raw
	}
	fingerprint, err := apply.FingerprintOf(inputs)
	if err != nil {
		return nil, err
	}
	if objs, ok := e.rendered.get(nsName, c.Name, fingerprint); ok {
		return objs, nil
	}
	objs, err := e.renderNow(tmpl, c, in)
	if err != nil {
		return nil, err
	}
	e.rendered.put(nsName, c.Name, fingerprint, objs)
	return objs, nil
}

func (e *Engine) renderNow(tmpl *tenancyv1alpha1.ComponentTemplate, c tenancyv1alpha1.Component, in component.Input) ([]*unstructured.Unstructured, error) {
	return component.RenderForTenant(tmpl, c, in, e.Config.Components.DefaultValues[c.Name], e.Config.Components.Render.Limits())
}

// checkKind allows only kinds the API server knows, that components may render
// (components.allowedKinds, never a cluster-scoped kind or one the tenant's isolation is built
// of), in the tenant's namespace: a template must never reach outside the tenant, nor change what
// isolates it. A *component.KindError is a kind not allowed.
func (e *Engine) checkKind(obj *unstructured.Unstructured, nsName string) error {
	gvk := obj.GroupVersionKind()
	mapping, err := e.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s: unknown kind: %w", gvk.Kind, obj.GetName(), err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if err := component.CheckKind(e.Config.AllowedComponentKinds(), gvk.GroupKind(), obj.GetName(), namespaced); err != nil {
		return err
	}
	if ns := obj.GetNamespace(); ns != "" && ns != nsName {
		return fmt.Errorf("%s %s is in namespace %s; a component may only create objects in the tenant namespace %s", gvk.Kind, obj.GetName(), ns, nsName)
	}
	return nil
}

// prune deletes the objects of an inventory that are not current, if the tenant controls them.
func (e *Engine) prune(ctx context.Context, s *scope, inventory []string, current map[string]bool) error {
	for _, key := range inventory {
		if current[key] {
			continue
		}
		gk, name, err := component.ParseInventoryKey(key)
		if err != nil {
			continue
		}
		mapping, err := e.Client.RESTMapper().RESTMapping(gk)
		if err != nil {
			if meta.IsNoMatchError(err) {
				// The kind is gone from the cluster, and its objects with it.
				continue
			}
			return err
		}
		obj := newObject(e.Client.Scheme(), mapping.GroupVersionKind)
		if err := e.Kinds.ensure(ctx, mapping.GroupVersionKind); err != nil {
			return err
		}
		key := client.ObjectKey{Namespace: s.namespace, Name: name}
		var target client.Object = obj
		switch err := e.Client.Get(ctx, key, obj); {
		case apierrors.IsNotFound(err):
			// The cache may not hold it and still it may be there: created by the reconcile
			// before, with the watch behind, or out of the cache's selection since. Forgotten
			// from the inventory, it would stay in the tenant's namespace for good: its metadata
			// is read from the API server instead, and gone only when it is gone there.
			live := &metav1.PartialObjectMetadata{}
			live.SetGroupVersionKind(mapping.GroupVersionKind)
			if err := e.APIReader.Get(ctx, key, live); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return err
			}
			target = live
		case err != nil:
			return err
		}
		if _, err := writes.DeleteIfControlled(ctx, e.Client, e.APIReader, target, s.tenant); err != nil {
			return fmt.Errorf("pruning %s %s: %w", gk.Kind, name, err)
		}
	}
	return nil
}
