// Package install tests what a platform team installs Landlord from: the image's build context
// (Dockerfile, .dockerignore), the release installer dist/install.yaml (make build-installer)
// and the Helm chart charts/landlord. The chart is rendered by Helm built from the Go module
// proxy (make helm) and compared with config/default; both installers are applied to a whole
// local cluster.
package install_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/landlord-dev/landlord/test/testenv"
)

// helmVersion is the Helm the Makefile builds into bin/ (HELM_VERSION).
const helmVersion = "v3.22.0"

// kubeVersion is what the chart is rendered for: the local cluster's Kubernetes.
const kubeVersion = testenv.KubeVersion

var root = testenv.RepoRoot()

// tool is a binary of bin/, failing the test with how to build it when it is missing.
func tool(t *testing.T, path, build string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing: '%s' builds it", path, build)
	}
	return path
}

func assets() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(root, "bin", "k8s", kubeVersion)
}

func kubectlPath(t *testing.T) string {
	return tool(t, filepath.Join(assets(), "kubectl"), "make control-plane")
}

func helmPath(t *testing.T) string {
	return tool(t, filepath.Join(root, "bin", "helm-"+helmVersion), "make helm")
}

// releaseVersion is the file VERSION's release, vX.Y.Z.
func releaseVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// run runs a command in the repository root and returns its standard output.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	out, err := runErr(env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runErr(env []string, name string, args ...string) (string, error) {
	return runErrIn(root, env, name, args...)
}

// runErrIn runs a command in dir.
func runErrIn(dir string, env []string, name string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// object is one decoded manifest.
type object = map[string]any

// decode splits a YAML stream into objects, skipping empty documents.
func decode(t *testing.T, data string) []object {
	t.Helper()
	decoder := yaml.NewYAMLOrJSONDecoder(strings.NewReader(data), 4096)
	var objects []object
	for {
		obj := object{}
		if err := decoder.Decode(&obj); errors.Is(err, io.EOF) {
			return objects
		} else if err != nil {
			t.Fatal(err)
		}
		if len(obj) > 0 {
			objects = append(objects, obj)
		}
	}
}

// key names an object as kubectl does, with its namespace: Kind/namespace/name.
func key(obj object) string {
	meta, _ := obj["metadata"].(map[string]any)
	return fmt.Sprintf("%s/%s/%s", obj["kind"], str(meta["namespace"]), str(meta["name"]))
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// field walks nested maps: field(obj, "spec", "template", "spec").
func field(obj object, path ...string) any {
	var v any = obj
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// byKey indexes objects by key, failing on a duplicate.
func byKey(t *testing.T, objects []object) map[string]object {
	t.Helper()
	out := map[string]object{}
	for _, obj := range objects {
		if _, dup := out[key(obj)]; dup {
			t.Fatalf("%s appears twice", key(obj))
		}
		out[key(obj)] = obj
	}
	return out
}
