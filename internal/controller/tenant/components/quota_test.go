package components

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Whose a pod is decides whose a full quota is: a tenant that could pass its own pods off as
// Landlord's would have its own quota trouble counted as the version's, and halt the fleet's
// rollout. Owner references are anyone's to write on a new pod; the controllers' labels are not.
func TestOnlyPodsLandlordsControllersMadeCountAsLandlords(t *testing.T) {
	landlords := workloadNames{"Deployment": {"web": true}, "StatefulSet": {"db": true}, "Job": {"migrate": true}, "CronJob": {"nightly": true}}
	pod := func(apiVersion, kind, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptr.To(true)},
		}}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		made bool
	}{
		{"a pod of the ReplicaSet of Landlord's Deployment is Landlord's",
			pod("apps/v1", "ReplicaSet", "web-7d4f9", map[string]string{"pod-template-hash": "7d4f9"}), true},
		{"a pod of Landlord's StatefulSet is Landlord's", pod("apps/v1", "StatefulSet", "db", map[string]string{"controller-revision-hash": "db-5c8"}), true},
		{"a pod of Landlord's Job is Landlord's", pod("batch/v1", "Job", "migrate", map[string]string{"batch.kubernetes.io/controller-uid": "0b5e"}), true},
		{"a tenant's pod naming Landlord's StatefulSet as its owner is not", pod("apps/v1", "StatefulSet", "db", nil), false},
		{"a tenant's pod naming Landlord's Job as its owner is not", pod("batch/v1", "Job", "migrate", nil), false},
		{"a pod of a kind of another group named as Landlord's is not",
			pod("example.com/v1", "StatefulSet", "db", map[string]string{"controller-revision-hash": "db-5c8"}), false},
		{"a pod of a tenant's own Deployment named after Landlord's is not",
			pod("apps/v1", "ReplicaSet", "web-api-7d4f9", map[string]string{"pod-template-hash": "7d4f9"}), false},
		{"a pod of a Job named after Landlord's CronJob is not, whoever made it",
			pod("batch/v1", "Job", "nightly-2901", map[string]string{"batch.kubernetes.io/controller-uid": "0b5e"}), false},
		{"a pod no controller owns is not", &corev1.Pod{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := landlords.made(tc.pod); got != tc.made {
				t.Errorf("made = %v, want %v", got, tc.made)
			}
		})
	}
}
