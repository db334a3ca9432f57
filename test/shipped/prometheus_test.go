package shipped_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/landlord-dev/landlord/test/shipped"
	"github.com/landlord-dev/landlord/test/testenv"
)

// prometheusOperator is the prometheus-operator release whose CRDs the monitoring manifests are
// checked against. Its module ships them (example/prometheus-operator-crd); the module proxy
// serves it into the module cache without it being a dependency of Landlord.
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

// prometheusOperatorCRDs returns the ServiceMonitor and PrometheusRule CRDs of prometheusOperator.
func prometheusOperatorCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	g := NewWithT(t)
	var out bytes.Buffer
	cmd := exec.Command("go", "mod", "download", "-json", prometheusOperator)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	g.Expect(cmd.Run()).To(Succeed(), "downloading %s through the Go module proxy", prometheusOperator)
	var mod struct{ Dir string }
	g.Expect(json.Unmarshal(out.Bytes(), &mod)).To(Succeed())
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, name := range []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		data, err := os.ReadFile(filepath.Join(mod.Dir, "example", "prometheus-operator-crd", name))
		g.Expect(err).NotTo(HaveOccurred())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(yaml.Unmarshal(data, crd)).To(Succeed())
		crds = append(crds, crd)
	}
	return crds
}

// readObject reads a one-object manifest.
func readObject(t *testing.T, elem ...string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(shipped.Path(elem...))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{}
	NewWithT(t).Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed())
	return obj
}

// dryRunApply server-side applies obj without persisting it: the API server validates it
// against the kind's schema, and refuses fields the schema does not declare.
func dryRunApply(c client.Client, obj *unstructured.Unstructured) error {
	return c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj),
		client.DryRunAll, client.FieldOwner("landlord-test"), client.ForceOwnership)
}

func TestMonitoringManifestsAgainstPrometheusOperatorCRDs(t *testing.T) {
	g := NewWithT(t)
	crds := prometheusOperatorCRDs(t)
	testenv.NeedCluster(t)
	env, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(env.Admin, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	for _, crd := range crds {
		g.Expect(c.Create(ctx, crd)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for _, crd := range crds {
			live := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(crd), live)).To(Succeed())
			established := false
			for _, cond := range live.Status.Conditions {
				established = established || cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
			}
			g.Expect(established).To(BeTrue(), "CRD %s is not established", crd.Name)
		}
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "landlord-system"}})).To(Succeed())

	manifests := map[string][]string{
		"the metrics Service":                {"config", "default", "metrics_service.yaml"},
		"the ServiceMonitor":                 {"config", "prometheus", "monitor.yaml"},
		"the PrometheusRule with the alerts": {"config", "prometheus", "rules.yaml"},
	}
	for what, path := range manifests {
		t.Run(what+" is accepted by the API server with the CRDs installed", func(t *testing.T) {
			// The API server may take a moment to serve a kind after its CRD is established.
			NewWithT(t).Eventually(func() error { return dryRunApply(c, readObject(t, path...)) }).
				WithTimeout(30 * time.Second).Should(Succeed())
		})
	}
	t.Run("a ServiceMonitor with a field the CRD does not declare is refused, so the check is strict", func(t *testing.T) {
		g := NewWithT(t)
		monitor := readObject(t, "config", "prometheus", "monitor.yaml")
		g.Expect(unstructured.SetNestedField(monitor.Object, "https", "spec", "endpointz")).To(Succeed())
		err := dryRunApply(c, monitor)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("endpointz"))
	})
	t.Run("the ServiceMonitor selects the metrics Service by its labels and port name", func(t *testing.T) {
		g := NewWithT(t)
		monitor := readObject(t, "config", "prometheus", "monitor.yaml")
		service := readObject(t, "config", "default", "metrics_service.yaml")
		selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
		g.Expect(selector).NotTo(BeEmpty())
		for k, v := range selector {
			g.Expect(service.GetLabels()).To(HaveKeyWithValue(k, v))
		}
		g.Expect(monitor.GetNamespace()).To(Equal(service.GetNamespace()))
		endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
		ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
		g.Expect(endpoints).To(HaveLen(1))
		g.Expect(ports).To(HaveLen(1))
		g.Expect(endpoints[0].(map[string]any)["port"]).To(Equal(ports[0].(map[string]any)["name"]))
	})
}
