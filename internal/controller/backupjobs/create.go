package backupjobs

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// NotOwnedError is an object of a Job's name (its plan Secret, or the Job) that another owner
// made: it is never used, and retrying does not help.
type NotOwnedError struct {
	Kind, Namespace, Name, Owner string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %s/%s exists and is not this %s's", e.Kind, e.Namespace, e.Name, e.Owner)
}

// Create creates the plan's Secret, then the Job that mounts it; either already there (a
// reconcile that lost its status write) is the one made before. servers are the database
// servers the Job reaches, whose limits of Jobs at once it counts against.
func Create(ctx context.Context, c client.Client, cfg config.Backups, name string, plan backup.Plan, owner metav1.OwnerReference, servers []string) error {
	s, err := PlanSecret(cfg, name, owner, plan)
	if err != nil {
		return err
	}
	existing := &corev1.Secret{}
	if err := CreateOwned(ctx, c, s, existing, owner); err != nil {
		return err
	}
	j := Job(cfg, name, plan.Operation, owner, servers)
	if existing.Name != "" && !hasKeys(existing, s) {
		// A plan made by an earlier release (the whole plan under plan.json, the operator
		// killed before its Job) cannot feed this release's Job, whose steps each mount their
		// own key: its pod would never start. Unless that release's Job exists and reads it,
		// it is made again.
		err := c.Get(ctx, client.ObjectKeyFromObject(j), &batchv1.Job{})
		if err == nil || !apierrors.IsNotFound(err) {
			return err
		}
		if err := c.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
		return fmt.Errorf("the plan Secret %s/%s was made by an earlier release, for a Job of one step: made again", existing.Namespace, existing.Name)
	}
	return CreateOwned(ctx, c, j, &batchv1.Job{}, owner)
}

// hasKeys reports whether existing holds every key of want.
func hasKeys(existing, want *corev1.Secret) bool {
	for k := range want.Data {
		if _, ok := existing.Data[k]; !ok {
			return false
		}
	}
	return true
}

// CreateOwned creates obj, or finds it made before by the same owner; one of that name that is
// someone else's is an error, never used.
func CreateOwned(ctx context.Context, c client.Client, obj, existing client.Object, owner metav1.OwnerReference) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	err := c.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return err
	}
	if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != owner.UID {
		return &NotOwnedError{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Owner: owner.Kind}
	}
	return nil
}

// Ended reads the Job from the cache: done, and whether it failed and why. A Job deleted
// before it ended failed.
func Ended(ctx context.Context, c, api client.Reader, namespace, name string) (done, failed bool, msg string, err error) {
	j := &batchv1.Job{}
	err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, j)
	if apierrors.IsNotFound(err) {
		// The cache may not have seen a Job just made: the API server says whether it is gone.
		err = api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, j)
		if apierrors.IsNotFound(err) {
			return true, true, fmt.Sprintf("Job %s/%s was deleted before it ended", namespace, name), nil
		}
	}
	if err != nil {
		return false, false, "", err
	}
	done, failed, msg = Outcome(j)
	return done, failed, msg, nil
}

// DeletePlan deletes the plan's Secret once the Job has ended: the passwords in it go with it.
// The Job stays, for its logs, until the backup or restore is deleted.
func DeletePlan(ctx context.Context, c client.Client, namespace, name string, owner client.Object) error {
	if name == "" {
		return nil
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return client.IgnoreNotFound(err)
	}
	_, err := writes.DeleteIfControlled(ctx, c, nil, s, owner)
	return err
}
