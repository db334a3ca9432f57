// Package backupjobs builds and runs the Jobs that run `landlord job` over one tenant's
// databases (a backup, a restore, a database move's copy), for every reconciler that makes one:
// the plan's Secret, each step's key alone; the hardened pod of the backup image; the Job's
// creation (both found again, made by the same owner, after a lost status write) and its end.
package backupjobs

import (
	"encoding/json"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/jobs"
)

const (
	// planDir is where each step's container reads its plan, planFile.
	planDir  = "/var/run/landlord/plan"
	planFile = "plan.json"
	// scratch is each step's own HOME and TMPDIR, a volume of its own: what one step writes
	// there (a ~/.aws/config, say) never reaches the other.
	scratch = "/scratch"
	// stepsDir is where the first step leaves the dumps for the second: the one volume the
	// two share.
	stepsDir = "/var/run/landlord/dumps"
	jobLabel = tenancyv1alpha1.BackupJobLabel
	// homeSize bounds a step's own scratch volume: its CA bundles and the client tools' files.
	homeSize = "64Mi"
)

// StepKey is a step's plan's key in the Job's Secret ("dump.json"): each step's container
// mounts its own key alone.
func StepKey(op backup.Operation) string { return string(op) + ".json" }

// JobName is the name of the Job (and of its Secret) that makes a backup or a restore: its
// object's UID, so that it never names another's and a reconcile that lost its status write
// finds the Job it made.
func JobName(op backup.Operation, uid types.UID) string {
	return "landlord-" + string(op) + "-" + strings.ReplaceAll(string(uid), "-", "")[:12]
}

// PlanSecret holds the plan's two steps' plans, passwords and all, for the Job alone: owned by
// the backup or the restore, deleted once the Job ends.
func PlanSecret(cfg config.Backups, name string, owner metav1.OwnerReference, plan backup.Plan) (*corev1.Secret, error) {
	steps := []backup.Plan{plan}
	if plan.Operation != backup.OpCopy {
		// A copy is one step: it holds both logins, and nothing of the store.
		first, second, err := plan.Steps()
		if err != nil {
			return nil, err
		}
		steps = []backup.Plan{first, second}
	}
	data := map[string][]byte{}
	for _, step := range steps {
		b, err := json.Marshal(step)
		if err != nil {
			return nil, err
		}
		data[StepKey(step.Operation)] = b
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cfg.Namespace,
			Labels:          Labels(plan.Operation),
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Immutable: ptr.To(true),
		Type:      corev1.SecretTypeOpaque,
		Data:      data,
	}, nil
}

// Labels are a Job's and its plan's: Landlord's, and the operation.
func Labels(op backup.Operation) map[string]string {
	return map[string]string{
		tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
		jobLabel:                       string(op),
	}
}

// Job runs `landlord job` over the plan in the Secret of its name, once: a failed backup is
// made again by a new TenantBackup, and a failed restore is looked at before it is tried again.
// Its pod runs the plan's two steps (backup.Plan.Steps), the first as an init container, each
// holding what it alone needs: the step that runs the engines' client tools against the tenant's
// databases (dump, load) mounts its plan, with the databases' logins, and nothing else; the
// step that reads or writes the store (seal, fetch) mounts its plan, with the tenant's key, and
// gets the store's credentials (backups.envFromSecrets). Each has a scratch volume of its own
// for HOME and TMPDIR, so that nothing the first writes there (a client's configuration file)
// is read by the second; they meet in the dumps volume alone, where the second reads only the
// files the first's record names. The pod needs nothing of the Kubernetes API, and runs as no
// one in particular with nothing it could change but its volumes.
// servers are the database servers it reaches (indexes.DatabaseServersAnnotation), whose limits
// of Jobs at once it counts against.
func Job(cfg config.Backups, name string, op backup.Operation, owner metav1.OwnerReference, servers []string) *batchv1.Job {
	podLabels := Labels(op)
	for k, v := range cfg.PodLabels {
		if _, ours := podLabels[k]; !ours {
			podLabels[k] = v
		}
	}
	var envFrom []corev1.EnvFromSource
	for _, s := range cfg.EnvFromSecrets {
		envFrom = append(envFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s}}})
	}
	first, second := backup.OpDump, backup.OpSeal
	switch op {
	case backup.OpRestore:
		first, second = backup.OpFetch, backup.OpLoad
	case backup.OpCopy:
		first, second = "", backup.OpCopy
	}
	step := func(step backup.Operation) corev1.Container {
		c := corev1.Container{
			Name:  string(step),
			Image: cfg.Image,
			Args:  []string{"job", "--plan", planDir + "/" + planFile, "--dir", stepsDir},
			Env:   []corev1.EnvVar{{Name: "TMPDIR", Value: scratch}, {Name: "HOME", Value: scratch}},
			// The Job's error is its last words: kubectl logs --all-containers says why.
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			Resources:                cfg.Resources,
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "plan-" + string(step), MountPath: planDir, ReadOnly: true},
				{Name: "scratch-" + string(step), MountPath: scratch},
				{Name: "dumps", MountPath: stepsDir},
			},
		}
		if step == backup.OpSeal || step == backup.OpFetch {
			c.EnvFrom = envFrom
		}
		return c
	}
	planVolume := func(step backup.Operation) corev1.Volume {
		return corev1.Volume{Name: "plan-" + string(step), VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  name,
			Items:       []corev1.KeyToPath{{Key: StepKey(step), Path: planFile}},
			DefaultMode: ptr.To[int32](0o400),
		}}}
	}
	scratchVolume := func(step backup.Operation) corev1.Volume {
		return corev1.Volume{Name: "scratch-" + string(step), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse(homeSize))}}}
	}
	var initContainers []corev1.Container
	volumes := []corev1.Volume{planVolume(second), scratchVolume(second)}
	if first != "" {
		initContainers = []corev1.Container{step(first)}
		volumes = []corev1.Volume{planVolume(first), planVolume(second), scratchVolume(first), scratchVolume(second)}
	}
	volumes = append(volumes, corev1.Volume{Name: "dumps", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: cfg.ScratchSize}}})
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cfg.Namespace,
			Labels:          Labels(op),
			Annotations:     map[string]string{indexes.DatabaseServersAnnotation: strings.Join(servers, ",")},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(int64(cfg.Timeout.Seconds())),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: cfg.PodAnnotations},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           cfg.ServiceAccountName,
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](65532),
						RunAsGroup:     ptr.To[int64](65532),
						FSGroup:        ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					InitContainers: initContainers,
					Containers:     []corev1.Container{step(second)},
					Volumes:        volumes,
				},
			},
		},
	}
}

// Outcome reads a Job's end from its conditions: done, and whether it failed and why.
func Outcome(j *batchv1.Job) (done, failed bool, message string) {
	done, failed, why := jobs.Ended(j)
	if failed {
		message = fmt.Sprintf("Job %s/%s failed: %s (kubectl logs -n %[1]s job/%[2]s --all-containers says why)", j.Namespace, j.Name, why)
	}
	return done, failed, message
}
