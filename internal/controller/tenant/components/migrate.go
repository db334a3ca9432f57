package components

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/internal/controller/tenant/migrations"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
)

// move converges one component to the version chosen for it (c.Version) through the migrations
// the move runs (package migrations): while the backup, the fence and the pre migrations run,
// and when one fails, the component keeps the version it runs (a new tenant's component does not
// start); the post migrations run once the new version is Ready, and the component is Ready
// only once they succeeded. A move without migrations applies the version at once.
func (e *Engine) move(ctx context.Context, s *scope, c tenancyv1alpha1.Component, prev *tenancyv1alpha1.ComponentStatus) (tenancyv1alpha1.ComponentStatus, phase.Result) {
	var last *tenancyv1alpha1.MigrationStatus
	running := ""
	if prev != nil {
		running, last = prev.Version, prev.Migration
	}
	from, to := running, c.Version
	applied := running == to
	plain := func() (tenancyv1alpha1.ComponentStatus, phase.Result) {
		st, res := e.ensureComponent(ctx, s, c, prev, false)
		st.Migration = last
		return st, res
	}
	if e.Migrations == nil {
		return plain()
	}
	if migrations.Running(last) && last.To != to {
		// The component leaves a move before it ended: not while one of its Jobs runs (a
		// migration is never cut off half done, nor run beside another), the version it ran
		// fenced meanwhile if the move fenced it.
		job, err := e.Migrations.RunningJob(ctx, s.tenant, s.namespace, c.Name)
		if err != nil {
			return e.keep(prev, c, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err))
		}
		if job != "" {
			templates, err := e.Migrations.Templates(ctx)
			if err != nil {
				return e.keep(prev, c, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err))
			}
			fence := (last.Phase == tenancyv1alpha1.MigrationFencing || last.Phase == tenancyv1alpha1.MigrationPre) &&
				migrations.PathOf(templates, c.Name, last.From, last.To).FenceWriters && last.From != ""
			d := migrations.Decision{Gate: migrations.Hold, Fence: fence, Status: last.DeepCopy(),
				Result: phase.Progressing(tenancyv1alpha1.ReasonMigrating, "moving to %s once Job %s, a migration to %s, ends", to, job, last.To)}
			st, res := e.held(ctx, s, c, prev, running, d)
			return st.ComponentStatus, res
		}
		last = e.Migrations.Superseded(last, to)
	}
	if applied {
		// The version is applied: only a move whose post migrations have not succeeded is left.
		if last == nil || last.To != to || last.Phase == tenancyv1alpha1.MigrationSucceeded {
			return plain()
		}
		from = last.From
	}
	templates, err := e.Migrations.Templates(ctx)
	if err != nil {
		return e.keep(prev, c, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err))
	}
	path := migrations.PathOf(templates, c.Name, from, to)
	if path.Empty() {
		return plain()
	}
	m := migrations.Move{Tenant: s.tenant, Namespace: s.namespace, Component: c.Name, From: from, To: to, Last: last, Retry: s.verify}

	if !applied {
		d := e.Migrations.Before(ctx, m, path, false)
		if d.Gate != migrations.Proceed && d.Fence && d.Status.Phase == tenancyv1alpha1.MigrationFencing {
			// Fence, and once every pod of the version it runs is gone go on at once.
			st, res := e.held(ctx, s, c, prev, from, d)
			if !st.fencedReady || res.Err != nil {
				return st.ComponentStatus, res
			}
			m.Last = d.Status
			d = e.Migrations.Before(ctx, m, path, true)
		}
		if d.Gate != migrations.Proceed {
			st, res := e.held(ctx, s, c, prev, from, d)
			return st.ComponentStatus, res
		}
		m.Last = d.Status
		last = d.Status
	}

	st, res := e.ensureComponent(ctx, s, c, prev, false)
	st.Migration = last
	if !st.Ready || res.Stalled || res.Err != nil {
		return st, res
	}
	d := e.Migrations.After(ctx, m, path)
	st.Migration = d.Status
	if d.Gate != migrations.Proceed {
		st.Ready, st.Message = false, d.Result.Message
		return st, d.Result
	}
	return st, res
}

// heldStatus is a held component's status entry, and whether the version it runs is fenced and
// every one of its pods gone.
type heldStatus struct {
	tenancyv1alpha1.ComponentStatus
	fencedReady bool
}

// held keeps the version the component runs (from; nothing for a new tenant) while its move
// waits or after it failed, scaled to zero while fenced. Its entry is not Ready, and says why.
func (e *Engine) held(ctx context.Context, s *scope, c tenancyv1alpha1.Component, prev *tenancyv1alpha1.ComponentStatus, from string, d migrations.Decision) (heldStatus, phase.Result) {
	if from == "" {
		return heldStatus{ComponentStatus: tenancyv1alpha1.ComponentStatus{Name: c.Name, Message: d.Result.Message, Migration: d.Status}}, d.Result
	}
	old := c
	old.Version = from
	st, res := e.ensureComponent(ctx, s, old, prev, d.Fence)
	out := heldStatus{ComponentStatus: st, fencedReady: d.Fence && st.Ready && !res.Stalled && res.Err == nil}
	if out.fencedReady && d.Status.Phase == tenancyv1alpha1.MigrationFencing {
		// Scaled to zero is not stopped: a workload reads as rolled out while its pods are still
		// in their grace period, writing. The fence holds until none is left.
		left, err := e.podsLeft(ctx, s, st.Inventory)
		if err != nil {
			res = phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		out.fencedReady = err == nil && left == ""
		if left != "" {
			d.Result.Message += ": " + left
			d.Status.Message = d.Result.Message
		}
	}
	out.Migration = d.Status
	out.Ready = false
	out.Message = d.Result.Message
	if res.Err != nil && d.Result.Err == nil && !d.Result.Stalled {
		// The version it runs could not be applied: retried as any write is.
		return out, res
	}
	return out, d.Result
}

// keep is the component's last status entry, not Ready, while res is retried.
func (e *Engine) keep(prev *tenancyv1alpha1.ComponentStatus, c tenancyv1alpha1.Component, res phase.Result) (tenancyv1alpha1.ComponentStatus, phase.Result) {
	st := tenancyv1alpha1.ComponentStatus{Name: c.Name}
	if prev != nil {
		st = *prev.DeepCopy()
	}
	st.Ready = false
	st.Message = res.Message
	return st, res
}

// podsLeft says which of the workloads in the inventory still have pods, terminating ones
// included, read from the API server (pods are not cached); "" when none has.
func (e *Engine) podsLeft(ctx context.Context, s *scope, inventory []string) (string, error) {
	var left []string
	for _, key := range inventory {
		gk, name, err := component.ParseInventoryKey(key)
		if err != nil {
			continue
		}
		if _, ok := workloadEntry(gk, name); !ok {
			continue
		}
		mapping, err := e.Client.RESTMapper().RESTMapping(gk)
		if err != nil {
			return "", err
		}
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(mapping.GroupVersionKind)
		if err := e.APIReader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, w); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", err
		}
		raw, found, err := unstructured.NestedMap(w.Object, "spec", "selector")
		if err != nil || !found {
			continue
		}
		sel := &metav1.LabelSelector{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, sel); err != nil {
			return "", err
		}
		selector, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || selector.Empty() {
			continue
		}
		pods := &metav1.PartialObjectMetadataList{}
		pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := e.APIReader.List(ctx, pods, client.InNamespace(s.namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return "", err
		}
		if n := len(pods.Items); n > 0 {
			left = append(left, fmt.Sprintf("%d pods of %s %s still stopping", n, gk.Kind, name))
		}
	}
	return strings.Join(left, ", "), nil
}
