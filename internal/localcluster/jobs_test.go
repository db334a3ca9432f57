package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// helperSwitch, in a process's environment, makes this test binary the program of testImage
// rather than run the tests: the image's Program sets it.
const helperSwitch = "LOCALCLUSTER_TEST_PROGRAM"

func TestMain(m *testing.M) {
	if os.Getenv(helperSwitch) == "1" {
		os.Exit(testProgram(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// testProgram is what testImage runs:
//
//	exit CODE FILE MESSAGE   writes MESSAGE to FILE (the termination message), exits CODE
//	shout CODE LINES         prints LINES numbered lines, exits CODE
//	report FILE PATH...      writes to FILE, as JSON, its environment, working directory and
//	                         the content of each PATH
//	wait FILE                writes "started PID" to FILE, and "terminated" once SIGTERM comes
func testProgram(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "test program: no command")
		return 2
	}
	switch args[0] {
	case "exit":
		code, _ := strconv.Atoi(args[1])
		if err := os.WriteFile(args[2], []byte(args[3]), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("exiting", code)
		return code
	case "shout":
		code, _ := strconv.Atoi(args[1])
		n, _ := strconv.Atoi(args[2])
		for i := 1; i <= n; i++ {
			fmt.Println("line", i)
		}
		return code
	case "report":
		cwd, _ := os.Getwd()
		r := report{Env: map[string]string{}, Cwd: cwd, Files: map[string]string{}}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			r.Env[k] = v
		}
		for i, path := range args[2:] {
			data, err := os.ReadFile(path)
			if err != nil {
				data = []byte(err.Error())
			}
			r.Files[strconv.Itoa(i)] = string(data)
		}
		data, _ := json.Marshal(r)
		if err := os.WriteFile(args[1], data, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	case "wait":
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		if err := os.WriteFile(args[1], []byte("started "+strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return 2
		}
		<-term
		_ = os.WriteFile(args[1], []byte("terminated"), 0o600)
		return 0
	}
	return 2
}

// report is what `report` says of the process.
type report struct {
	Env map[string]string
	Cwd string
	// Files are the contents of the files named, by their index.
	Files map[string]string
}

// testImage is the image the test cluster knows: its program is this test binary.
const testImage = "registry.invalid/landlord/localcluster-test:1"

func testImages(t *testing.T) map[string]Program {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Program{testImage: {Entrypoint: exe, Env: map[string]string{helperSwitch: "1"}}}
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// testJob is a Job of one try whose one container is container.
func testJob(name string, container corev1.Container, volumes ...corev1.Volume) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{container},
				Volumes:       volumes,
			}},
		},
	}
}

// jobPod waits for the Job's one pod to match cond, and returns it.
func jobPod(t *testing.T, cs kubernetes.Interface, job string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "the pod of Job "+job, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("jobs").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
		if err != nil || len(pods.Items) != 1 {
			return false, nil
		}
		pod = &pods.Items[0]
		return cond(pod), nil
	})
	return pod
}

func jobCondition(job *batchv1.Job) batchv1.JobConditionType {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

// A Job whose image the local cluster knows really runs: its container is a process of this
// machine, with the environment and volumes its pod spec gives it and nothing else, and its
// end is the Job's, as the real Job controller reads it from the pod the runner ends.
func TestAJobOfAKnownImageRunsItsProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole local cluster: not under -short")
	}
	t.Parallel()
	c, err := Start(Options{AssetsDir: assetsDir(t), DataDir: dataDir(t), Images: testImages(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	cs := kubernetes.NewForConfigOrDie(c.Config)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jobs"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	creds := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "creds"},
		Data:       map[string][]byte{"token": []byte("s3cret"), "user": []byte("alice")},
	}
	if _, err := cs.CoreV1().Secrets("jobs").Create(ctx, creds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name      string
		container corev1.Container
		volumes   []corev1.Volume
		want      batchv1.JobConditionType
		check     func(t *testing.T, pod *corev1.Pod, ended *corev1.ContainerStateTerminated)
	}{
		{
			name:      "a program that exits 0 completes its Job",
			container: corev1.Container{Image: testImage, Args: []string{"exit", "0", "/dev/termination-log", "all done"}},
			want:      batchv1.JobComplete,
			check: func(t *testing.T, pod *corev1.Pod, ended *corev1.ContainerStateTerminated) {
				if pod.Status.Phase != corev1.PodSucceeded || ended.ExitCode != 0 || ended.Reason != "Completed" || ended.Message != "all done" {
					t.Errorf("pod %s, ended %+v; want Succeeded, exit code 0, Completed, the message 'all done'", pod.Status.Phase, ended)
				}
			},
		},
		{
			name:      "a program that exits 3 fails its Job, and its pod carries the code and the program's message",
			container: corev1.Container{Image: testImage, Args: []string{"exit", "3", "/dev/termination-log", "the database is gone"}},
			want:      batchv1.JobFailed,
			check: func(t *testing.T, pod *corev1.Pod, ended *corev1.ContainerStateTerminated) {
				if pod.Status.Phase != corev1.PodFailed || ended.ExitCode != 3 || ended.Reason != "Error" || ended.Message != "the database is gone" {
					t.Errorf("pod %s, ended %+v; want Failed, exit code 3, Error, the message 'the database is gone'", pod.Status.Phase, ended)
				}
				if ended.StartedAt.IsZero() || ended.FinishedAt.Before(&ended.StartedAt) {
					t.Errorf("started %s, finished %s", ended.StartedAt, ended.FinishedAt)
				}
			},
		},
		{
			name: "a program that fails without a message leaves the end of its output as the message",
			container: corev1.Container{Image: testImage, Args: []string{"shout", "1", "100"},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError},
			want: batchv1.JobFailed,
			check: func(t *testing.T, pod *corev1.Pod, ended *corev1.ContainerStateTerminated) {
				if !strings.HasPrefix(ended.Message, "line 21\n") || !strings.HasSuffix(ended.Message, "line 100\n") {
					t.Errorf("message %q, want the last 80 lines of the output", ended.Message)
				}
			},
		},
		{
			name: "the env and envFrom of a Secret and a secret volume reach the program, and nothing of this process's environment does",
			container: corev1.Container{
				Image: testImage, Args: []string{"report", "/dev/termination-log", "/etc/creds/token-file"},
				WorkingDir: "/scratch",
				EnvFrom:    []corev1.EnvFromSource{{Prefix: "CREDS_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}},
				Env: []corev1.EnvVar{
					{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
					{Name: "ABSENT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "none"}, Key: "x", Optional: ptr.To(true)}}},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "GREETING", Value: "hello $(POD)"},
					// An env entry replaces the envFrom key of its name.
					{Name: "CREDS_user", Value: "bob"},
					{Name: "HOME", Value: "/scratch"},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds", ReadOnly: true}, {Name: "scratch", MountPath: "/scratch"}},
			},
			volumes: []corev1.Volume{
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", Items: []corev1.KeyToPath{{Key: "token", Path: "token-file"}}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			want: batchv1.JobComplete,
			check: func(t *testing.T, pod *corev1.Pod, ended *corev1.ContainerStateTerminated) {
				var r report
				if err := json.Unmarshal([]byte(ended.Message), &r); err != nil {
					t.Fatalf("the program's report %q: %v", ended.Message, err)
				}
				home := r.Env["HOME"]
				if !strings.HasSuffix(home, "/volumes/scratch") || r.Cwd != home {
					t.Errorf("HOME %q and working directory %q: want both the scratch volume's directory", home, r.Cwd)
				}
				want := map[string]string{
					"PATH": DefaultPath, "HOSTNAME": pod.Name, helperSwitch: "1",
					"CREDS_token": "s3cret", "CREDS_user": "bob", "TOKEN": "s3cret",
					"POD": pod.Name, "GREETING": "hello " + pod.Name, "HOME": home,
				}
				if fmt.Sprint(r.Env) != fmt.Sprint(want) {
					t.Errorf("the program's environment is\n%v\nwant\n%v", r.Env, want)
				}
				if r.Files["0"] != "s3cret" {
					t.Errorf("the secret volume's file holds %q, want s3cret", r.Files["0"])
				}
			},
		},
		{
			name:      "a Job's pod of an image the cluster does not know completes as kwok plays it",
			container: corev1.Container{Image: "registry.invalid/landlord/unknown:1"},
			want:      batchv1.JobComplete,
		},
		{
			name:      "a Job's pod that names a command its image's program does not list fails, and says so",
			container: corev1.Container{Image: testImage, Command: []string{"/bin/sh", "-c", "true"}},
			want:      batchv1.JobFailed,
			check: func(t *testing.T, pod *corev1.Pod, ended *corev1.ContainerStateTerminated) {
				if ended.ExitCode != 128 || !strings.Contains(ended.Message, `runs no command "/bin/sh"`) {
					t.Errorf("ended %+v, want exit code 128 and a message naming the command", ended)
				}
			},
		},
		{
			name: "a Job's pod that sets PATH fails, and says so: what runs is its image's program's alone",
			container: corev1.Container{Image: testImage, Args: []string{"exit", "0", "/dev/termination-log", "ran"},
				Env: []corev1.EnvVar{{Name: "PATH", Value: "/scratch:/usr/bin"}}},
			want: batchv1.JobFailed,
			check: func(t *testing.T, pod *corev1.Pod, ended *corev1.ContainerStateTerminated) {
				if ended.ExitCode != 128 || ended.Reason != "StartError" || !strings.Contains(ended.Message, "sets PATH, which decides what runs") {
					t.Errorf("ended %+v, want exit code 128, StartError and a message naming PATH", ended)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("job-%d", time.Now().UnixNano())
			tc.container.Name = "main"
			if _, err := cs.BatchV1().Jobs("jobs").Create(ctx, testJob(name, tc.container, tc.volumes...), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the Job's end", func(ctx context.Context) (bool, error) {
				job, err := cs.BatchV1().Jobs("jobs").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if got := jobCondition(job); got != "" && got != tc.want {
					return false, fmt.Errorf("the Job is %s, want %s", got, tc.want)
				}
				return jobCondition(job) == tc.want, nil
			})
			if tc.check == nil {
				return
			}
			pod := jobPod(t, cs, name, func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			})
			ended := pod.Status.ContainerStatuses[0].State.Terminated
			if ended == nil {
				t.Fatalf("the pod's container did not end: %+v", pod.Status.ContainerStatuses[0].State)
			}
			tc.check(t, pod, ended)
		})
	}

	t.Run("a held pod's program starts once the hold is removed", func(t *testing.T) {
		t.Parallel()
		job := testJob("held", corev1.Container{Name: "main", Image: testImage, Args: []string{"exit", "0", "/dev/termination-log", "released"}})
		job.Spec.Template.Annotations = map[string]string{HoldAnnotation: "true"}
		if _, err := cs.BatchV1().Jobs("jobs").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := jobPod(t, cs, "held", startedByKwok)
		if _, err := os.Stat(filepath.Join(c.LogDir, "pods", "jobs_"+pod.Name+".log")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the held pod's program started: its log: %v", err)
		}
		patch := []byte(`{"metadata":{"annotations":{"` + HoldAnnotation + `":null}}}`)
		if _, err := cs.CoreV1().Pods("jobs").Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		ended := jobPod(t, cs, "held", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }).Status.ContainerStatuses[0].State.Terminated
		if ended == nil || ended.Message != "released" {
			t.Errorf("the released pod ended %+v, want the program's message", ended)
		}
	})

	scratch := []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	emptyDir := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	t.Run("an init container runs first, and what it leaves in the pod's volume reaches the container", func(t *testing.T) {
		t.Parallel()
		job := testJob("init-hands-over", corev1.Container{Name: "main", Image: testImage, Args: []string{"report", "/dev/termination-log", "/scratch/handoff"}, VolumeMounts: scratch}, emptyDir)
		job.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "first", Image: testImage, Args: []string{"exit", "0", "/scratch/handoff", "from the init container"}, VolumeMounts: scratch}}
		if _, err := cs.BatchV1().Jobs("jobs").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := jobPod(t, cs, "init-hands-over", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		ended := pod.Status.ContainerStatuses[0].State.Terminated
		if pod.Status.Phase != corev1.PodSucceeded || ended == nil {
			t.Fatalf("pod %s, container %+v: want Succeeded", pod.Status.Phase, pod.Status.ContainerStatuses)
		}
		var r report
		if err := json.Unmarshal([]byte(ended.Message), &r); err != nil {
			t.Fatalf("the program's report %q: %v", ended.Message, err)
		}
		if r.Files["0"] != "from the init container" {
			t.Errorf("the container read %q from the scratch volume, want what the init container wrote", r.Files["0"])
		}
		if init := pod.Status.InitContainerStatuses; len(init) != 1 || init[0].State.Terminated == nil || init[0].State.Terminated.ExitCode != 0 {
			t.Errorf("init container statuses %+v, want one that exited 0", init)
		}
	})

	t.Run("an init container that fails fails the pod, and the container never runs", func(t *testing.T) {
		t.Parallel()
		ran := filepath.Join(t.TempDir(), "ran")
		job := testJob("init-fails", corev1.Container{Name: "main", Image: testImage, Args: []string{"exit", "0", ran, "the container ran"}})
		job.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "first", Image: testImage, Args: []string{"exit", "4", "/dev/termination-log", "the first step failed"}}}
		if _, err := cs.BatchV1().Jobs("jobs").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the Job's failure", func(ctx context.Context) (bool, error) {
			job, err := cs.BatchV1().Jobs("jobs").Get(ctx, "init-fails", metav1.GetOptions{})
			return err == nil && jobCondition(job) == batchv1.JobFailed, err
		})
		pod := jobPod(t, cs, "init-fails", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		init := pod.Status.InitContainerStatuses
		if len(init) != 1 || init[0].State.Terminated == nil || init[0].State.Terminated.ExitCode != 4 || init[0].State.Terminated.Message != "the first step failed" {
			t.Errorf("init container statuses %+v, want one that exited 4 with its message", init)
		}
		if w := pod.Status.ContainerStatuses[0].State.Waiting; w == nil {
			t.Errorf("the container's state is %+v, want waiting: it never ran", pod.Status.ContainerStatuses[0].State)
		}
		if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the container ran after its init container failed: %v", err)
		}
	})

	t.Run("a pod deleted while its program runs has its program told to end, then goes", func(t *testing.T) {
		t.Parallel()
		state := filepath.Join(t.TempDir(), "state")
		job := testJob("waits", corev1.Container{Name: "main", Image: testImage, Args: []string{"wait", state}})
		if _, err := cs.BatchV1().Jobs("jobs").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pid int
		eventually(t, "the program's start", func(context.Context) (bool, error) {
			data, _ := os.ReadFile(state)
			_, err := fmt.Sscanf(string(data), "started %d", &pid)
			return err == nil, nil
		})
		pod := jobPod(t, cs, "waits", func(*corev1.Pod) bool { return true })
		if err := cs.CoreV1().Pods("jobs").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the pod gone", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Pods("jobs").Get(ctx, pod.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if data, _ := os.ReadFile(state); string(data) != "terminated" {
			t.Errorf("the program says %q, want terminated: it was not told to end", data)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the program (pid %d) still runs: %v", pid, err)
		}
	})
}
