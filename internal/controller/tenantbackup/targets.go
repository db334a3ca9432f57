package tenantbackup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// refusal is a reason the tenant's data cannot be read or written now, which only a change
// (to the tenant, or to the backup or restore) lifts: its condition stalls with the reason.
type refusal struct {
	reason, message string
}

func (r *refusal) Error() string { return r.message }

func refuse(reason, format string, args ...any) error {
	return &refusal{reason: reason, message: fmt.Sprintf(format, args...)}
}

// refused checks the tenant can have its data read or written at all: it is in place, not on
// its way out, and not moving to another cluster, whose copy would be the customer's from then
// on.
func refused(t *tenancyv1alpha1.Tenant) error {
	switch {
	case !t.DeletionTimestamp.IsZero():
		return refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s is being deleted", t.Name)
	case t.Spec.State == tenancyv1alpha1.StatePurged:
		return refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s is Purged: its data is dropped", t.Name)
	case t.Annotations[tenancyv1alpha1.MovedToAnnotation] != "":
		return refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s was moved to %s (%s): its data is the destination's", t.Name,
			t.Annotations[tenancyv1alpha1.MovedToAnnotation], tenancyv1alpha1.MovedToAnnotation)
	}
	return nil
}

// targets are the tenant's databases named (all of them in its status when names is empty),
// each with the tenant's own login: the stored record of the tenant, never an administrator's.
func targets(ctx context.Context, c client.Reader, store secret.TenantSecrets, cfg *config.Config, t *tenancyv1alpha1.Tenant, names []string) ([]backup.Database, error) {
	if err := refused(t); err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range names {
		if !slices.ContainsFunc(t.Status.Databases, func(d tenancyv1alpha1.DatabaseStatus) bool { return d.Name == n }) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s has no database %s in place", t.Name, strings.Join(missing, ", "))
	}
	namespace := t.Status.Namespace
	if namespace == "" {
		namespace = cfg.NamespaceName(t.Name)
	}
	var out []backup.Database
	for _, st := range t.Status.Databases {
		if len(names) > 0 && !slices.Contains(names, st.Name) {
			continue
		}
		ds := &tenancyv1alpha1.DatabaseServer{}
		if err := c.Get(ctx, client.ObjectKey{Name: st.Server}, ds); err != nil {
			return nil, fmt.Errorf("reading DatabaseServer %s of database %s: %w", st.Server, st.Name, err)
		}
		rec, err := store.Load(ctx, namespace, tenancyv1alpha1.DatabaseSecretName(st.Name))
		if err != nil {
			if errors.Is(err, secret.ErrNotFound) {
				return nil, refuse(tenancyv1alpha1.ReasonBackupRefused, "the secret store holds no credentials of tenant %s's database %s", t.Name, st.Name)
			}
			return nil, fmt.Errorf("reading the credentials of database %s: %w", st.Name, err)
		}
		creds, ok, err := resources.ParseStoredCredentials(rec, st.Name)
		if err != nil || !ok {
			return nil, refuse(tenancyv1alpha1.ReasonBackupRefused, "the stored credentials of tenant %s's database %s are not usable", t.Name, st.Name)
		}
		// The record is the tenant's, for the database its status names: a login of anyone else
		// never reaches a Job.
		if (creds.UID != "" && creds.UID != string(t.UID)) || creds.Server != st.Server ||
			creds.Account.Database != st.Database || creds.Account.Username != st.Username {
			return nil, refuse(tenancyv1alpha1.ReasonBackupRefused, "the stored credentials of tenant %s's database %s are another's, or for another database", t.Name, st.Name)
		}
		srv := database.Address(ds)
		out = append(out, backup.Database{Name: st.Name, Target: backup.Target{
			Engine: database.Engine(st.Engine), Host: srv.Host, Port: srv.Port, TLS: srv.TLS, CABundle: srv.CABundle,
			Database: st.Database, Username: st.Username, Password: creds.Account.Password,
		}})
	}
	if len(out) == 0 {
		return nil, refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s has no database in place", t.Name)
	}
	return out, nil
}
