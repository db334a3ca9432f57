package main

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/landlord-dev/landlord/internal/config"
)

// Where config/manager and the chart keep the operator's configuration file.
const (
	operatorConfigMap = "landlord-config"
	operatorConfigKey = "landlord.yaml"
)

// operatorNaming is what of an operator's configuration decides where a tenant's data is found:
// the namespace a tenant's stored records are kept under, and the template namespace that records
// which secret store the cluster reads.
type operatorNaming struct {
	NamespacePrefix string `json:"namespacePrefix,omitempty"`
	Secrets         struct {
		TemplateNamespace string `json:"templateNamespace,omitempty"`
	} `json:"secrets,omitempty"`
}

// operatorNamingOf reads the configuration a cluster's operator runs with from its ConfigMap in
// the operator's namespace; found is false when the cluster has none (an operator run from a
// file of its own, or outside the cluster). Only the naming is decoded, leniently: an operator of
// another version may know fields this command does not.
func operatorNamingOf(ctx context.Context, cl cluster) (naming operatorNaming, source string, found bool, err error) {
	name, err := operatorConfigMapName(ctx, cl)
	if err != nil || name == "" {
		return naming, "", false, err
	}
	cm := &corev1.ConfigMap{}
	switch err := cl.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, cm); {
	case apierrors.IsNotFound(err):
		return naming, "", false, nil
	case err != nil:
		return naming, "", false, fmt.Errorf("context %s: reading the operator's configuration %s/%s: %w", cl.name, operatorNamespace, name, err)
	}
	source = operatorNamespace + "/" + name
	data, ok := cm.Data[operatorConfigKey]
	if !ok {
		return naming, source, false, fmt.Errorf("context %s: the operator's ConfigMap %s has no %s", cl.name, source, operatorConfigKey)
	}
	if err := yaml.Unmarshal([]byte(data), &naming); err != nil {
		return naming, source, false, fmt.Errorf("context %s: reading the operator's configuration %s: %w", cl.name, source, err)
	}
	// The operator's own defaults for what its file leaves out.
	def := config.Default()
	if naming.NamespacePrefix == "" {
		naming.NamespacePrefix = def.NamespacePrefix
	}
	if naming.Secrets.TemplateNamespace == "" {
		naming.Secrets.TemplateNamespace = def.Secrets.TemplateNamespace
	}
	return naming, source, true, nil
}

// operatorConfigMapName is the name of the operator's ConfigMap: landlord-config as the chart
// names it, or, as config/manager's kustomization generates it with a hash suffix, the one the
// operator's Deployment mounts. "" when the cluster has neither.
func operatorConfigMapName(ctx context.Context, cl cluster) (string, error) {
	cm := &corev1.ConfigMap{}
	switch err := cl.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorConfigMap}, cm); {
	case err == nil:
		return operatorConfigMap, nil
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("context %s: reading the operator's configuration %s/%s: %w", cl.name, operatorNamespace, operatorConfigMap, err)
	}
	list := &appsv1.DeploymentList{}
	// Only the operator's own namespace: the labels are not protected elsewhere.
	if err := cl.client.List(ctx, list, operatorLabels, client.InNamespace(operatorNamespace)); err != nil {
		return "", fmt.Errorf("context %s: looking for the operator's Deployment: %w", cl.name, err)
	}
	for _, d := range list.Items {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && strings.HasPrefix(v.ConfigMap.Name, operatorConfigMap) {
				return v.ConfigMap.Name, nil
			}
		}
	}
	return "", nil
}

// namingProblems compares the configuration each cluster's operator runs with to what the move
// assumes (--config): an operator that makes another namespace of the tenant's name looks for its
// stored credentials under that name, finds none, and would start the tenant without its data;
// one with another template namespace records its store where this command does not look.
func (m *move) namingProblems(ctx context.Context) ([]string, error) {
	var problems []string
	for _, cl := range []cluster{m.src, m.dst} {
		naming, source, found, err := operatorNamingOf(ctx, cl)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		if naming.NamespacePrefix != m.cfg.NamespacePrefix {
			problems = append(problems, fmt.Sprintf("context %s's operator makes tenant namespaces with namespacePrefix %q, not %q as --config says (%s): the tenant's stored credentials are kept under the namespace's name",
				cl.name, naming.NamespacePrefix, m.cfg.NamespacePrefix, source))
		}
		if naming.Secrets.TemplateNamespace != m.cfg.Secrets.TemplateNamespace {
			problems = append(problems, fmt.Sprintf("context %s's operator keeps its template namespace in %q, not %q as --config says (%s): the secret store it reads is recorded there",
				cl.name, naming.Secrets.TemplateNamespace, m.cfg.Secrets.TemplateNamespace, source))
		}
	}
	return problems, nil
}
