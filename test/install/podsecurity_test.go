package install_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// The operator opens its file store on a PersistentVolumeClaim and writes its key there at
// first start. Many provisioners hand out a new volume owned by root with mode 0755, so the
// pod must run as the image's user and own the volume through fsGroup, or the operator cannot
// start. kwok runs no container, so this is checked on the manifest, against the Dockerfile.
func TestTheOperatorPodCanWriteANewVolumeAsTheImagesUser(t *testing.T) {
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindStringSubmatch(string(dockerfile))
	if m == nil {
		t.Fatal("the Dockerfile names no numeric USER uid:gid")
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d *appsv1.Deployment
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj := &appsv1.Deployment{}
		if err := yaml.Unmarshal([]byte(doc), obj); err != nil {
			t.Fatal(err)
		}
		if obj.Kind == "Deployment" {
			d = obj
		}
	}
	if d == nil {
		t.Fatal("no Deployment in config/manager/manager.yaml")
	}
	sc := d.Spec.Template.Spec.SecurityContext
	if sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil || sc.FSGroup == nil {
		t.Fatalf("the pod's securityContext %+v lacks runAsUser, runAsGroup or fsGroup", sc)
	}
	for name, got := range map[string]int64{"runAsUser": *sc.RunAsUser, "runAsGroup": *sc.RunAsGroup, "fsGroup": *sc.FSGroup} {
		want := m[1]
		if name != "runAsUser" {
			want = m[2]
		}
		if strconv.FormatInt(got, 10) != want {
			t.Errorf("%s is %d, want the image's %s", name, got, want)
		}
	}
}
