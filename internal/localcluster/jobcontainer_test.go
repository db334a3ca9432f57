package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

func TestExpandReadsVariablesAsKubernetesDoes(t *testing.T) {
	vars := map[string]string{"NAME": "web", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for in, want := range map[string]string{
		"hello $(NAME)":       "hello web",
		"$(NAME)-$(NAME)":     "web-web",
		"$(MISSING) stays":    "$(MISSING) stays",
		"$$(NAME) is escaped": "$(NAME) is escaped",
		"[$(EMPTY)]":          "[]",
		"unclosed $(NAME":     "unclosed $(NAME",
		"a lone $ sign":       "a lone $ sign",
		"ends with $":         "ends with $",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAPathUnderAMountMovesToTheDirectoryStandingForIt(t *testing.T) {
	m := pathMap{mounts: []mount{
		{path: "/var/run/landlord", dir: "/pods/1/volumes/run"},
		{path: "/var/run/landlord/plan", dir: "/pods/1/volumes/plan"},
		{path: "/dev/termination-log", dir: "/pods/1/termination-log"},
	}}
	for in, want := range map[string]string{
		"/var/run/landlord/plan/plan.json": "/pods/1/volumes/plan/plan.json",
		"/var/run/landlord/plan":           "/pods/1/volumes/plan",
		"/var/run/landlord/other":          "/pods/1/volumes/run/other",
		"/var/run/landlordish":             "/var/run/landlordish",
		"/dev/termination-log":             "/pods/1/termination-log",
		"relative/var/run/landlord":        "relative/var/run/landlord",
		"--plan=/var/run/landlord/plan":    "--plan=/var/run/landlord/plan",
	} {
		if got := m.mapPath(in); got != want {
			t.Errorf("mapPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTheTerminationMessageIsTheFileOrTheEndOfAFailedContainersOutput(t *testing.T) {
	dir := t.TempDir()
	file, log := filepath.Join(dir, "termination-log"), filepath.Join(dir, "out.log")
	var out strings.Builder
	out.WriteString("an earlier run's output\n")
	offset := int64(out.Len())
	for range 100 {
		out.WriteString(strings.Repeat("x", 30) + "\n")
	}
	if err := os.WriteFile(log, []byte(out.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		written string
		policy  corev1.TerminationMessagePolicy
		code    int32
		want    func(string) bool
	}{
		{"the file's content, when written", "why", corev1.TerminationMessageFallbackToLogsOnError, 1, func(s string) bool { return s == "why" }},
		{"nothing, for a failure under the File policy", "", corev1.TerminationMessageReadFile, 1, func(s string) bool { return s == "" }},
		{"nothing, for a success under FallbackToLogsOnError", "", corev1.TerminationMessageFallbackToLogsOnError, 0, func(s string) bool { return s == "" }},
		{"the last 2,048 bytes of the last 80 lines, for a failure under FallbackToLogsOnError", "", corev1.TerminationMessageFallbackToLogsOnError, 1,
			func(s string) bool { return len(s) == fallbackBytes && !strings.Contains(s, "earlier") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(file, []byte(tc.written), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := terminationMessage(file, log, offset, tc.policy, tc.code); !tc.want(got) {
				t.Errorf("message %q", got)
			}
		})
	}
}

// kwok leaves a known image's Job pods to the runner once Running: it neither completes, fails
// nor removes them; it still makes them Running.
func TestKwokLeavesTheKnownImagesPodsToTheRunner(t *testing.T) {
	stages, err := stagesFor(kwokStages, map[string]Program{"b:1": {}, "a:1": {}})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(stages), "\n---\n") {
		var stage struct {
			Metadata struct{ Name string }
			Spec     struct {
				Selector struct {
					MatchExpressions []struct {
						Key, Operator string
						Values        []string
					}
				}
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &stage); err != nil {
			t.Fatal(err)
		}
		excluded := false
		for _, e := range stage.Spec.Selector.MatchExpressions {
			if e.Key == ".spec.containers.[0].image" && e.Operator == "NotIn" && strings.Join(e.Values, ",") == "a:1,b:1" {
				excluded = true
			}
		}
		want := stage.Metadata.Name == "pod-complete" || stage.Metadata.Name == "pod-fail" || stage.Metadata.Name == "pod-delete"
		if excluded != want {
			t.Errorf("stage %s leaves the known images' pods alone: %v, want %v", stage.Metadata.Name, excluded, want)
		}
	}
	if same, _ := stagesFor(kwokStages, nil); string(same) != string(kwokStages) {
		t.Error("with no known image, the stages are not kwok-stages.yaml as written")
	}
}

// jobPodOf is a pod of one container in namespace "jobs", whose controller is Job "job".
func jobPodOf(c corev1.Container, volumes ...corev1.Volume) *corev1.Pod {
	c.Name = "main"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "job-x", UID: "pod-uid",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "job", UID: "job-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: volumes},
	}
}

// What decides which executable or library runs is the image's Program's alone: a pod that
// sets it, as PATH reaching a mounted ConfigMap's script named pg_dump would, fails.
func TestAContainerThatSetsWhatDecidesWhatRunsFails(t *testing.T) {
	tools := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "tools"},
		Data:       map[string]string{"pg_dump": "#!/bin/sh\necho owned\n", "LD_PRELOAD": "/tools/evil.so"},
	}
	prog := Program{Entrypoint: "/usr/local/bin/landlord", Args: []string{"job"}, Env: map[string]string{"PATH": "/usr/bin:/bin"}}
	toolsVolume := corev1.Volume{Name: "tools", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "tools"}}}}
	set := func(name, value string) corev1.Container {
		return corev1.Container{Image: "backup:1", Args: []string{"job"}, Env: []corev1.EnvVar{{Name: name, Value: value}},
			VolumeMounts: []corev1.VolumeMount{{Name: "tools", MountPath: "/tools"}}}
	}
	for _, tc := range []struct {
		name      string
		container corev1.Container
		// refused is the variable the pod is refused for; "" when it runs.
		refused string
	}{
		{"a PATH reaching a mounted ConfigMap is refused", set("PATH", "/tools:/usr/bin"), "PATH"},
		{"an LD_PRELOAD is refused", set("LD_PRELOAD", "/tools/evil.so"), "LD_PRELOAD"},
		{"an LD_LIBRARY_PATH is refused", set("LD_LIBRARY_PATH", "/tools"), "LD_LIBRARY_PATH"},
		{"any other LD_ variable is refused", set("LD_AUDIT", "/tools/evil.so"), "LD_AUDIT"},
		{"a DYLD_ variable is refused", set("DYLD_INSERT_LIBRARIES", "/tools/evil.so"), "DYLD_INSERT_LIBRARIES"},
		{"a GCONV_PATH is refused", set("GCONV_PATH", "/tools"), "GCONV_PATH"},
		{"a BASH_ENV is refused", set("BASH_ENV", "/tools/pg_dump"), "BASH_ENV"},
		{"an OPENSSL_CONF is refused", set("OPENSSL_CONF", "/tools/openssl.cnf"), "OPENSSL_CONF"},
		{"a MariaDB client plugin directory is refused", set("LIBMYSQL_PLUGIN_DIR", "/tools"), "LIBMYSQL_PLUGIN_DIR"},
		{"such a variable from a ConfigMap's envFrom is refused", corev1.Container{Image: "backup:1", Args: []string{"job"},
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "tools"}}}}}, "LD_PRELOAD"},
		{"any other variable is the container's, and PATH the Program's", set("HOME", "/tools"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tools)
			p, err := prepareContainer(context.Background(), cs, jobPodOf(tc.container, toolsVolume), tc.container, prog, t.TempDir())
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), "sets "+tc.refused+",") {
					t.Fatalf("prepared %+v, %v; want the pod refused for setting %s", p, err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(p.env, "PATH=/usr/bin:/bin") || !slices.ContainsFunc(p.env, func(kv string) bool { return strings.HasPrefix(kv, "HOME=") && strings.HasSuffix(kv, "/volumes/tools") }) {
				t.Errorf("environment %q: want the Program's PATH and the container's HOME", p.env)
			}
		})
	}
	for name, want := range map[string]bool{"PATH": true, "LD_BIND_NOW": true, "DYLD_LIBRARY_PATH": true, "BASH_FUNC_pg_dump%%": true,
		"HOME": false, "TMPDIR": false, "PGPASSWORD": false, "MYPATH": false, "OLD_PRELOAD": false} {
		if got := IsProgramEnv(name); got != want {
			t.Errorf("IsProgramEnv(%q) = %v, want %v", name, got, want)
		}
	}
}

// A Secret's or a ConfigMap's files are data: whatever mode the pod gives them, none is
// executable.
func TestAVolumesFilesAreNeverExecutable(t *testing.T) {
	for _, tc := range []struct {
		name        string
		defaultMode *int32
		itemMode    *int32
		want        os.FileMode
	}{
		{"a file of no mode is 0644", nil, nil, 0o644},
		{"a defaultMode of 0755 writes 0644", ptr.To[int32](0o755), nil, 0o644},
		{"a defaultMode of 0400 writes 0400", ptr.To[int32](0o400), nil, 0o400},
		{"an item's mode of 0777 writes 0666", ptr.To[int32](0o400), ptr.To[int32](0o777), 0o666},
		{"an item's mode of 0500 writes 0400", nil, ptr.To[int32](0o500), 0o400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			items := []corev1.KeyToPath{{Key: "pg_dump", Path: "bin/pg_dump", Mode: tc.itemMode}}
			if err := writeKeys(dir, map[string][]byte{"pg_dump": []byte("#!/bin/sh\n")}, items, tc.defaultMode, nil); err != nil {
				t.Fatal(err)
			}
			info, err := os.Stat(filepath.Join(dir, "bin", "pg_dump"))
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != tc.want {
				t.Errorf("mode %v, want %v", info.Mode().Perm(), tc.want)
			}
		})
	}
}

// An entrypoint that does more than its Jobs need (the landlord binary, which is also the
// operator) runs only with the arguments its Program begins them with.
func TestAProgramsArgsAreWhatItsProcessesArgumentsBeginWith(t *testing.T) {
	prog := Program{Entrypoint: "/usr/local/bin/landlord", Commands: map[string]string{"/landlord": "/usr/local/bin/landlord"}, Args: []string{"job"}}
	for _, tc := range []struct {
		name      string
		container corev1.Container
		wantArgs  []string
	}{
		{"the entrypoint runs with args beginning job", corev1.Container{Args: []string{"job", "--plan", "/plan.json"}}, []string{"job", "--plan", "/plan.json"}},
		{"the entrypoint with args starting the operator is refused", corev1.Container{Args: []string{"--embedded=always", "--control-plane-assets", "/x"}}, nil},
		{"the entrypoint with no args is refused", corev1.Container{}, nil},
		{"the entrypoint with job further along is refused", corev1.Container{Args: []string{"--zap-devel", "job"}}, nil},
		{"an arg that only begins with job is refused", corev1.Container{Args: []string{"jobs"}}, nil},
		{"a listed command runs with arguments beginning job", corev1.Container{Command: []string{"/landlord", "job"}, Args: []string{"--plan", "/p"}}, []string{"job", "--plan", "/p"}},
		{"a listed command with other arguments is refused", corev1.Container{Command: []string{"/landlord"}, Args: []string{"--embedded=always"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.container.Image = "backup:1"
			p, err := prepareContainer(context.Background(), fake.NewClientset(), jobPodOf(tc.container), tc.container, prog, t.TempDir())
			if tc.wantArgs == nil {
				if err == nil || !strings.Contains(err.Error(), `only with arguments beginning ["job"]`) {
					t.Fatalf("prepared %+v, %v; want the pod refused for its arguments", p, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.path != "/usr/local/bin/landlord" || !slices.Equal(p.args, tc.wantArgs) {
				t.Errorf("runs %s %q, want /usr/local/bin/landlord %q", p.path, p.args, tc.wantArgs)
			}
		})
	}
}

// A pod's ownerReference is whatever its author wrote: only a pod whose controller is a Job
// that exists, with that UID, runs.
func TestOnlyAPodControlledByAJobThatExistsRuns(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "job", UID: "job-uid"}}
	elsewhere := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "job", UID: "job-uid"}}
	for _, tc := range []struct {
		name  string
		owner func(*metav1.OwnerReference) // changes the pod's reference to Job "job" (job-uid)
		jobs  []runtime.Object
		ok    bool
	}{
		{"a pod controlled by its Job runs", func(*metav1.OwnerReference) {}, []runtime.Object{job}, true},
		{"a pod whose Job does not exist is refused", func(*metav1.OwnerReference) {}, []runtime.Object{elsewhere}, false},
		{"a pod whose Job's UID is another is refused", func(o *metav1.OwnerReference) { o.UID = "forged" }, []runtime.Object{job}, false},
		{"a pod that a Job owns but does not control is refused", func(o *metav1.OwnerReference) { o.Controller = nil }, []runtime.Object{job}, false},
		{"a pod controlled by a Job of another API group is refused", func(o *metav1.OwnerReference) { o.APIVersion = "example.com/v1" }, []runtime.Object{job}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := jobPodOf(corev1.Container{Image: "backup:1"})
			tc.owner(&pod.OwnerReferences[0])
			err := checkJob(context.Background(), fake.NewClientset(tc.jobs...), pod)
			if tc.ok != (err == nil) {
				t.Errorf("checkJob: %v, want the pod to run: %v", err, tc.ok)
			}
		})
	}
}
