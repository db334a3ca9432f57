// Package shipped reads the manifests Landlord ships (config/), for the tests that check them
// against the code: the operator's generated role above all, which every RBAC test reads.
package shipped

import (
	"os"
	"path/filepath"
	"runtime"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// Path is a file of the repository, from its root: Path("config", "rbac", "role.yaml").
func Path(elem ...string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file), "..", ".."}, elem...)...)
}

// OperatorRole is the operator's ClusterRole as generated into config/rbac/role.yaml.
func OperatorRole() (*rbacv1.ClusterRole, error) {
	data, err := os.ReadFile(Path("config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	return role, yaml.Unmarshal(data, role)
}
