package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/config/crd"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/shard"
	"github.com/landlord-dev/landlord/internal/version"
)

// minKubernetes is the oldest Kubernetes Landlord runs on: the first to serve
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (docs/install.md).
var minKubernetes = utilversion.MustParseGeneric("1.36.0")

func (k *checker) kubernetesVersion(context.Context) checkResult {
	info, err := k.discovery.ServerVersion()
	if err != nil {
		return failed("reading the API server's version: "+err.Error(), "check --kubeconfig and --context name a cluster you can reach")
	}
	return judgeKubernetesVersion(info.GitVersion)
}

func judgeKubernetesVersion(gitVersion string) checkResult {
	v, err := utilversion.ParseGeneric(gitVersion)
	if err != nil {
		return warning(fmt.Sprintf("the API server reports version %q, which is not a version: Landlord needs Kubernetes 1.36 or later", gitVersion),
			"check the cluster runs Kubernetes 1.36 or later")
	}
	if v.LessThan(minKubernetes) {
		return failed(fmt.Sprintf("Kubernetes %s is older than 1.36, the first to serve the admission policies tenant isolation rests on", gitVersion),
			"upgrade the cluster to Kubernetes 1.36 or later before installing Landlord")
	}
	return passed("Kubernetes %s (Landlord needs 1.36 or later)", gitVersion)
}

// admissionResources are the admissionregistration.k8s.io/v1 resources Landlord's policies are.
var admissionResources = []string{
	"validatingadmissionpolicies", "validatingadmissionpolicybindings",
	"mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
}

func (k *checker) admissionAPIs(context.Context) checkResult {
	list, err := k.discovery.ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil && !apierrors.IsNotFound(err) {
		return failed("reading the API server's admissionregistration.k8s.io/v1 resources: "+err.Error(), "check --kubeconfig and --context name a cluster you can reach")
	}
	return judgeAdmissionAPIs(list)
}

func judgeAdmissionAPIs(list *metav1.APIResourceList) checkResult {
	var missing []string
	for _, want := range admissionResources {
		if list == nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == want }) {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		return failed("the API server does not serve admissionregistration.k8s.io/v1 "+strings.Join(missing, ", ")+": Landlord's isolation policies cannot be installed",
			"run Kubernetes 1.36 or later with admissionregistration.k8s.io/v1 served in full (a control plane started with --runtime-config or feature gates that turn admission policies off must turn them back on)")
	}
	return passed("admissionregistration.k8s.io/v1 serves ValidatingAdmissionPolicy and MutatingAdmissionPolicy with their bindings")
}

// crdFix says how to install this build's CRDs.
func crdFix() string {
	v := version.Get().Version
	how := "apply the CRDs of the release this landlordctl is from (its crds.yaml, or `make install` in the same checkout)"
	if _, err := utilversion.ParseSemantic(v); err == nil {
		how = "kubectl apply --server-side -f https://github.com/landlord-dev/landlord/releases/download/" + v + "/crds.yaml"
	}
	return how + "; `helm upgrade` never upgrades a chart's crds/, so apply them before upgrading the chart"
}

func (k *checker) crds(ctx context.Context) checkResult {
	shipped, err := crd.Shipped()
	if err != nil {
		return failed("reading the CRDs this build ships: "+err.Error(), "")
	}
	var problems []string
	for _, want := range shipped {
		live := &apiextensionsv1.CustomResourceDefinition{}
		switch err := k.client.Get(ctx, client.ObjectKey{Name: want.Name}, live); {
		case apierrors.IsNotFound(err):
			problems = append(problems, want.Name+" is not installed")
			continue
		case err != nil:
			return failed("reading CustomResourceDefinition "+want.Name+": "+err.Error(), "run the check as a user who may read CustomResourceDefinitions")
		}
		if diffs := crdDifferences(live, want); len(diffs) > 0 {
			problems = append(problems, want.Name+" is not this build's: "+strings.Join(diffs, "; "))
		}
	}
	if len(problems) > 0 {
		return failed(listed(problems), crdFix())
	}
	return passed("the %d CRDs are installed as this build (%s) ships them", len(shipped), version.Get().Version)
}

// crdDifferences says how an installed CRD differs from this build's, in what users act on: the
// versions served and stored, and the fields each version's schema has or lacks.
func crdDifferences(live, want *apiextensionsv1.CustomResourceDefinition) []string {
	var diffs []string
	if live.Spec.Scope != want.Spec.Scope {
		diffs = append(diffs, fmt.Sprintf("its scope is %s, this build's %s", live.Spec.Scope, want.Spec.Scope))
	}
	for _, lv := range live.Spec.Versions {
		if !slices.ContainsFunc(want.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == lv.Name }) {
			diffs = append(diffs, "it has version "+lv.Name+", which this build does not know (is it newer than this build?)")
		}
	}
	for _, wv := range want.Spec.Versions {
		i := slices.IndexFunc(live.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == wv.Name })
		if i < 0 {
			diffs = append(diffs, "it lacks version "+wv.Name)
			continue
		}
		lv := live.Spec.Versions[i]
		if lv.Served != wv.Served || lv.Storage != wv.Storage {
			diffs = append(diffs, fmt.Sprintf("version %s is served=%t storage=%t, this build's served=%t storage=%t", wv.Name, lv.Served, lv.Storage, wv.Served, wv.Storage))
		}
		var liveSchema, wantSchema *apiextensionsv1.JSONSchemaProps
		if lv.Schema != nil {
			liveSchema = lv.Schema.OpenAPIV3Schema
		}
		if wv.Schema != nil {
			wantSchema = wv.Schema.OpenAPIV3Schema
		}
		lacks, extra := schemaFields(liveSchema, wantSchema)
		switch {
		case len(lacks) > 0:
			diffs = append(diffs, fmt.Sprintf("version %s lacks %s (an older release's?)", wv.Name, brief(lacks)))
		case len(extra) > 0:
			diffs = append(diffs, fmt.Sprintf("version %s has %s, which this build does not (is it newer than this build?)", wv.Name, brief(extra)))
		case !sameJSON(liveSchema, wantSchema):
			diffs = append(diffs, fmt.Sprintf("the schema of version %s differs from this build's (validations, defaults or descriptions)", wv.Name))
		}
		if !sameJSON(lv.Subresources, wv.Subresources) || !sameJSON(lv.AdditionalPrinterColumns, wv.AdditionalPrinterColumns) {
			diffs = append(diffs, fmt.Sprintf("the subresources or printer columns of version %s differ from this build's", wv.Name))
		}
	}
	return diffs
}

// schemaFields are the field paths want's schema has and live's lacks, and the other way round.
func schemaFields(live, want *apiextensionsv1.JSONSchemaProps) (lacks, extra []string) {
	lf, wf := map[string]bool{}, map[string]bool{}
	fieldPaths(live, "", lf)
	fieldPaths(want, "", wf)
	for p := range wf {
		// A field under one the live schema lacks altogether is said once, by its parent.
		if !lf[p] && lf[parentPath(p)] {
			lacks = append(lacks, p)
		}
	}
	for p := range lf {
		if !wf[p] && wf[parentPath(p)] {
			extra = append(extra, p)
		}
	}
	slices.Sort(lacks)
	slices.Sort(extra)
	return lacks, extra
}

func parentPath(p string) string {
	i := strings.LastIndex(p, ".")
	if i < 0 {
		return ""
	}
	return strings.TrimSuffix(p[:i], "[]")
}

func fieldPaths(s *apiextensionsv1.JSONSchemaProps, prefix string, into map[string]bool) {
	if s == nil {
		return
	}
	into[prefix] = true
	for name, p := range s.Properties {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		fieldPaths(&p, path, into)
	}
	if s.Items != nil && s.Items.Schema != nil {
		fieldPaths(s.Items.Schema, prefix+"[]", into)
	}
}

// brief names the first few of many.
func brief(items []string) string {
	const most = 5
	if len(items) <= most {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:most], ", ") + fmt.Sprintf(" and %d more", len(items)-most)
}

func (k *checker) tenantRoles(ctx context.Context) checkResult {
	var problems []string
	for _, want := range resources.ClusterRoles() {
		live := &rbacClusterRole{}
		switch err := k.client.Get(ctx, client.ObjectKey{Name: want.Name}, &live.ClusterRole); {
		case apierrors.IsNotFound(err):
			problems = append(problems, "ClusterRole "+want.Name+" is missing")
			continue
		case err != nil:
			return failed("reading ClusterRole "+want.Name+": "+err.Error(), "run the check as a user who may read ClusterRoles")
		}
		if diffs := live.differences(want); len(diffs) > 0 {
			problems = append(problems, "ClusterRole "+want.Name+" was edited: "+strings.Join(diffs, "; "))
		}
	}
	if len(problems) > 0 {
		return failed(listed(problems),
			"apply the tenant roles of this release again (config/rbac/tenant_roles.yaml, in install.yaml and the Helm chart): "+
				"kubectl apply --server-side --force-conflicts -f install.yaml, or helm upgrade; nothing puts them back by itself, and every tenant's access is bound to them")
	}
	return passed("the tenant ClusterRoles %s grant what this build's do", strings.Join(roleNames(), ", "))
}

func roleNames() []string {
	var names []string
	for _, r := range resources.ClusterRoles() {
		names = append(names, r.Name)
	}
	return names
}

// policyOperator is the operator the installed policies are compared for: the --config file's, as
// the operator builds them, or the default configuration's.
func (k *checker) policyOperator() policy.Operator {
	// The installed operator is not told a leader election namespace: it runs in its pod's.
	return policy.OperatorOf(k.config, "")
}

func (k *checker) admissionPolicies(ctx context.Context) checkResult {
	var missing, edited []string
	wants := policy.Objects(k.policyOperator())
	for _, want := range wants {
		gvk := want.GetObjectKind().GroupVersionKind()
		obj, err := k.client.Scheme().New(gvk)
		if err != nil {
			return failed(err.Error(), "")
		}
		live := obj.(client.Object)
		switch err := k.client.Get(ctx, client.ObjectKey{Name: want.GetName()}, live); {
		case apierrors.IsNotFound(err):
			missing = append(missing, gvk.Kind+" "+want.GetName()+" is missing")
			continue
		case err != nil:
			return failed("reading "+gvk.Kind+" "+want.GetName()+": "+err.Error(), "run the check as a user who may read admission policies and their bindings")
		}
		diffs, err := specDifferences(live, want)
		if err != nil {
			return failed(err.Error(), "")
		}
		if len(diffs) > 0 {
			edited = append(edited, gvk.Kind+" "+want.GetName()+": "+strings.Join(diffs, "; "))
		}
	}
	fix := "while it runs, the operator puts its policies back within seconds of an edit: a difference that stays means it is not running (see operator-leader) " +
		"or runs with another configuration than --config; `kubectl apply --server-side --force-conflicts -f install.yaml` (config/policies) installs the default configuration's"
	switch {
	case len(missing) > 0 || (len(edited) > 0 && k.configured):
		return failed(listed(append(missing, edited...)), fix)
	case len(edited) > 0:
		return warning("compared with the policies of the default configuration, as no --config was given:"+listed(edited)+
			"\n  (an operator configured otherwise, with trusted principals or network bounds, makes them so)",
			"run the check with --config naming the operator's configuration to compare with the policies it makes; "+fix)
	}
	against := "the configuration --config names"
	if !k.configured {
		against = "the default configuration (no --config)"
	}
	return passed("the %d admission policies and bindings are as the operator makes them for %s", len(wants), against)
}

// specDifferences says how live's spec differs from what this build makes, field by field: a
// field changed or missing, or one added, unless the API server sets it by default.
func specDifferences(live, want client.Object) ([]string, error) {
	l, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return nil, err
	}
	w, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return nil, err
	}
	var diffs []string
	differences("spec", l["spec"], w["spec"], &diffs)
	return diffs, nil
}

func (k *checker) operatorLeader(ctx context.Context) checkResult {
	leases := &coordinationv1.LeaseList{}
	if err := k.client.List(ctx, leases, client.InNamespace(k.operatorNamespace)); err != nil {
		return failed("listing the Leases of "+k.operatorNamespace+": "+err.Error(), "run the check as a user who may read Leases there, or name the operator's namespace with --operator-namespace")
	}
	return judgeLeases(leases.Items, k.operatorNamespace, k.now())
}

// judgeLeases says whether the default shard's operator, and that of every shard with a Lease,
// holds its leader election Lease: it has a holder and was renewed within its duration (by this
// machine's clock).
func judgeLeases(leases []coordinationv1.Lease, namespace string, now time.Time) checkResult {
	fix := "kubectl -n " + namespace + " get deployments,pods, and the operator's log: the operator runs with --leader-elect, and a shard's Deployment with --shard"
	def := shard.LeaseName("")
	var held, problems []string
	found := false
	for _, l := range leases {
		shard, ok := shardOfLease(l.Name)
		if !ok {
			continue
		}
		found = found || l.Name == def
		what := "the default shard's Lease " + namespace + "/" + l.Name
		if shard != "" {
			what = "shard " + shard + "'s Lease " + namespace + "/" + l.Name
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		if holder == "" || l.Spec.RenewTime == nil {
			problems = append(problems, what+" is held by no one: its operator stopped")
			continue
		}
		duration := time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 15)) * time.Second
		since := now.Sub(l.Spec.RenewTime.Time).Truncate(time.Second)
		if since > duration {
			problems = append(problems, fmt.Sprintf("%s was last renewed %s ago by %s, longer than its duration (%s): its operator is not running", what, since, holder, duration))
			continue
		}
		held = append(held, fmt.Sprintf("%s held by %s", what, holder))
	}
	if !found {
		problems = append([]string{"no operator holds the default shard's Lease " + namespace + "/" + def + ": it does not exist"}, problems...)
	}
	if len(problems) > 0 {
		return failed(listed(problems), fix)
	}
	return passed("%s, renewed within its duration", strings.Join(held, "; "))
}

// shardOfLease is the shard whose leader election Lease name is, and whether it is one.
func shardOfLease(name string) (string, bool) {
	if name == shard.LeaseName("") {
		return "", true
	}
	prefix, suffix, _ := strings.Cut(shard.LeaseName("%"), "%")
	if shard, ok := strings.CutPrefix(name, prefix); ok && strings.HasSuffix(shard, suffix) {
		return strings.TrimSuffix(shard, suffix), true
	}
	return "", false
}

func (k *checker) secretStore(ctx context.Context) checkResult {
	if !k.configured {
		return warning("not checked: no --config names the operator's secret store",
			"run the check with --config naming the operator's configuration (and the store's credentials in the environment, as for `secrets` commands)")
	}
	namespace := k.config.Secrets.TemplateNamespace
	ns := &corev1.Namespace{}
	recorded := ""
	switch err := k.client.Get(ctx, client.ObjectKey{Name: namespace}, ns); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return failed("reading the template namespace "+namespace+": "+err.Error(), "run the check as a user who may read Namespaces")
	default:
		recorded = ns.Annotations[tenancyv1alpha1.SecretStoreAnnotation]
	}
	store, err := secret.Open(ctx, k.config.Secrets.Store)
	if err != nil {
		return failed("opening the "+k.config.Secrets.Store.Backend+" secret store --config names: "+err.Error(),
			"check secrets.store in --config and the store's credentials in this environment")
	}
	id, err := secret.WithTimeout(store, k.config.Secrets.Store.Timeout.Duration).Identity(ctx)
	if err != nil {
		return failed("reading the identity of the "+k.config.Secrets.Store.Backend+" secret store --config names: "+err.Error(),
			"check the store is reachable from here and the credentials in this environment may read it")
	}
	switch recorded {
	case "":
		return warning(fmt.Sprintf("the %s store (identity %s) is reachable, but namespace %s records no store yet: the operator records the store on its first template namespace sync", k.config.Secrets.Store.Backend, id, namespace),
			"start the operator (or run `"+binaryName+" secrets sync` with this configuration), then check again")
	case id:
		return passed("the %s store is reachable and is the one namespace %s records (identity %s)", k.config.Secrets.Store.Backend, namespace, id)
	}
	return failed((&secret.StoreMismatchError{Identity: id, Recorded: recorded}).Error()+fmt.Sprintf(" (%s, annotation %s)", namespace, tenancyv1alpha1.SecretStoreAnnotation),
		"run the check with the operator's own configuration; if it is, the operator reads another store than the cluster's: put secrets.store back to the store the cluster records, "+
			"or move to a new store with `secrets migrate`, never by pointing the configuration at it")
}

func (k *checker) databaseServers(ctx context.Context) checkResult {
	servers := &tenancyv1alpha1.DatabaseServerList{}
	if err := k.client.List(ctx, servers); err != nil {
		return failed("listing DatabaseServers: "+err.Error(), "install the CRDs (see crds), and run the check as a user who may read DatabaseServers")
	}
	return judgeDatabaseServers(servers.Items)
}

// judgeDatabaseServers reads each server's Ready condition: the operator's view, from inside the
// cluster, is what its tenants get.
func judgeDatabaseServers(servers []tenancyv1alpha1.DatabaseServer) checkResult {
	if len(servers) == 0 {
		return passed("no DatabaseServers are registered")
	}
	var ready, notReady, unknown, fixes []string
	for _, s := range servers {
		c := meta.FindStatusCondition(s.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		switch {
		case c == nil:
			unknown = append(unknown, s.Name+" has not been checked by the operator yet")
		case c.Status != metav1.ConditionTrue:
			notReady = append(notReady, fmt.Sprintf("%s is not Ready: %s: %s", s.Name, c.Reason, oneLine(c.Message)))
			fixes = append(fixes, fmt.Sprintf("%s: docs/troubleshooting.md#%s", s.Name, strings.ToLower(c.Reason)))
		case c.ObservedGeneration < s.Generation:
			unknown = append(unknown, s.Name+" changed since the operator last checked it")
		default:
			ready = append(ready, s.Name)
		}
	}
	switch {
	case len(notReady) > 0:
		return failed(listed(append(notReady, unknown...)), "kubectl describe databaseserver NAME; the reason's entry in the troubleshooting guide: "+strings.Join(fixes, ", "))
	case len(unknown) > 0:
		return warning(listed(unknown), "wait for the operator to check them, and see operator-leader if it does not")
	}
	return passed("%d Ready: %s", len(ready), strings.Join(ready, ", "))
}

func (k *checker) platformNamespaces(ctx context.Context) checkResult {
	var missing []string
	names := k.config.Network.PlatformNamespaceNames()
	for _, name := range names {
		err := k.client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		case err != nil:
			return failed("reading namespace "+name+": "+err.Error(), "run the check as a user who may read namespaces")
		}
	}
	return judgePlatformNamespaces(names, missing)
}

// judgePlatformNamespaces warns of the platform's namespaces, named by the configuration, that do
// not exist: every tenant lets them in, and the admission policy landlord-platform-namespaces
// lets only a cluster administrator create them, so none is anyone's to take. A tenant's
// ingress from the missing one simply never comes.
func judgePlatformNamespaces(names, missing []string) checkResult {
	if len(missing) > 0 {
		return warning(fmt.Sprintf("network.platformNamespaceSelector (or network.platformServices) names %s, which does not exist: every tenant lets it in once it does, and only a cluster administrator may create it (%s)",
			strings.Join(missing, ", "), policy.PlatformNamespaces),
			"create it as a cluster administrator if the platform runs it (an ingress controller, monitoring), or take it out of the configuration")
	}
	if len(names) == 0 {
		return passed("the configuration names no platform namespace (tenants let in none by name)")
	}
	return passed("%s exist", strings.Join(names, ", "))
}

// gitOpsTool is a GitOps controller Landlord works with, found by one of its CRDs.
type gitOpsTool struct {
	name, crd, minimum, how string
}

var (
	fluxTool   = gitOpsTool{name: "Flux", crd: "kustomizations.kustomize.toolkit.fluxcd.io", minimum: "v2.9.0", how: "flux install (or bootstrap)"}
	argoCDTool = gitOpsTool{name: "Argo CD", crd: "applications.argoproj.io", minimum: "v2.10.0", how: "its release's install.yaml or Helm chart"}
)

// versionLabel is where a tool's manifests write its version.
const versionLabel = "app.kubernetes.io/version"

func (k *checker) gitOps(tool gitOpsTool) func(context.Context) checkResult {
	return func(ctx context.Context) checkResult {
		live := &apiextensionsv1.CustomResourceDefinition{}
		switch err := k.client.Get(ctx, client.ObjectKey{Name: tool.crd}, live); {
		case apierrors.IsNotFound(err):
			return judgeGitOps(tool, nil)
		case err != nil:
			return failed("reading CustomResourceDefinition "+tool.crd+": "+err.Error(), "run the check as a user who may read CustomResourceDefinitions")
		}
		return judgeGitOps(tool, live)
	}
}

// judgeGitOps reads a tool's version from its CRD's labels (or annotations).
func judgeGitOps(tool gitOpsTool, crd *apiextensionsv1.CustomResourceDefinition) checkResult {
	minimum := utilversion.MustParseGeneric(tool.minimum)
	short := strings.TrimSuffix(tool.minimum, ".0")
	if crd == nil {
		return passed("%s is not installed (no CRD %s)", tool.name, tool.crd)
	}
	raw := crd.Labels[versionLabel]
	if raw == "" {
		raw = crd.Annotations[versionLabel]
	}
	v, err := utilversion.ParseGeneric(raw)
	if raw == "" || err != nil {
		return warning(fmt.Sprintf("%s is installed, but its CRD %s names no version (label %s is %q)", tool.name, tool.crd, versionLabel, raw),
			fmt.Sprintf("check %s is %s or later", tool.name, short))
	}
	if v.LessThan(minimum) {
		return failed(fmt.Sprintf("%s %s is older than %s, the oldest Landlord supports", tool.name, raw, short),
			fmt.Sprintf("upgrade %s to %s or later (%s)", tool.name, short, tool.how))
	}
	return passed("%s %s (Landlord needs %s or later)", tool.name, raw, short)
}
