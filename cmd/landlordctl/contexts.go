package main

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// cluster is one kubeconfig context a command works on (a rollout's, a move's two).
type cluster struct {
	name   string
	client client.WithWatch
	// host is the API server's URL, which names the cluster whatever a kubeconfig calls it.
	host string
}

// clusters connects to every context before anything changes, so a misspelled last context does
// not leave a fleet half rolled out. No context means the one the flags name.
func clusters(root *rootOptions, contexts []string) ([]cluster, error) {
	if len(contexts) == 0 {
		contexts = []string{""}
	}
	var out []cluster
	for _, name := range contexts {
		restCfg, err := root.restConfigFor(name)
		if err != nil {
			if name != "" {
				return nil, fmt.Errorf("context %s: %w", name, err)
			}
			return nil, err
		}
		if name == "" {
			if name = root.contextName(); name == "" {
				name = restCfg.Host
			}
		}
		c, err := client.NewWithWatch(restCfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
		if err != nil {
			return nil, fmt.Errorf("context %s: %w", name, err)
		}
		out = append(out, cluster{name: name, client: c, host: restCfg.Host})
	}
	return out, nil
}
