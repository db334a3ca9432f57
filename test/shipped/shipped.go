// Package shipped reads the manifests Landlord ships (config/), for the tests that check them
// against the code: the operator's generated role above all, which every RBAC test reads.
package shipped

import (
	"bytes"
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

// LeaderElectionRBAC is the Role and RoleBinding of config/rbac/leader_election.yaml.
func LeaderElectionRBAC() (*rbacv1.Role, *rbacv1.RoleBinding, error) {
	data, err := os.ReadFile(Path("config", "rbac", "leader_election.yaml"))
	if err != nil {
		return nil, nil, err
	}
	docs := bytes.Split(data, []byte("\n---\n"))
	role, binding := &rbacv1.Role{}, &rbacv1.RoleBinding{}
	if len(docs) != 2 {
		return nil, nil, os.ErrInvalid
	}
	if err := yaml.Unmarshal(docs[0], role); err != nil {
		return nil, nil, err
	}
	return role, binding, yaml.Unmarshal(docs[1], binding)
}
