// Package templatesync brings the cluster's template namespace in line with the secret store:
// every shared secret the store holds under the template namespace is written there, and every
// secret that came from the store and has left it is removed. The operator's template-sync
// controller runs it on start, on an interval and on demand; `landlordctl secrets sync` runs it
// once. Tenants only ever read the cluster's copy, so a store outage delays changes but never
// blocks a tenant and never removes anything.
//
// Removing is where a mistake reaches every tenant at once, so it is guarded twice: the namespace
// records the identity of the store it is mirrored from and no other store changes it, and no
// single pass removes more than a share of the namespace's secrets.
package templatesync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

// Reasons a pass refuses, as in RefusedError.
const (
	ReasonStoreMismatch   = "StoreMismatch"
	ReasonDeletionRefused = "DeletionRefused"
)

// RefusedError is a pass that refused to change the namespace because what it read cannot be
// trusted to say what should go. Nothing it refused was written or removed.
type RefusedError struct {
	Reason  string
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

// Mirror writes the store's shared secrets into namespace (only those that differ) and removes
// the secrets there that came from the store and left it. c may read through a cache that
// holds the namespace and its secrets: the operator's does, and then an unchanged store costs
// only the store's listing.
func Mirror(ctx context.Context, c client.Client, store secret.Store, namespace string, opts Options) error {
	id, err := store.Identity(ctx)
	if err != nil {
		return fmt.Errorf("reading the secret store's identity: %w", err)
	}
	stored, err := store.List(ctx, namespace)
	if err != nil {
		return fmt.Errorf("listing shared secrets in the store: %w", err)
	}
	ns, err := ensureNamespace(ctx, c, namespace)
	if err != nil {
		return err
	}
	live := &corev1.SecretList{}
	if err := c.List(ctx, live, client.InNamespace(namespace), client.MatchingLabels{tenancyv1alpha1.FromStoreLabel: "true"}); err != nil {
		return err
	}
	byName := make(map[string]*corev1.Secret, len(stored))
	for _, sec := range stored {
		byName[sec.Name] = sec
	}
	// gone left the store; unproven are those and the ones the store holds other data for.
	var gone, unproven []*corev1.Secret
	for i := range live.Items {
		sec := &live.Items[i]
		switch in, ok := byName[sec.Name]; {
		case !ok:
			gone = append(gone, sec)
			unproven = append(unproven, sec)
		case !maps.EqualFunc(in.Data, sec.Data, bytes.Equal):
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
			return &RefusedError{Reason: ReasonStoreMismatch, Message: fmt.Sprintf(
				"namespace %s records no secret store, and the store read (identity %s) lacks, or holds other data for, %d of its %d shared secrets from a store (%s): nothing was written, removed or recorded. "+
					"Check secrets.store in the configuration (directory, bucket, prefix) and that the store's volume outlived the pod; "+
					"if this store is the right one, record it with: kubectl annotate namespace %s %s=%s",
				namespace, id, len(unproven), len(live.Items), names(unproven), namespace, tenancyv1alpha1.SecretStoreAnnotation, id)}
		}
		if err := recordStore(ctx, c, ns, id); err != nil {
			return err
		}
	default:
		return &RefusedError{Reason: ReasonStoreMismatch, Message: fmt.Sprintf(
			"the secret store read (identity %s) is not the store namespace %s is mirrored from (identity %s): nothing was written or removed. "+
				"Check secrets.store in the configuration (directory, bucket, prefix) and that the store's volume outlived the pod; "+
				"to move to another store on purpose, run 'landlordctl secrets migrate' (or copy the secrets over and remove the annotation %s from namespace %s)",
			id, namespace, recorded, tenancyv1alpha1.SecretStoreAnnotation, namespace)}
	}

	// Template secrets are namespaced, so the applier never reads around the cache.
	applier := &apply.Applier{Client: c}
	for _, sec := range stored {
		if _, err := applier.Apply(ctx, resources.TemplateSecret(namespace, sec)); err != nil {
			return fmt.Errorf("writing template secret %s: %w", sec.Name, err)
		}
	}
	if limit := maxDeletionPercent(opts); len(gone) > 1 && len(gone)*100 > limit*len(live.Items) {
		return &RefusedError{Reason: ReasonDeletionRefused, Message: fmt.Sprintf(
			"the secret store no longer holds %d of %d shared secrets in namespace %s, more than the %d%% one sync may remove: none was removed. "+
				"If they were removed on purpose, remove them a few at a time or run 'landlordctl secrets sync --max-deletion-percent 100' once",
			len(gone), len(live.Items), namespace, limit)}
	}
	var errs []error
	for _, sec := range gone {
		if err := c.Delete(ctx, sec, client.Preconditions{UID: &sec.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("removing template secret %s: %w", sec.Name, err))
		}
	}
	return errors.Join(errs...)
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
		}
	}
	return ns, err
}
