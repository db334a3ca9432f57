package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/landlord-dev/landlord/test/testenv"
)

func TestSoftMemoryLimit(t *testing.T) {
	cases := map[string]struct {
		env     map[string]string
		want    int64
		wantErr bool
	}{
		"no container limit leaves the runtime's": {env: map[string]string{}, want: 0},
		"a limit in bytes, as the Downward API passes it, gives 90% of it": {
			env: map[string]string{memoryLimitEnv: "1073741824"}, want: 966367638,
		},
		"a limit with a unit is read as Kubernetes reads it": {
			env: map[string]string{memoryLimitEnv: "2Gi"}, want: 1932735276,
		},
		// The runtime has applied GOMEMLIMIT before main runs; someone set it on purpose.
		"GOMEMLIMIT wins over the container's limit": {
			env: map[string]string{memoryLimitEnv: "1073741824", "GOMEMLIMIT": "800MiB"}, want: 0,
		},
		"a limit that is not a size is an error":    {env: map[string]string{memoryLimitEnv: "lots"}, wantErr: true},
		"a limit of zero is an error, not no limit": {env: map[string]string{memoryLimitEnv: "0"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := softMemoryLimit(func(key string) string { return tc.env[key] })
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want an error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("soft limit = %d, want %d", got, tc.want)
			}
		})
	}
}

// The shipped Deployment gives the operator its container's memory limit, and no GOMEMLIMIT
// that would win over it: changing limits.memory is all it takes to resize the operator.
func TestTheShippedDeploymentPassesItsMemoryLimit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var manager *corev1.Container
	for _, doc := range strings.Split(string(data), "\n---\n") {
		d := &appsv1.Deployment{}
		if err := yaml.Unmarshal([]byte(doc), d); err != nil {
			t.Fatal(err)
		}
		for i, c := range d.Spec.Template.Spec.Containers {
			if d.Kind == "Deployment" && c.Name == "manager" {
				manager = &d.Spec.Template.Spec.Containers[i]
			}
		}
	}
	if manager == nil {
		t.Fatal("no manager container in config/manager/manager.yaml")
	}
	if manager.Resources.Limits.Memory().IsZero() {
		t.Error("the manager container has no memory limit to size the soft limit from")
	}
	var passed bool
	for _, e := range manager.Env {
		switch {
		case e.Name == "GOMEMLIMIT":
			t.Errorf("GOMEMLIMIT is set (%q): it would win over the container's limit", e.Value)
		case e.Name == memoryLimitEnv:
			passed = e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
		}
	}
	if !passed {
		t.Errorf("%s is not passed from limits.memory through the Downward API", memoryLimitEnv)
	}
}
