package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/resources"
)

func newTemplateCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Work with ComponentTemplates before they are published.",
	}
	cmd.AddCommand(newTemplateRenderCommand(root))
	return cmd
}

type renderOptions struct {
	files  []string
	tenant string
	stdin  io.Reader
}

func newTemplateRenderCommand(root *rootOptions) *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render -f TEMPLATE.yaml [--tenant TENANT.yaml]",
		Short: "Render ComponentTemplates for a tenant locally, as the operator would, with no cluster.",
		Long: `Render each ComponentTemplate in the files given with -f for a tenant, with the code the operator
renders with: the template's values under the operator configuration's defaults (--config) under
the tenant's values for the component, checked against the template's valuesSchema, rendered
within the configuration's render limits, each object checked against the kinds components may
render (its scope is not known without a cluster: it is taken for namespaced), then placed in
the tenant's namespace and labeled as the operator labels it. The objects are printed as YAML.

A template that does not render makes the command exit non-zero with the error the tenant's
status would show, so CI catches a broken template before it is published: templates are
immutable once published.

The tenant comes from --tenant (a file holding a Tenant), or is a stand-in named "example"
with no values of its own. A file may hold several documents; other kinds are ignored.`,
		Example: `  landlordctl template render -f config/samples/components/web-1.0.0.yaml --tenant config/samples/components/tenant.yaml
  landlordctl template render -f web-1.1.0.yaml --config landlord.yaml > rendered.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stdin = cmd.InOrStdin()
			return runRender(root, o)
		},
	}
	cmd.Flags().StringArrayVarP(&o.files, "filename", "f", nil, `File holding ComponentTemplates ("-" for stdin; repeatable).`)
	cmd.Flags().StringVar(&o.tenant, "tenant", "", "File holding the Tenant to render for (default: a stand-in tenant named example).")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runRender(root *rootOptions, o *renderOptions) error {
	cfg, err := config.Load(root.configPath)
	if err != nil {
		return err
	}
	var templates []*tenancyv1alpha1.ComponentTemplate
	for _, f := range o.files {
		docs, err := readDocuments(f, o.stdin)
		if err != nil {
			return err
		}
		for _, d := range docs {
			if d.kind != "ComponentTemplate" {
				continue
			}
			t := &tenancyv1alpha1.ComponentTemplate{}
			if err := yaml.UnmarshalStrict(d.data, t); err != nil {
				return fmt.Errorf("%s: ComponentTemplate: %w", f, err)
			}
			templates = append(templates, t)
		}
	}
	if len(templates) == 0 {
		return fmt.Errorf("no ComponentTemplate in %v", o.files)
	}
	tenant := &tenancyv1alpha1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: "Tenant"},
		ObjectMeta: metav1.ObjectMeta{Name: "example"},
		Spec:       tenancyv1alpha1.TenantSpec{Organization: "Example", Email: "ops@example.com"},
	}
	if o.tenant != "" {
		if tenant, err = readTenant(o.tenant, o.stdin); err != nil {
			return err
		}
	}
	printer := &printers.YAMLPrinter{}
	namespace := cfg.NamespaceName(tenant.Name)
	for _, tmpl := range templates {
		objs, err := renderTemplate(&cfg, tenant, namespace, tmpl)
		if err != nil {
			return fmt.Errorf("ComponentTemplate %s does not render for tenant %s: %w", tmpl.Name, tenant.Name, err)
		}
		for _, obj := range objs {
			if err := printer.PrintObj(obj, root.out); err != nil {
				return err
			}
		}
	}
	return nil
}

// renderTemplate renders one template for the tenant as the operator does, and checks what it
// rendered as far as can be known without a cluster.
func renderTemplate(cfg *config.Config, tenant *tenancyv1alpha1.Tenant, namespace string, tmpl *tenancyv1alpha1.ComponentTemplate) ([]*unstructured.Unstructured, error) {
	c := tenancyv1alpha1.Component{Name: tmpl.Spec.Component, Version: tmpl.Spec.Version}
	for _, tc := range tenant.Spec.Components {
		if tc.Name == tmpl.Spec.Component {
			// The tenant's values for the component; the version rendered is the template's.
			c.Values = tc.Values
		}
	}
	in := component.NewInput(tenant, namespace, tmpl)
	objs, err := component.RenderForTenant(tmpl, c, in, cfg.Components.DefaultValues[c.Name], cfg.Components.Render.Limits())
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		if err := component.CheckKind(cfg.AllowedComponentKinds(), gvk.GroupKind(), obj.GetName(), true); err != nil {
			return nil, err
		}
		if ns := obj.GetNamespace(); ns != "" && ns != namespace {
			return nil, fmt.Errorf("%s %s is in namespace %s; a component may only create objects in the tenant namespace %s", gvk.Kind, obj.GetName(), ns, namespace)
		}
		resources.StampComponentObject(tenant, namespace, c.Name, obj)
	}
	return objs, nil
}

// document is one YAML document of a file, and its kind.
type document struct {
	kind string
	data []byte
}

func readDocuments(path string, stdin io.Reader) ([]document, error) {
	var r io.Reader
	if path == "-" {
		r = stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []document
	for {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		docs = append(docs, document{kind: tm.Kind, data: data})
	}
}

func readTenant(path string, stdin io.Reader) (*tenancyv1alpha1.Tenant, error) {
	docs, err := readDocuments(path, stdin)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if d.kind == "Tenant" {
			t := &tenancyv1alpha1.Tenant{}
			if err := yaml.UnmarshalStrict(d.data, t); err != nil {
				return nil, fmt.Errorf("%s: Tenant: %w", path, err)
			}
			return t, nil
		}
	}
	return nil, fmt.Errorf("%s: no Tenant", path)
}
