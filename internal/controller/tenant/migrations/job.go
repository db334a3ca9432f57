package migrations

import (
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/resources"
)

// Labels of a migration's Job and its pods, beside the tenant's and the component's.
const (
	// MigrationLabel carries the move's ID (ID): the Jobs of another move are pruned.
	MigrationLabel = tenancyv1alpha1.MigrationLabel
	// StepLabel carries the step's place in the path, as <stage>-<index>.
	StepLabel = "tenancy.landlord.dev/migration-step"
)

// DefaultTimeout bounds a migration that sets no timeout.
const DefaultTimeout = 10 * time.Minute

// databaseKeys are the keys of a credentials Secret a migration gets, by the suffix of the
// variable each becomes.
var databaseKeys = []struct{ suffix, key string }{
	{"URL", tenancyv1alpha1.CredentialsKeyURL},
	{"HOST", tenancyv1alpha1.CredentialsKeyHost},
	{"PORT", tenancyv1alpha1.CredentialsKeyPort},
	{"DATABASE", tenancyv1alpha1.CredentialsKeyDatabase},
	{"USERNAME", tenancyv1alpha1.CredentialsKeyUsername},
	{"PASSWORD", tenancyv1alpha1.CredentialsKeyPassword},
}

// DatabaseEnvPrefix is the prefix of the variables that carry a database's credentials to a
// migration: DB_<NAME>_, the name upper-cased with '-' as '_'.
func DatabaseEnvPrefix(database string) string {
	return "DB_" + strings.ToUpper(strings.ReplaceAll(database, "-", "_")) + "_"
}

// Job is the Job that runs one step of a move in the tenant's namespace: controlled by the Tenant
// and labelled with its component, so tenant users can neither change nor delete it
// (policy.ComponentObjectsPolicy), nor its pods; under the namespace's quota, limit range and
// policies like any of its pods. Its container reaches the databases it names through the
// tenant's own credentials Secrets, by reference: the Job holds no credential, and a Secret of
// another namespace cannot be named. It runs once, retried Retries times, for at most Timeout,
// with no service account token and nothing it may escalate to.
//
// servers are the DatabaseServers its databases are on (indexes.DatabaseServersAnnotation):
// what it counts against (Slots).
func Job(t *tenancyv1alpha1.Tenant, namespace, component, id, name string, stepIndex string, step Step, servers []string) *batchv1.Job {
	labels := resources.Labels(t)
	labels[tenancyv1alpha1.ComponentLabel] = component
	labels[MigrationLabel] = id
	labels[StepLabel] = stepIndex
	podLabels := resources.Labels(t)
	podLabels[tenancyv1alpha1.ComponentLabel] = component
	podLabels[MigrationLabel] = id
	podLabels[StepLabel] = stepIndex

	env := make([]corev1.EnvVar, 0, len(step.Job.Env)+len(step.Job.Databases)*len(databaseKeys)+1)
	for _, db := range step.Job.Databases {
		prefix := DatabaseEnvPrefix(db)
		for _, k := range databaseKeys {
			env = append(env, secretEnv(prefix+k.suffix, db, k.key))
		}
	}
	if len(step.Job.Databases) == 1 {
		env = append(env, secretEnv("DATABASE_URL", step.Job.Databases[0], tenancyv1alpha1.CredentialsKeyURL))
	}
	// The template's own variables come last: a name it repeats is its to set, as in a pod.
	env = append(env, step.Job.Env...)

	image := step.Job.Image
	if image == "" {
		image = step.Image
	}
	timeout := DefaultTimeout
	if step.Job.Timeout != nil && step.Job.Timeout.Duration > 0 {
		timeout = step.Job.Timeout.Duration
	}
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, Labels: labels,
			Annotations: map[string]string{
				"tenancy.landlord.dev/migration-step-name": step.Name(),
				indexes.DatabaseServersAnnotation:          strings.Join(servers, ","),
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(t, tenancyv1alpha1.GroupVersion.WithKind("Tenant"))},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To(step.Job.Retries),
			ActiveDeadlineSeconds: ptr.To(int64(timeout.Seconds())),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    "migrate",
						Image:   image,
						Command: step.Job.Command,
						Args:    step.Job.Args,
						Env:     env,
						// The migration's last words are what MigrationFailed quotes.
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						Resources:                step.Job.Resources,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
	return job
}

func secretEnv(name, database, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: tenancyv1alpha1.DatabaseSecretName(database)},
		Key:                  key,
	}}}
}
