package tenantbackup

import (
	"context"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

// A backup whose Job ended reads as ended, whatever becomes of the deletion of its plan (the
// Secret with the passwords the Job used): that deletion is tried again until it is done. A
// failed deletion used to be written into the status as Reconciling, which the next reconcile,
// deleting the plan, never took back: the backup read as in progress for ever, and kubectl wait
// and Argo CD with it.
func TestABackupThatEndedReadsSoThoughItsPlanIsDeletedLater(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	s3, key := secrettest.StartAWS(t, "backups")
	store, err := backup.OpenStore(ctx, s3.URL("backups", "landlord"), key, "")
	if err != nil {
		t.Fatal(err)
	}

	const job = "landlord-backup-0a1b2c3d4e5f"
	b := &tenancyv1alpha1.TenantBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nightly", UID: "backup-uid", Generation: 1, Finalizers: []string{Finalizer}},
		Spec:       tenancyv1alpha1.TenantBackupSpec{Tenant: "acme"},
		Status: tenancyv1alpha1.TenantBackupStatus{Phase: tenancyv1alpha1.BackupRunning, Job: job, TenantUID: "acme-uid",
			Location: "tenants/acme-uid/nightly/", Conditions: running(job)},
	}
	owned := []metav1.OwnerReference{{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: "TenantBackup", Name: b.Name, UID: b.UID, Controller: ptr.To(true)}}
	failedJob := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Backups.Namespace, Name: job, UID: "job-uid", OwnerReferences: owned},
		Status:     batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}},
	}
	plan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Backups.Namespace, Name: job, UID: "plan-uid", OwnerReferences: owned}}
	// The API server does not answer the plan's first deletion.
	refusals := 1
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
		WithObjects(b, failedJob, plan).WithStatusSubresource(b).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*corev1.Secret); ok && refusals > 0 {
				refusals--
				return apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
			}
			return c.Delete(ctx, obj, opts...)
		}}).Build()
	r := &BackupReconciler{Client: c, APIReader: c, Config: &cfg, Recorder: events.NewFakeRecorder(10), Store: store}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}

	readsFailed := func(after string) {
		t.Helper()
		got := &tenancyv1alpha1.TenantBackup{}
		if err := c.Get(ctx, req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(got)
		if err != nil {
			t.Fatal(err)
		}
		res, err := status.Compute(&unstructured.Unstructured{Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != tenancyv1alpha1.BackupFailed || res.Status != status.FailedStatus {
			t.Errorf("after %s: phase %s, kstatus %s (%s), want Failed and Failed", after, got.Status.Phase, res.Status, res.Message)
		}
	}

	if _, err := r.Reconcile(ctx, req); err == nil {
		t.Fatal("the plan's deletion failed, and the reconcile says nothing of it: it would not be tried again")
	}
	readsFailed("the reconcile that saw the Job end")
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	readsFailed("the reconcile that deleted the plan")
	if err := c.Get(ctx, client.ObjectKeyFromObject(plan), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the plan is still there: %v", err)
	}
}
