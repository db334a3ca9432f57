package tenantbackup

import (
	"context"
	"errors"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/backupjobs"
	"github.com/landlord-dev/landlord/internal/controller/jobslots"
)

// The backups' and restores' Jobs are package backupjobs's, which database moves share.

// JobName is the name of the Job (and of its Secret) that makes a backup or a restore.
func JobName(op backup.Operation, uid types.UID) string { return backupjobs.JobName(op, uid) }

// createJob creates the plan's Secret and its Job (backupjobs.Create); an object of their name
// that another owner made refuses the backup or restore.
func createJob(ctx context.Context, c client.Client, cfg config.Backups, name string, plan backup.Plan, owner metav1.OwnerReference, servers []string) error {
	err := backupjobs.Create(ctx, c, cfg, name, plan, owner, servers)
	var notOwned *backupjobs.NotOwnedError
	if errors.As(err, &notOwned) {
		return refuse(tenancyv1alpha1.ReasonBackupRefused, "%s", notOwned.Error())
	}
	return err
}

func jobEnded(ctx context.Context, c, api client.Reader, namespace, name string) (done, failed bool, msg string, err error) {
	return backupjobs.Ended(ctx, c, api, namespace, name)
}

func deletePlan(ctx context.Context, c client.Client, namespace, name string, owner client.Object) error {
	return backupjobs.DeletePlan(ctx, c, namespace, name, owner)
}

// Location is a backup's folder in the store.
func Location(tenantUID, backupUID types.UID) string {
	return string(tenantUID) + "/" + string(backupUID) + "/"
}

// serversOf are the database servers of the tenant's databases named (all when none are), sorted,
// with their limits of Jobs at once.
func serversOf(ctx context.Context, c client.Reader, t *tenancyv1alpha1.Tenant, names []string) ([]string, map[string]int32, error) {
	return jobslots.ServersOf(ctx, c, t, func(name string) bool { return len(names) == 0 || slices.Contains(names, name) })
}
