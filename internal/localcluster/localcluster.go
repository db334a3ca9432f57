// Package localcluster runs an embedded Kubernetes control plane (etcd and kube-apiserver,
// built by hack/build-control-plane.sh) so Landlord can run on a machine with no cluster. Its
// etcd data is kept between runs, so tenants survive a restart of the operator.
package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options say where the binaries, the CRDs and the state live.
type Options struct {
	// AssetsDir holds kube-apiserver and etcd.
	AssetsDir string
	// DataDir keeps etcd's data and the written kubeconfig.
	DataDir string
	// CRDDir holds the CRDs to install.
	CRDDir string
}

// Cluster is a running embedded control plane.
type Cluster struct {
	env *envtest.Environment
	// Config is an administrator's client configuration.
	Config *rest.Config
	// KubeconfigPath is the kubeconfig file written for people and kubectl.
	KubeconfigPath string
}

// Start brings up the control plane, installs the CRDs and writes an administrator kubeconfig.
func Start(opts Options) (*Cluster, error) {
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(opts.AssetsDir, bin)); err != nil {
			return nil, fmt.Errorf("control-plane binary %s not found in %s (run 'make control-plane'): %w", bin, opts.AssetsDir, err)
		}
	}
	etcdDir := filepath.Join(opts.DataDir, "etcd")
	if err := os.MkdirAll(etcdDir, 0o700); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: opts.AssetsDir,
		CRDDirectoryPaths:     []string{opts.CRDDir},
		ErrorIfCRDPathMissing: true,
	}
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdDir}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting embedded control plane: %w", err)
	}
	c := &Cluster{env: env, Config: cfg, KubeconfigPath: filepath.Join(opts.DataDir, "kubeconfig")}
	user, err := env.AddUser(envtest.User{Name: "landlord-admin", Groups: []string{"system:masters"}}, nil)
	if err == nil {
		var kubeconfig []byte
		if kubeconfig, err = user.KubeConfig(); err == nil {
			err = os.WriteFile(c.KubeconfigPath, kubeconfig, 0o600)
		}
	}
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	return c, nil
}

// Stop stops the control plane; the etcd data stays.
func (c *Cluster) Stop() error { return c.env.Stop() }
