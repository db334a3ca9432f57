package localcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	_ "embed"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The metrics API (metrics.k8s.io) of a local cluster is served by metrics-server, built from
// source as the other binaries are, behind kube-apiserver's aggregation layer, exactly as on a
// real cluster. What it scrapes is kwok's: kwok serves each simulated node's kubelet resource
// metrics (/metrics/resource, at the path the node's metrics.k8s.io/resource-metrics-path
// annotation names), computed from what each pod is said to use: the pod's annotations
// kwok.x-k8s.io/usage-cpu and kwok.x-k8s.io/usage-memory (1m and 1Mi when absent).

//go:embed kwok-metrics.yaml
var kwokMetrics []byte

const (
	// MetricsServerBinary is metrics-server's file name in the assets directory.
	MetricsServerBinary = "metrics-server"
	// UsageCPUAnnotation on a pod is the CPU kwok says each of its containers uses.
	UsageCPUAnnotation = "kwok.x-k8s.io/usage-cpu"
	// UsageMemoryAnnotation on a pod is the memory kwok says each of its containers uses.
	UsageMemoryAnnotation = "kwok.x-k8s.io/usage-memory"

	// resourceMetricsPathAnnotation tells metrics-server where a node's resource metrics are.
	resourceMetricsPathAnnotation = "metrics.k8s.io/resource-metrics-path"
	// frontProxyClient is the name kube-apiserver's aggregation layer presents to metrics-server.
	frontProxyClient = "front-proxy-client"
	// metricsResolution is how often metrics-server scrapes: its least.
	metricsResolution = 10 * time.Second
)

// resourceMetricsPath is where kwok serves the resource metrics of the node named node.
func resourceMetricsPath(node string) string {
	return "/metrics/nodes/" + node + "/metrics/resource"
}

// aggregation is what kube-apiserver's aggregation layer and metrics-server need: a CA of their
// own, the client certificate kube-apiserver presents to aggregated API servers (whose user they
// trust), and metrics-server's serving certificate, valid for the name kube-apiserver checks
// (its Service's DNS name).
type aggregation struct {
	caFile         string
	ca             []byte
	proxy, serving keyPair
}

type keyPair struct{ certFile, keyFile string }

// writeAggregation makes the CA and both certificates in dir.
func writeAggregation(dir string) (aggregation, error) {
	a := aggregation{
		caFile:  filepath.Join(dir, "aggregation-ca.crt"),
		proxy:   keyPair{filepath.Join(dir, "front-proxy-client.crt"), filepath.Join(dir, "front-proxy-client.key")},
		serving: keyPair{filepath.Join(dir, "metrics-server.crt"), filepath.Join(dir, "metrics-server.key")},
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return a, err
	}
	caSerial, err := serial()
	if err != nil {
		return a, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: "landlord-local-aggregation-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return a, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return a, err
	}
	a.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(a.caFile, a.ca, 0o600); err != nil {
		return a, err
	}
	for _, leaf := range []struct {
		pair     keyPair
		template x509.Certificate
	}{
		{a.proxy, x509.Certificate{
			Subject:     pkix.Name{CommonName: frontProxyClient},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
		{a.serving, x509.Certificate{
			Subject:     pkix.Name{CommonName: "metrics-server"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSNames:    []string{"metrics-server.kube-system.svc", "localhost"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}},
	} {
		template := leaf.template
		if template.SerialNumber, err = serial(); err != nil {
			return a, err
		}
		template.NotBefore, template.NotAfter = now.Add(-time.Hour), now.Add(10*365*24*time.Hour)
		template.KeyUsage = x509.KeyUsageDigitalSignature
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return a, err
		}
		der, err := x509.CreateCertificate(rand.Reader, &template, ca, &key.PublicKey, caKey)
		if err != nil {
			return a, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return a, err
		}
		if err := os.WriteFile(leaf.pair.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			return a, err
		}
		if err := os.WriteFile(leaf.pair.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
			return a, err
		}
	}
	return a, nil
}

// serial is a random certificate serial number: each start makes its certificates anew, and no
// two certificates of one issuer name should share one.
func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// configure turns on kube-apiserver's aggregation layer.
func (a aggregation) configure(api *envtest.APIServer) {
	args := api.Configure()
	args.Set("requestheader-client-ca-file", a.caFile)
	args.Set("requestheader-allowed-names", frontProxyClient)
	args.Set("requestheader-username-headers", "X-Remote-User")
	args.Set("requestheader-group-headers", "X-Remote-Group")
	args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	args.Set("proxy-client-cert-file", a.proxy.certFile)
	args.Set("proxy-client-key-file", a.proxy.keyFile)
}

// servingCert is the certificate kube-apiserver serves (valid for localhost and 127.0.0.1) and
// the CA that signed it; kwok's node server serves it too.
type servingCert struct {
	caFile, certFile, keyFile string
}

// metricsServer runs metrics-server on port, serving a's certificate and trusting kwok's
// (nodes), which is kube-apiserver's.
func metricsServer(assets, kubeconfig string, a aggregation, nodes servingCert, port int) processSpec {
	return processSpec{
		name: MetricsServerBinary,
		path: filepath.Join(assets, MetricsServerBinary),
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--tls-cert-file=" + a.serving.certFile,
			"--tls-private-key-file=" + a.serving.keyFile,
			// Every simulated node is kwok's server, at the node's address and status port.
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-use-node-status-port",
			"--kubelet-certificate-authority=" + nodes.caFile,
			"--metric-resolution=" + metricsResolution.String(),
			// It must be under nine tenths of the resolution; kwok answers at once.
			"--kubelet-request-timeout=5s",
		},
		healthz: "127.0.0.1:" + strconv.Itoa(port),
	}
}

// registerMetricsAPI makes metrics-server, listening on port, serve metrics.k8s.io/v1beta1
// through the aggregation layer, as its own installation does (an APIService backed by a
// Service; here an ExternalName Service, as metrics-server runs beside kube-apiserver rather
// than in a pod), and waits until kube-apiserver reports the API available.
func registerMetricsAPI(ctx context.Context, cfg *rest.Config, caBundle []byte, port int) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	service := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "metrics-server", "namespace": "kube-system"},
		"spec": map[string]any{
			"type": "ExternalName", "externalName": "localhost",
			"ports": []any{map[string]any{"name": "https", "port": int64(port), "protocol": "TCP"}},
		},
	}}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1",
			"service":              map[string]any{"name": "metrics-server", "namespace": "kube-system", "port": int64(port)},
			"caBundle":             base64.StdEncoding.EncodeToString(caBundle),
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	for _, obj := range []*unstructured.Unstructured{service, apiService.DeepCopy()} {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("landlord-local-cluster"), client.ForceOwnership); err != nil {
			return fmt.Errorf("registering the metrics API: %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(apiService), apiService); err != nil {
			return false, nil
		}
		conditions, _, _ := unstructured.NestedSlice(apiService.Object, "status", "conditions")
		for _, cond := range conditions {
			if m, ok := cond.(map[string]any); ok && m["type"] == "Available" {
				return m["status"] == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the metrics API (v1beta1.metrics.k8s.io) to be available: %w", err)
	}
	return nil
}

// unregisterMetricsAPI removes the metrics API's registration, if an earlier start made one.
func unregisterMetricsAPI(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	for _, obj := range []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": "v1beta1.metrics.k8s.io"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "metrics-server", "namespace": "kube-system"}}},
	} {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the metrics API an earlier start registered: %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}
