// Package templatesync brings the cluster's template namespace in line with the secret store:
// every shared secret the store holds under the template namespace is written there, and every
// secret that came from the store and has left it is removed. The operator's reconciler
// (internal/controller/templatemirror) runs it on start, on an interval and on demand; `landlordctl secrets sync` runs it
// once. Tenants only ever read the cluster's copy, so a store outage delays changes but never
// blocks a tenant and never removes anything.
//
// Removing is where a mistake reaches every tenant at once, so it is guarded three times: the
// namespace records the identity of the store it is mirrored from and no other store changes it,
// no single pass removes more than a share of the namespace's secrets, and a secret someone else
// wrote (another tool feeding the namespace, a person) is never rewritten or removed.
//
// Where another tool feeds the namespace (secrets.sharedSource: Namespace), nothing of the store
// is written there: RecordStore only records the store the tenants' credentials go to.
package templatesync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// DefaultMaxDeletionPercent is the share of the template namespace's store-fed secrets one
// pass may remove when Options leave it unset.
const DefaultMaxDeletionPercent = 25

// Options bound what one pass may do.
type Options struct {
	// MaxDeletionPercent is the largest share (in percent) of the namespace's secrets that came
	// from the store one pass may remove; a pass that would remove more removes none. Removing a
	// single secret is always allowed. DefaultMaxDeletionPercent when 0.
	MaxDeletionPercent int
	// Reader reads a Secret from the API server, managed fields and all, before the pass removes
	// it: the operator's cache drops who wrote what. nil reads through the pass's client.
	Reader client.Reader
}

// Reasons a pass refuses, as in RefusedError.
const (
	// ReasonStoreMismatch: the secret store read is not the one the template namespace records
	// (or, with none recorded, lacks or differs on secrets the namespace has from a store);
	// nothing was written, removed or recorded.
	ReasonStoreMismatch = "StoreMismatch"
	// ReasonDeletionRefused: the store no longer holds more of the shared secrets than one sync
	// may remove (secrets.maxDeletionPercent); none was removed.
	ReasonDeletionRefused = "DeletionRefused"
	// ReasonForeignSecret: the store holds a secret whose name a Secret someone else wrote takes
	// in the namespace; the pass left that Secret as it is and wrote the rest.
	ReasonForeignSecret = "ForeignSecret"
)

// RefusedError is a pass that refused to change the namespace, or some of it, because what it
// read cannot be trusted to say what should go, or what is there is not Landlord's. Nothing it
// refused was written or removed.
type RefusedError struct {
	Reason  string
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

// Report records a refused pass as a Warning event on the template namespace ns; any other
// error is the caller's to report.
func Report(recorder events.EventRecorder, ns *corev1.Namespace, err error) {
	var refused *RefusedError
	if errors.As(err, &refused) {
		recorder.Eventf(ns, nil, corev1.EventTypeWarning, refused.Reason, "Sync", "%s", refused.Message)
	}
}

// Mirror writes the store's shared secrets into namespace (only those that differ) and removes
// the secrets there that came from the store and left it. It rewrites and removes only secrets
// Landlord wrote (Landlords): one of the store's names that another writer's Secret holds is left
// to it, and reported as a RefusedError once the rest is done. c may read through a cache that
// holds the namespace and its secrets: the operator's does, and then an unchanged store costs
// only the store's listing.
func Mirror(ctx context.Context, c client.Client, store secret.Store, namespace string, opts Options) error {
	stored, live, err := bindStore(ctx, c, store, namespace)
	if err != nil {
		return err
	}
	inStore := make(map[string]bool, len(stored))
	for _, sec := range stored {
		inStore[sec.Name] = true
	}
	byName := make(map[string]*corev1.Secret, len(live))
	for _, sec := range live {
		byName[sec.Name] = sec
	}

	// Template secrets are namespaced, so the applier never reads around the cache. It never
	// forces: a name the cache does not hold may have been taken by another writer a moment ago,
	// and a Secret another tool wrote with the very values Landlord had is theirs too (they own
	// its data beside Landlord, which the cache's record of foreign fields does not show). Either
	// way the API server refuses the write with a conflict, rather than hand Landlord their data.
	applier := &apply.Applier{Client: c, NoForce: true}
	var foreign []string
	for _, sec := range stored {
		if have, ok := byName[sec.Name]; ok && !Landlords(have) && !holdsStored(have, sec) {
			foreign = append(foreign, fmt.Sprintf("%s (written by %s)", sec.Name, strings.Join(apply.OtherWriters(have), ", ")))
			continue
		}
		switch _, err := applier.Apply(ctx, resources.TemplateSecret(namespace, sec)); {
		case apierrors.IsConflict(err):
			foreign = append(foreign, fmt.Sprintf("%s (written by someone else as this pass began)", sec.Name))
		case err != nil:
			return fmt.Errorf("writing template secret %s: %w", sec.Name, err)
		}
	}
	// Only Landlord's own are counted and removed: a share of secrets someone else labelled as
	// from the store would otherwise let more of Landlord's go at once.
	var ours, gone []*corev1.Secret
	for _, sec := range live {
		if !Landlords(sec) {
			continue
		}
		ours = append(ours, sec)
		if !inStore[sec.Name] {
			gone = append(gone, sec)
		}
	}
	if limit := maxDeletionPercent(opts); len(gone) > 1 && len(gone)*100 > limit*len(ours) {
		return &RefusedError{Reason: ReasonDeletionRefused, Message: fmt.Sprintf(
			"the secret store no longer holds %d of %d shared secrets in namespace %s, more than the %d%% one sync may remove: none was removed. "+
				"If they were removed on purpose, remove them a few at a time or run 'landlordctl secrets sync --max-deletion-percent 100' once",
			len(gone), len(ours), namespace, limit)}
	}
	var errs []error
	reader := opts.Reader
	if reader == nil {
		reader = c
	}
	for _, sec := range gone {
		// Read again, from the API server: a Secret another tool wrote with the values Landlord
		// had shows as Landlord's alone in the cache, and removing it would take it from every
		// tenant. Removed only as read, so a write in between keeps it.
		fresh := &corev1.Secret{}
		switch err := reader.Get(ctx, client.ObjectKeyFromObject(sec), fresh); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("reading template secret %s before removing it: %w", sec.Name, err))
			continue
		}
		if fresh.Labels[tenancyv1alpha1.FromStoreLabel] != "true" || apply.HeldByOthers(fresh.ManagedFields, "data", "stringData", "type") {
			foreign = append(foreign, fmt.Sprintf("%s (left the store; kept, as %s holds it too)", sec.Name, strings.Join(holders(fresh), ", ")))
			continue
		}
		if err := c.Delete(ctx, fresh, client.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("removing template secret %s: %w", sec.Name, err))
		}
	}
	if len(foreign) > 0 {
		errs = append(errs, &RefusedError{Reason: ReasonForeignSecret, Message: fmt.Sprintf(
			"namespace %s holds %d Secrets under shared secrets' names that Landlord did not write alone: %s. "+
				"They were left as they are, and tenants get them, not the store's. "+
				"Keep one source per name: remove the secret from the store ('landlordctl secrets delete NAME'), or stop the other writer and delete the Secret from the namespace to have the store's written there",
			namespace, len(foreign), strings.Join(foreign, "; "))})
	}
	return errors.Join(errs...)
}

// RecordStore is the pass for a template namespace that another tool feeds
// (secrets.sharedSource: Namespace): it makes sure the namespace exists, and that it records the
// store's identity, recording it as Mirror does when none is, without writing or removing any
// Secret. Tenants' credentials are read from and written to only the store the namespace
// records, so the pass still runs, and a store that is not the recorded one is refused.
func RecordStore(ctx context.Context, c client.Client, store secret.Store, namespace string) error {
	_, _, err := bindStore(ctx, c, store, namespace)
	return err
}

// Landlords is whether Landlord wrote the template secret as it stands: it says it came from the
// store, and no field manager but Landlord's own apply holds any of its data or type (the API
// server's managed fields say so, or, read from the operator's cache, its record of them). A
// person's or another tool's write to the data makes the Secret theirs from then on: Landlord
// neither reverts nor removes it.
func Landlords(sec *corev1.Secret) bool {
	return sec.Labels[tenancyv1alpha1.FromStoreLabel] == "true" && len(apply.OtherWriters(sec)) == 0
}

// holders names the field managers of sec other than Landlord's apply, or says that who wrote it
// is unknown.
func holders(sec *corev1.Secret) []string {
	var names []string
	for _, e := range sec.ManagedFields {
		if e.Manager != apply.FieldOwner || e.Operation != metav1.ManagedFieldsOperationApply {
			names = append(names, e.Manager)
		}
	}
	if len(names) == 0 {
		return []string{apply.UnknownManager}
	}
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

// holdsStored is whether a Secret someone else wrote says it came from the store and holds
// exactly the stored secret's type and data: a template namespace restored from a backup, whose
// writer is the backup tool. Writing it over changes no value, so Landlord takes it back as its
// own.
func holdsStored(live, stored *corev1.Secret) bool {
	return live.Labels[tenancyv1alpha1.FromStoreLabel] == "true" && typeOf(live) == typeOf(stored) &&
		maps.EqualFunc(live.Data, stored.Data, bytes.Equal)
}

// typeOf is a secret's type as the API server stores it: Opaque when unset.
func typeOf(sec *corev1.Secret) corev1.SecretType {
	if sec.Type == "" {
		return corev1.SecretTypeOpaque
	}
	return sec.Type
}

// bindStore reads the store's secrets under namespace and the namespace's Secrets, after making
// sure the namespace records the store's identity: recording it when the namespace records none
// and the store holds what the namespace has from a store, refusing any other store.
func bindStore(ctx context.Context, c client.Client, store secret.Store, namespace string) ([]*corev1.Secret, []*corev1.Secret, error) {
	id, err := store.Identity(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the secret store's identity: %w", err)
	}
	stored, err := store.List(ctx, namespace)
	if err != nil {
		return nil, nil, fmt.Errorf("listing shared secrets in the store: %w", err)
	}
	ns, err := ensureNamespace(ctx, c, namespace)
	if err != nil {
		return nil, nil, err
	}
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, nil, err
	}
	live := make([]*corev1.Secret, len(list.Items))
	for i := range list.Items {
		live[i] = &list.Items[i]
	}
	byName := make(map[string]*corev1.Secret, len(stored))
	for _, sec := range stored {
		byName[sec.Name] = sec
	}
	// The namespace's secrets from a store are the evidence of which store it was mirrored from;
	// unproven are those the store read lacks or holds other data for.
	var fromStore, unproven []*corev1.Secret
	for _, sec := range live {
		if sec.Labels[tenancyv1alpha1.FromStoreLabel] != "true" {
			continue
		}
		fromStore = append(fromStore, sec)
		if in, ok := byName[sec.Name]; !ok || !maps.EqualFunc(in.Data, sec.Data, bytes.Equal) {
			unproven = append(unproven, sec)
		}
	}

	switch recorded := ns.Annotations[tenancyv1alpha1.SecretStoreAnnotation]; recorded {
	case id:
	case "":
		// The first store the namespace is mirrored from (or the one an administrator moved it
		// to) is recorded before anything is written from it, and only when it holds every
		// secret the namespace already has from a store, with the same data: a namespace
		// mirrored before stores had identities, read after an upgrade through an empty or
		// wrong store (another environment's bucket), would otherwise record that store as its
		// own and lose or overwrite the rest.
		if len(unproven) > 0 {
			return nil, nil, &RefusedError{Reason: ReasonStoreMismatch, Message: fmt.Sprintf(
				"namespace %s records no secret store, and the store read (identity %s) lacks, or holds other data for, %d of its %d shared secrets from a store (%s): nothing was written, removed or recorded. "+
					"Check secrets.store in the configuration (directory, bucket, prefix) and that the store's volume outlived the pod; "+
					"if this store is the right one, record it with: kubectl annotate namespace %s %s=%s",
				namespace, id, len(unproven), len(fromStore), names(unproven), namespace, tenancyv1alpha1.SecretStoreAnnotation, id)}
		}
		if err := recordStore(ctx, c, ns, id); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, &RefusedError{Reason: ReasonStoreMismatch, Message: fmt.Sprintf(
			"the secret store read (identity %s) is not the store namespace %s is mirrored from (identity %s): nothing was written or removed. "+
				"Check secrets.store in the configuration (directory, bucket, prefix) and that the store's volume outlived the pod; "+
				"to move to another store on purpose, run 'landlordctl secrets migrate' (or copy the secrets over and remove the annotation %s from namespace %s)",
			id, namespace, recorded, tenancyv1alpha1.SecretStoreAnnotation, namespace)}
	}
	return stored, live, nil
}

// names lists the secrets' names, the first few of them.
func names(secrets []*corev1.Secret) string {
	var out []string
	for i, sec := range secrets {
		if i == 5 {
			out = append(out, fmt.Sprintf("and %d more", len(secrets)-i))
			break
		}
		out = append(out, sec.Name)
	}
	return strings.Join(out, ", ")
}

func maxDeletionPercent(opts Options) int {
	if opts.MaxDeletionPercent <= 0 {
		return DefaultMaxDeletionPercent
	}
	return min(opts.MaxDeletionPercent, 100)
}

// SwitchStore records that namespace is mirrored from the store whose identity is to, where it
// records the store whose identity is from: the last step of moving a cluster's secrets to
// another store (`landlordctl secrets migrate`). The switch is made only over the namespace as
// read, so a sync recording a store at the same time fails one of the two. A namespace that
// records to already is left as it is; one that records any other store, or none, is refused.
func SwitchStore(ctx context.Context, c client.Client, namespace, from, to string) error {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return fmt.Errorf("reading the secret store namespace %s records: %w", namespace, err)
	}
	switch recorded := ns.Annotations[tenancyv1alpha1.SecretStoreAnnotation]; recorded {
	case to:
		return nil
	case from:
		return recordStore(ctx, c, ns, to)
	case "":
		return &RefusedError{Reason: ReasonStoreMismatch, Message: fmt.Sprintf("namespace %s records no secret store, not the store migrated from (identity %s): nothing was recorded", namespace, from)}
	default:
		return &RefusedError{Reason: ReasonStoreMismatch, Message: fmt.Sprintf("namespace %s records the secret store with identity %s, not the store migrated from (identity %s): nothing was recorded", namespace, recorded, from)}
	}
}

// recordStore writes the store's identity on the namespace, only over what was read: of two
// syncs reading different stores at once, one records its store and the other is refused.
func recordStore(ctx context.Context, c client.Client, ns *corev1.Namespace, id string) error {
	orig := ns.DeepCopy()
	ns = ns.DeepCopy()
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	ns.Annotations[tenancyv1alpha1.SecretStoreAnnotation] = id
	if err := c.Patch(ctx, ns, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("recording the secret store's identity on namespace %s: %w", ns.Name, err)
	}
	return nil
}

func ensureNamespace(ctx context.Context, c client.Client, namespace string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	// The namespace carries the managed-by label, so the operator's cache answers this without
	// a request.
	err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns)
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
		}}}
		err = c.Create(ctx, ns)
		if apierrors.IsAlreadyExists(err) {
			err = c.Get(ctx, client.ObjectKey{Name: namespace}, ns)
			if apierrors.IsNotFound(err) {
				// It exists, yet the operator's cache, which holds namespaces by that label, does
				// not: someone else created it without the label, which only Landlord may set.
				return nil, fmt.Errorf("namespace %s exists without the label %s=%s, so the operator cannot read it: it was created by something other than Landlord (a GitOps tool applying it with what feeds it). "+
					"Landlord creates the template namespace itself; remove the Namespace from that tool's manifests, keep what it applies into it, and have a cluster administrator trusted by Landlord's policies (isolation.trustedPrincipals) add the label",
					namespace, tenancyv1alpha1.ManagedByLabel, tenancyv1alpha1.ManagedByValue)
			}
		}
	}
	return ns, err
}
