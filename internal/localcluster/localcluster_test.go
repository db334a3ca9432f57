package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func assetsDir(t *testing.T) string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "bin", "k8s", "1.37.2")
}

// The cluster the operator and its tests run on does what a real one does with what Landlord
// creates: Deployments roll out onto nodes, pools keep their pods, namespaces are emptied and
// removed, quotas count, and the metrics API reports what each pod uses.
func TestAWholeClusterRunsWorkloadsOnSimulatedNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole local cluster: not under -short")
	}
	// Each test's cluster is its own (its data directory, its ports): the two run side by side.
	t.Parallel()
	c, err := Start(Options{AssetsDir: assetsDir(t), DataDir: dataDir(t), MetricsServer: true})
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
	eventually := func(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deployment := func(name string, pool string, annotations map[string]string, image string) *appsv1.Deployment {
		labels := map[string]string{"app": name}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
				},
			},
		}
		if pool != "" {
			d.Spec.Template.Spec.NodeSelector = map[string]string{tenancyv1alpha1.NodePoolLabel: pool}
			d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: tenancyv1alpha1.NodePoolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
		}
		return d
	}
	for _, d := range []*appsv1.Deployment{
		deployment("web", "", map[string]string{UsageCPUAnnotation: "150m", UsageMemoryAnnotation: "100Mi"}, "nginx:1.27"),
		deployment("pooled", "pool-a", nil, "nginx:1.27"),
		deployment("unready", "", map[string]string{NeverReadyAnnotation: "true"}, "nginx:1.27"),
		deployment("unpullable", "", nil, UnpullableImage),
	} {
		if _, err := cs.AppsV1().Deployments("shop").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a Deployment rolls out and its pods run on the open node", func(t *testing.T) {
		eventually(t, "web available", func(ctx context.Context) (bool, error) {
			d, err := cs.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
			return err == nil && d.Status.AvailableReplicas == 2 && d.Status.ObservedGeneration == d.Generation, nil
		})
		pods, err := cs.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "node-0" {
				t.Errorf("pod %s is %s on %q, want Running on node-0", p.Name, p.Status.Phase, p.Spec.NodeName)
			}
		}
	})
	t.Run("a pool's pods run on the pool's node only", func(t *testing.T) {
		eventually(t, "pooled available", func(ctx context.Context) (bool, error) {
			d, err := cs.AppsV1().Deployments("shop").Get(ctx, "pooled", metav1.GetOptions{})
			return err == nil && d.Status.AvailableReplicas == 2, nil
		})
		pods, err := cs.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=pooled"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 2 {
			t.Fatalf("%d pods, want 2", len(pods.Items))
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "pool-a-0" {
				t.Errorf("pod %s runs on %q, want pool-a-0", p.Name, p.Spec.NodeName)
			}
		}
	})
	t.Run("a pod that never passes readiness runs but is never Ready", func(t *testing.T) {
		eventually(t, "unready pods running", func(ctx context.Context) (bool, error) {
			pods, err := cs.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=unready"})
			if err != nil || len(pods.Items) != 2 {
				return false, nil
			}
			for _, p := range pods.Items {
				if p.Status.Phase != corev1.PodRunning {
					return false, nil
				}
			}
			return true, nil
		})
		d, err := cs.AppsV1().Deployments("shop").Get(ctx, "unready", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.ReadyReplicas != 0 {
			t.Errorf("%d ready replicas, want 0", d.Status.ReadyReplicas)
		}
	})
	t.Run("a pod whose image cannot be pulled stays Pending", func(t *testing.T) {
		eventually(t, "unpullable pods waiting", func(ctx context.Context) (bool, error) {
			pods, err := cs.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=unpullable"})
			if err != nil || len(pods.Items) != 2 {
				return false, nil
			}
			for _, p := range pods.Items {
				if p.Status.Phase != corev1.PodPending || len(p.Status.ContainerStatuses) == 0 ||
					p.Status.ContainerStatuses[0].State.Waiting == nil || p.Status.ContainerStatuses[0].State.Waiting.Reason != "ImagePullBackOff" {
					return false, nil
				}
			}
			return true, nil
		})
	})
	t.Run("a quota counts the pods that run", func(t *testing.T) {
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pods"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resourceQuantity(100)}},
		}
		if _, err := cs.CoreV1().ResourceQuotas("shop").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "quota used", func(ctx context.Context) (bool, error) {
			q, err := cs.CoreV1().ResourceQuotas("shop").Get(ctx, "pods", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			used := q.Status.Used[corev1.ResourcePods]
			return used.Value() == 8, nil
		})
	})
	t.Run("the metrics API reports what each pod is said to use", func(t *testing.T) {
		mc := metricsclient.NewForConfigOrDie(c.Config)
		// metrics-server reports CPU once it has scraped twice (a rate of kwok's counter).
		var got *metricsv1beta1.PodMetricsList
		eventually(t, "the web pods' metrics", func(ctx context.Context) (bool, error) {
			var err error
			got, err = mc.MetricsV1beta1().PodMetricses("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			return err == nil && len(got.Items) == 2, nil
		})
		for _, p := range got.Items {
			if len(p.Containers) != 1 {
				t.Fatalf("pod %s has metrics of %d containers, want 1", p.Name, len(p.Containers))
			}
			usage := p.Containers[0].Usage
			if memory := usage[corev1.ResourceMemory]; memory.Cmp(resource.MustParse("100Mi")) != 0 {
				t.Errorf("pod %s uses %s of memory, want 100Mi", p.Name, memory.String())
			}
			// A rate between two scrapes, timed by each end: within 2% of what kwok plays.
			if cpu := usage[corev1.ResourceCPU]; cpu.MilliValue() < 147 || cpu.MilliValue() > 153 {
				t.Errorf("pod %s uses %s of CPU, want 150m", p.Name, cpu.String())
			}
		}
	})
	t.Run("a deleted namespace is emptied and removed", func(t *testing.T) {
		if err := cs.CoreV1().Namespaces().Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "namespace gone", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
}

// dataDir is a temporary directory, kept (with the cluster's logs) when the test fails.
func dataDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "localcluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster data and logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// make run keeps the cluster's data between runs (docs/getting-started.md: tenants survive a restart): a cluster
// started again on the same directory has what the last one had, its nodes Ready again, and the
// metrics API reporting its pods (kwok serves the nodes on a new port at each start). A Job's
// pod whose program ran when the cluster stopped fails, as a pod of a lost node does.
func TestAClusterStartedAgainOnItsDataKeepsWhatItHad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole local cluster: not under -short")
	}
	t.Parallel()
	dir := dataDir(t)
	ctx := context.Background()
	opts := Options{AssetsDir: assetsDir(t), DataDir: dir, MetricsServer: true, Images: testImages(t)}
	c, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kept", Name: "busy", Annotations: map[string]string{UsageMemoryAnnotation: "42Mi"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	if _, err := cs.CoreV1().Pods("kept").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jobs"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	if _, err := cs.BatchV1().Jobs("jobs").Create(ctx, testJob("cut-short", corev1.Container{Name: "main", Image: testImage, Args: []string{"wait", state}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Job's program started", func(context.Context) (bool, error) {
		data, _ := os.ReadFile(state)
		return strings.HasPrefix(string(data), "started"), nil
	})
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}

	// Start returns only once every node is Ready again, the ones it found included.
	c, err = Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	cs = kubernetes.NewForConfigOrDie(c.Config)
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace created before the restart: %v", err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != len(DefaultNodes()) {
		t.Errorf("%d nodes after the restart, want %d", len(nodes.Items), len(DefaultNodes()))
	}
	mc := metricsclient.NewForConfigOrDie(c.Config)
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := mc.MetricsV1beta1().PodMetricses("kept").Get(ctx, "busy", metav1.GetOptions{})
		if err != nil || len(m.Containers) != 1 {
			return false, nil
		}
		memory := m.Containers[0].Usage[corev1.ResourceMemory]
		return memory.Cmp(resource.MustParse("42Mi")) == 0, nil
	})
	if err != nil {
		t.Errorf("the metrics API does not report the pod kept from before the restart: %v (metrics-server's log: %s)", err, filepath.Join(c.LogDir, "metrics-server.log"))
	}
	ended := jobPod(t, cs, "cut-short", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed }).Status.ContainerStatuses[0].State.Terminated
	if ended == nil || ended.Message != restartedMessage {
		t.Errorf("the pod whose program ran as the cluster stopped ended %+v, want the message %q", ended, restartedMessage)
	}

	t.Run("a start without metrics-server unregisters the metrics API an earlier one served", func(t *testing.T) {
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		if c, err = Start(Options{AssetsDir: assetsDir(t), DataDir: dir}); err != nil {
			t.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(c.Config)
		if _, err := cs.Discovery().ServerGroups(); err != nil {
			t.Errorf("discovery: %v", err)
		}
		if _, err := cs.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1"); !apierrors.IsNotFound(err) {
			t.Errorf("metrics.k8s.io/v1beta1 after a start without metrics-server: %v, want NotFound", err)
		}
	})
}
