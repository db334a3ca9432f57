package tenant

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/resources"
)

// copySharedSecrets copies the template secrets shared with the tenant into its namespace and
// removes copies whose source is gone or no longer shared with it. Reads come from the cache;
// only copies that differ are written.
func (r *Reconciler) copySharedSecrets(ctx context.Context, s *tenantScope) outcome {
	t := s.tenant
	templates := &corev1.SecretList{}
	if err := r.Client.List(ctx, templates, client.InNamespace(r.Config.Secrets.TemplateNamespace)); err != nil {
		return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	desired, invalid := resources.SharedSecrets(t, s.namespace, templates.Items)
	for _, e := range invalid {
		// The template is wrong, not the tenant: the event goes on the template secret, and the
		// tenant goes on with the secrets that are valid.
		r.Recorder.Eventf(e.Source, t, corev1.EventTypeWarning, tenancyv1alpha1.ReasonInvalidObject, "Share", "%v", e.Err)
	}

	applier := r.applier(s)
	// A change reaches every tenant at once: its copies have rate limits of their own.
	applier.Client = r.Urgent
	keep := make(map[string]bool, len(desired))
	for _, sec := range desired {
		keep[sec.Name] = true
		if _, err := applier.Apply(ctx, sec); err != nil {
			return r.applyFailed(t, sec, err)
		}
	}

	// A copy is known by its labels, which only the operator may set, change or remove in the
	// tenant's namespace: a tenant admin may edit Secrets, and so take a copy's controller
	// reference off, but a secret no longer shared leaves all the same.
	copyLabels := client.MatchingLabels{tenancyv1alpha1.SharedCopyLabel: "true", tenancyv1alpha1.TenantLabel: t.Name}
	copies := &corev1.SecretList{}
	if err := r.Client.List(ctx, copies, client.InNamespace(s.namespace), copyLabels); err != nil {
		return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	for i := range copies.Items {
		if c := &copies.Items[i]; !keep[c.Name] {
			if _, err := writes.DeleteIfLabelled(ctx, r.Client, r.APIReader, c, copyLabels); err != nil {
				return phase.Failedf(tenancyv1alpha1.ReasonApplyFailed, "removing secret %s/%s: %w", s.namespace, c.Name, err)
			}
		}
	}
	return phase.Done(tenancyv1alpha1.ReasonSucceeded, "%d shared secrets in place", len(desired))
}
