package localcluster

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

const (
	// SimulatedNodeLabel marks the nodes kwok plays.
	SimulatedNodeLabel = "localcluster.landlord.dev/simulated"
	// NeverReadyAnnotation, set to "true" on a pod (or a pod template), keeps the pod Running
	// but never Ready, as a pod whose readiness probe fails.
	NeverReadyAnnotation = "localcluster.landlord.dev/never-ready"
	// HoldAnnotation, on a Job's pod (through its template), holds its end: kwok leaves the
	// pod Running until the annotation is removed, then completes it (or fails it with
	// ExitCodeAnnotation's code); of an image the cluster runs (Options.Images), its process
	// starts only once the annotation is removed. A test orders its steps with it, or ends a
	// held pod itself by writing its status, as a kubelet would.
	HoldAnnotation = "localcluster.landlord.dev/hold"
	// ExitCodeAnnotation is the exit code kwok fails a released pod of an image the cluster
	// does not run with.
	ExitCodeAnnotation = "localcluster.landlord.dev/exit-code"
	// UnpullableImage is an image no simulated node can pull: a pod whose first container
	// runs it stays Pending in ImagePullBackOff.
	UnpullableImage = "registry.invalid/landlord/unpullable:missing"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

// Node is a simulated node.
type Node struct {
	Name string
	// Pool, when set, puts the node in a Landlord node pool: it carries the pool label and
	// the pool's NoSchedule taint, so only that pool's pods run on it.
	Pool string
}

// DefaultNodes are one node open to every pod and one node of pool-a, the pool the samples'
// tenant runs on.
func DefaultNodes() []Node {
	return []Node{{Name: "node-0"}, {Name: "pool-a-0", Pool: "pool-a"}}
}

// Object is the Node object of n, which kwok plays once created. Its capacity is ample: the
// local cluster shows placement and lifecycle, not capacity planning.
func (n Node) Object() *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name,
			Labels: map[string]string{
				SimulatedNodeLabel:        "true",
				corev1.LabelHostname:      n.Name,
				corev1.LabelOSStable:      "linux",
				corev1.LabelArchStable:    "amd64",
				"node.kubernetes.io/role": "agent",
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl": "0",
				// Where kwok serves this node's kubelet resource metrics, for metrics-server.
				resourceMetricsPathAnnotation: resourceMetricsPath(n.Name),
			},
		},
		Status: corev1.NodeStatus{
			// Both, so that kwok's stage writes none: it would replace the list with the one it lacks.
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP}, {Type: corev1.NodeHostName, Address: n.Name}},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
				corev1.ResourcePods: resource.MustParse("500"),
				// Tenant namespaces' LimitRange gives every container an ephemeral-storage request.
				corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
			},
		},
	}
	node.Status.Allocatable = node.Status.Capacity
	if n.Pool != "" {
		node.Labels[tenancyv1alpha1.NodePoolLabel] = n.Pool
		node.Spec.Taints = []corev1.Taint{{Key: tenancyv1alpha1.NodePoolLabel, Value: n.Pool, Effect: corev1.TaintEffectNoSchedule}}
	}
	return node
}

// nodeIP is every simulated node's address: kwok's server's.
const nodeIP = "127.0.0.1"

// createNodes creates the nodes that do not exist yet (a restarted cluster keeps its nodes), and
// brings a node kept from an earlier start to the address, metrics path and kwok server port
// (port, 0 for none) nodes have now: kwok writes a node's status port only as the node becomes
// Ready, and one kept Ready would send metrics-server to the last start's port.
func createNodes(ctx context.Context, cs kubernetes.Interface, nodes []Node, port int) error {
	for _, n := range nodes {
		want := n.Object()
		want.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
		_, err := cs.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = updateNode(ctx, cs, want)
		}
		if err != nil {
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
	}
	return nil
}

func updateNode(ctx context.Context, cs kubernetes.Interface, want *corev1.Node) error {
	node, err := cs.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if path := want.Annotations[resourceMetricsPathAnnotation]; node.Annotations[resourceMetricsPathAnnotation] != path {
		metav1.SetMetaDataAnnotation(&node.ObjectMeta, resourceMetricsPathAnnotation, path)
		if node, err = cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	i := slices.IndexFunc(node.Status.Addresses, func(a corev1.NodeAddress) bool { return a.Type == corev1.NodeInternalIP })
	port := want.Status.DaemonEndpoints.KubeletEndpoint.Port
	if i >= 0 && node.Status.Addresses[i].Address == nodeIP && (port == 0 || node.Status.DaemonEndpoints.KubeletEndpoint.Port == port) {
		return nil
	}
	node.Status.Addresses = want.Status.Addresses
	if port != 0 {
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	}
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// waitNodesReady waits until kwok reports every node Ready and the node lifecycle controller
// has lifted the not-ready taint new nodes start with, or kwok exits.
func waitNodesReady(ctx context.Context, cs kubernetes.Interface, nodes []Node, kwok *process) error {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-kwok.exited:
			return false, fmt.Errorf("kwok exited: %v", kwok.err)
		default:
		}
		for _, n := range nodes {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if !nodeReady(node) || slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the simulated nodes to be Ready (kwok's log: %s): %w", kwok.log.Name(), err)
	}
	return nil
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
