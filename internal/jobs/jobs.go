// Package jobs reads what Landlord needs of the Jobs it runs (backups, restores, migrations).
package jobs

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Ended reads a Job's end from its conditions (not kstatus's verdict, which reads a Job that
// started as Current): ended once Complete or Failed, failed when Failed, and why, in the Job
// controller's words.
func Ended(j *batchv1.Job) (ended, failed bool, why string) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false, ""
		case batchv1.JobFailed:
			return true, true, strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return false, false, ""
}
