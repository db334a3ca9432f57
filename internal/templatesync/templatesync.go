// Package templatesync brings the cluster's template namespace in line with the secret store:
// every shared secret the store holds under the template namespace is written there, and every
// secret that came from the store and has left it is removed. The operator's template-sync
// controller runs it on start, on an interval and on demand; `landlordctl secrets sync` runs it
// once. Tenants only ever read the cluster's copy, so a store outage delays changes but never
// blocks a tenant and never removes anything.
package templatesync

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// Mirror writes the store's shared secrets into namespace (only those that differ) and removes
// the secrets there that came from the store and left it. c may read through a cache that
// holds the namespace and its secrets: the operator's does, and then an unchanged store costs
// only the store's listing.
func Mirror(ctx context.Context, c client.Client, store secret.Store, namespace string) error {
	stored, err := store.List(ctx, namespace)
	if err != nil {
		return fmt.Errorf("listing shared secrets in the store: %w", err)
	}
	if err := ensureNamespace(ctx, c, namespace); err != nil {
		return err
	}
	// Template secrets are namespaced, so the applier never reads around the cache.
	applier := &apply.Applier{Client: c}
	keep := map[string]bool{}
	for _, sec := range stored {
		keep[sec.Name] = true
		if _, err := applier.Apply(ctx, resources.TemplateSecret(namespace, sec)); err != nil {
			return fmt.Errorf("writing template secret %s: %w", sec.Name, err)
		}
	}
	live := &corev1.SecretList{}
	if err := c.List(ctx, live, client.InNamespace(namespace), client.MatchingLabels{tenancyv1alpha1.FromStoreLabel: "true"}); err != nil {
		return err
	}
	var errs []error
	for i := range live.Items {
		if sec := &live.Items[i]; !keep[sec.Name] {
			if err := c.Delete(ctx, sec, client.Preconditions{UID: &sec.UID}); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("removing template secret %s: %w", sec.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func ensureNamespace(ctx context.Context, c client.Client, namespace string) error {
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
			return nil
		}
	}
	return err
}
