package component_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/component"
)

func object(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "generation": int64(2)}}
	for k, v := range fields {
		obj[k] = v
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestScaleToZero(t *testing.T) {
	replicas := func() map[string]any { return map[string]any{"spec": map[string]any{"replicas": int64(3)}} }
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want int64
	}{
		{"a Deployment is scaled to zero", object("apps/v1", "Deployment", "web", replicas()), 0},
		{"a StatefulSet is scaled to zero", object("apps/v1", "StatefulSet", "db", replicas()), 0},
		{"a Deployment that sets no replicas is scaled to zero", object("apps/v1", "Deployment", "web", nil), 0},
		{"a ConfigMap is left alone", object("v1", "ConfigMap", "settings", replicas()), 3},
		{"a kind named Deployment outside the apps group is left alone", object("example.com/v1", "Deployment", "x", replicas()), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			component.ScaleToZero([]*unstructured.Unstructured{tc.obj})
			got, found, err := unstructured.NestedFieldNoCopy(tc.obj.Object, "spec", "replicas")
			if err != nil || !found {
				t.Fatalf("replicas not found: %v", err)
			}
			if got != tc.want {
				t.Errorf("replicas = %#v, want int64 %d", got, tc.want)
			}
		})
	}
}

func deployment(status map[string]any) *unstructured.Unstructured {
	return object("apps/v1", "Deployment", "web", map[string]any{
		"spec":   map[string]any{"replicas": int64(3)},
		"status": status,
	})
}

func TestHealth(t *testing.T) {
	rolledOut := map[string]any{
		"observedGeneration": int64(2),
		"replicas":           int64(3), "updatedReplicas": int64(3), "availableReplicas": int64(3), "readyReplicas": int64(3),
		"conditions": []any{
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
		},
	}
	halfway := map[string]any{
		"observedGeneration": int64(2),
		"replicas":           int64(3), "updatedReplicas": int64(3), "availableReplicas": int64(1), "readyReplicas": int64(1),
		"conditions": []any{
			map[string]any{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"},
			map[string]any{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
		},
	}
	pastDeadline := map[string]any{
		"observedGeneration": int64(2),
		"replicas":           int64(3), "updatedReplicas": int64(3), "availableReplicas": int64(0), "readyReplicas": int64(0),
		"conditions": []any{
			map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
				"message": `ReplicaSet "web-5d4f" has timed out progressing.`},
			map[string]any{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
		},
	}
	stale := map[string]any{}
	for k, v := range rolledOut {
		stale[k] = v
	}
	stale["observedGeneration"] = int64(1)

	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		ready   bool
		failed  bool
		message string
	}{
		{"a Deployment that has rolled out is ready", deployment(rolledOut), true, false, "Deployment is available. Replicas: 3"},
		{"a Deployment still rolling out is not ready, and says what it waits for", deployment(halfway), false, false, "Available: 1/3"},
		{"a Deployment whose controller has not seen the latest spec is not ready", deployment(stale), false, false, "generation"},
		{"a Deployment past its progress deadline has failed, in its own words", deployment(pastDeadline), false, true, `Progress deadline exceeded: ReplicaSet "web-5d4f" has timed out progressing.`},
		{"a ConfigMap is ready once it exists", object("v1", "ConfigMap", "settings", map[string]any{"data": map[string]any{"a": "b"}}), true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := component.HealthOf(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if h.Ready != tc.ready || h.Failed != tc.failed || !strings.Contains(h.Message, tc.message) {
				t.Errorf("health = %+v, want ready=%v failed=%v message containing %q", h, tc.ready, tc.failed, tc.message)
			}
		})
	}
}

// The answer to a write is the server's object: an annotation on it is whatever was written
// there, a tenant's user included. Its health is kstatus's verdict on its body, never what an
// annotation claims; only the cache's own record (made as the object entered the cache) is read.
func TestAHealthWrittenOnTheServerIsNeverBelieved(t *testing.T) {
	halfway := deployment(map[string]any{
		"observedGeneration": int64(2),
		"replicas":           int64(3), "updatedReplicas": int64(3), "availableReplicas": int64(1), "readyReplicas": int64(1),
	})
	halfway.SetAnnotations(map[string]string{apply.HealthAnnotation: `{"ready":true}`})
	gvk := halfway.GroupVersionKind()
	h, err := component.LiveHealth(halfway, gvk)
	if err != nil {
		t.Fatal(err)
	}
	if h.Ready {
		t.Errorf("a Deployment with 1 of 3 replicas available, annotated ready on the server, is ready: %+v", h)
	}
	recorded := halfway.DeepCopy()
	component.MarkHealth(recorded, gvk)
	if cached, _ := component.CachedHealth(recorded, gvk); cached != h {
		t.Errorf("the cache's record %+v differs from the live verdict %+v", cached, h)
	}
}

func TestInventoryKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		key  string
	}{
		{"a core object has an empty group", object("v1", "ConfigMap", "settings", nil), "/ConfigMap/settings"},
		{"a grouped object names its group but not its version", object("apps/v1", "Deployment", "web", nil), "apps/Deployment/web"},
		{"a custom resource names its group", object("monitoring.coreos.com/v1", "ServiceMonitor", "web", nil), "monitoring.coreos.com/ServiceMonitor/web"},
	} {
		t.Run(tc.name+", and its key parses back", func(t *testing.T) {
			key := component.InventoryKey(tc.obj)
			if key != tc.key {
				t.Fatalf("key %q, want %q", key, tc.key)
			}
			gk, name, err := component.ParseInventoryKey(key)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.obj.GroupVersionKind().GroupKind(); gk != want || name != tc.obj.GetName() {
				t.Errorf("parsed %v %q, want %v %q", gk, name, want, tc.obj.GetName())
			}
		})
	}
	for _, key := range []string{"", "ConfigMap/x", "/ConfigMap/", "//x", "apps/Deployment/web/extra"} {
		t.Run("a malformed entry "+strings.ReplaceAll(key, "/", "∕")+" is an error", func(t *testing.T) {
			if gk, name, err := component.ParseInventoryKey(key); err == nil {
				t.Errorf("parsed %q as %v %q", key, gk, name)
			}
		})
	}
	t.Run("the zero group kind is returned with an error", func(t *testing.T) {
		if gk, _, _ := component.ParseInventoryKey("x"); gk != (schema.GroupKind{}) {
			t.Errorf("got %v", gk)
		}
	})
}

func TestAQuotaShortageIsTellingNoRoomFromARequestTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name, message string
		replicas      int64
		shortage      bool
	}{
		{"a pod the quota's pods are used up for is short of room",
			`pods "web-6d4cf56db6-x2x9k" is forbidden: exceeded quota: landlord, requested: pods=1, used: pods=2, limited: pods=2`, 1, true},
		{"a pod whose CPU fits the quota but not what is left is short of room",
			`pods "web-1" is forbidden: exceeded quota: landlord, requested: limits.cpu=500m,requests.cpu=250m, used: limits.cpu=1800m,requests.cpu=900m, limited: limits.cpu=2,requests.cpu=1`, 2, true},
		{"replicas that need more than the whole quota are the version's, one pod fitting",
			`pods "web-1" is forbidden: exceeded quota: landlord, requested: requests.memory=2Gi, used: requests.memory=3Gi, limited: requests.memory=4Gi`, 3, false},
		{"a pod asking for more than the whole quota is the version's",
			`pods "web-1" is forbidden: exceeded quota: landlord, requested: requests.memory=8Gi, used: requests.memory=0, limited: requests.memory=4Gi`, 1, false},
		{"a pod over the quota on one resource of two is the version's",
			`pods "web-1" is forbidden: exceeded quota: landlord, requested: pods=1,requests.cpu=3, used: pods=0,requests.cpu=0, limited: pods=5,requests.cpu=2`, 1, false},
		{"a failure of another kind is no shortage",
			`pods "web-1" is forbidden: violates PodSecurity "restricted:latest"`, 1, false},
		{"a message it cannot read is no shortage",
			`pods "web-1" is forbidden: exceeded quota: landlord`, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := component.QuotaShortage(tc.message, tc.replicas); got != tc.shortage {
				t.Errorf("QuotaShortage(%q, %d) = %v, want %v", tc.message, tc.replicas, got, tc.shortage)
			}
		})
	}
}
