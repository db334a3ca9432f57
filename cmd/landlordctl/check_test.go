package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/config/crd"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/shard"
	"github.com/landlord-dev/landlord/test/testenv"
)

// ---- Pure judgements: no cluster.

func TestCheckJudgesTheKubernetesVersion(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		want          checkStatus
	}{
		{"the release this suite runs passes", "v1.37.2", checkOK},
		{"the oldest supported release passes", "v1.36.0", checkOK},
		{"a provider's build of a supported release passes", "v1.36.3-gke.1200", checkOK},
		{"a release without the admission policies fails", "v1.35.4", checkFailed},
		{"a version that does not parse is a warning", "unknown", checkWarning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeKubernetesVersion(tc.version); got.Status != tc.want || (got.Status != checkOK && got.Fix == "") {
				t.Errorf("%+v, want %s with a fix", got, tc.want)
			}
		})
	}
}

func TestCheckJudgesTheAdmissionAPIsTheAPIServerServes(t *testing.T) {
	served := func(names ...string) *metav1.APIResourceList {
		list := &metav1.APIResourceList{GroupVersion: "admissionregistration.k8s.io/v1"}
		for _, n := range names {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: n})
		}
		return list
	}
	for _, tc := range []struct {
		name    string
		list    *metav1.APIResourceList
		want    checkStatus
		missing string
	}{
		{"every policy kind served passes", served(admissionResources...), checkOK, ""},
		{"mutating policies not served fail, named", served("validatingadmissionpolicies", "validatingadmissionpolicybindings", "validatingwebhookconfigurations"), checkFailed, "mutatingadmissionpolicies, mutatingadmissionpolicybindings"},
		{"no admissionregistration.k8s.io/v1 at all fails", nil, checkFailed, "validatingadmissionpolicies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeAdmissionAPIs(tc.list)
			if got.Status != tc.want || !strings.Contains(got.Message, tc.missing) {
				t.Errorf("%+v, want %s naming %q", got, tc.want, tc.missing)
			}
		})
	}
}

func TestCheckJudgesFluxAndArgoCDByTheVersionTheirCRDsCarry(t *testing.T) {
	labelled := func(labels, annotations map[string]string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}}
	}
	for _, tc := range []struct {
		name string
		tool gitOpsTool
		crd  *apiextensionsv1.CustomResourceDefinition
		want checkStatus
	}{
		{"a tool not installed passes", fluxTool, nil, checkOK},
		{"Flux v2.9.0 passes", fluxTool, labelled(map[string]string{versionLabel: "v2.9.0"}, nil), checkOK},
		{"Flux v2.8.4 fails: its kustomize-controller loses track of a tenant whose deletion was refused", fluxTool, labelled(map[string]string{versionLabel: "v2.8.4"}, nil), checkFailed},
		{"Argo CD v2.13.1 passes", argoCDTool, labelled(map[string]string{versionLabel: "v2.13.1"}, nil), checkOK},
		{"Argo CD 2.9.0 fails", argoCDTool, labelled(nil, map[string]string{versionLabel: "2.9.0"}), checkFailed},
		{"a CRD naming no version is a warning", argoCDTool, labelled(map[string]string{"app.kubernetes.io/part-of": "argocd"}, nil), checkWarning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeGitOps(tc.tool, tc.crd); got.Status != tc.want || (got.Status != checkOK && got.Fix == "") {
				t.Errorf("%+v, want %s with a fix", got, tc.want)
			}
		})
	}
}

func TestCheckJudgesEachShardsLeaseByItsRenewal(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	lease := func(name string, holder string, renewed time.Duration) coordinationv1.Lease {
		return coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: shard.LeaseName(name)},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}},
		}
	}
	other := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "some-other-controller"}}
	for _, tc := range []struct {
		name   string
		leases []coordinationv1.Lease
		want   checkStatus
		says   string
	}{
		{"a default shard renewed 2s ago passes", []coordinationv1.Lease{lease("", "pod-a", 2*time.Second), other}, checkOK, "held by pod-a"},
		{"no default shard Lease fails", []coordinationv1.Lease{other}, checkFailed, "does not exist"},
		{"a released Lease fails", []coordinationv1.Lease{lease("", "", 0)}, checkFailed, "held by no one"},
		{"a Lease not renewed for a minute fails", []coordinationv1.Lease{lease("", "pod-a", time.Minute)}, checkFailed, "last renewed 1m0s ago by pod-a"},
		{"a shard's stale Lease fails, naming the shard", []coordinationv1.Lease{lease("", "pod-a", time.Second), lease("eu", "pod-b", time.Hour)}, checkFailed, "shard eu's Lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeLeases(tc.leases, "landlord-system", now)
			if got.Status != tc.want || !strings.Contains(got.Message, tc.says) {
				t.Errorf("%+v, want %s saying %q", got, tc.want, tc.says)
			}
		})
	}
}

// ---- Against a cluster: Landlord installed as the installer leaves it and running.

// installedLandlord is an API server with Landlord as an installed, running operator leaves it:
// the CRDs and tenant roles (testenv installs them), the policies for the configuration, the
// default shard's Lease, the template namespace recording the store, a Ready DatabaseServer, and
// Flux and Argo CD at supported versions. The test writes the operator's part itself, so that
// each case breaks one thing on purpose and nothing repairs it behind the check's back.
type installedLandlord struct {
	env *testenv.Env
	// client is the administrator's, knowing CustomResourceDefinitions too.
	client     client.Client
	kubeconfig string
	configPath string
	config     config.Config
	storeID    string
}

// checkConfig is an operator configuration with a file store and a trusted principal: its
// policies are not the default configuration's.
func checkConfig(t *testing.T) (string, config.Config) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "landlord.yaml")
	doc := "secrets:\n  store:\n    backend: file\n    file: {dir: " + filepath.Join(dir, "store") + "}\n" +
		"isolation:\n  trustedPrincipals:\n  - {kind: ServiceAccount, name: velero, namespace: velero}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

func installLandlord(t *testing.T) *installedLandlord {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	testenv.NeedCluster(t)
	env, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	l := &installedLandlord{env: env, kubeconfig: writeKubeconfig(t, env)}
	l.configPath, l.config = checkConfig(t)
	scheme := tenancyv1alpha1.Scheme()
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	l.client, err = client.New(env.Admin, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	c := l.client

	for _, obj := range policy.Objects(policy.OperatorOf(l.config, "")) {
		g.Expect(c.Create(ctx, obj)).To(Succeed(), obj.GetName())
	}

	store, err := secret.Open(ctx, l.config.Secrets.Store)
	g.Expect(err).NotTo(HaveOccurred())
	l.storeID, err = store.Identity(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.config.Secrets.TemplateNamespace,
		Annotations: map[string]string{tenancyv1alpha1.SecretStoreAnnotation: l.storeID}}})).To(Succeed())

	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})).To(Succeed())
	for _, name := range l.config.Network.PlatformNamespaceNames() {
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	}
	g.Expect(c.Create(ctx, l.lease(time.Now(), 3600))).To(Succeed())

	server := &tenancyv1alpha1.DatabaseServer{
		ObjectMeta: metav1.ObjectMeta{Name: "pg-eu"},
		Spec: tenancyv1alpha1.DatabaseServerSpec{Engine: tenancyv1alpha1.EnginePostgres, Host: "pg.example.com",
			AdminCredentials: tenancyv1alpha1.SecretReference{Name: "pg-eu-admin"}},
	}
	g.Expect(c.Create(ctx, server)).To(Succeed())
	l.setServerReady(t, metav1.ConditionTrue, "Reachable", "logged in as the administrator; server version 17.2")

	l.installTool(t, "kustomize.toolkit.fluxcd.io", "Kustomization", "kustomizations", "v2.9.1")
	l.installTool(t, "argoproj.io", "Application", "applications", "v2.13.1")
	return l
}

// lease is the default shard's leader election Lease, renewed at renewed.
func (l *installedLandlord) lease(renewed time.Time, seconds int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: shard.LeaseName("")},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("landlord-controller-manager-7d9f_0b1c"), LeaseDurationSeconds: ptr.To(seconds),
			AcquireTime: &metav1.MicroTime{Time: renewed}, RenewTime: &metav1.MicroTime{Time: renewed}},
	}
}

// setServerReady writes the DatabaseServer's Ready condition, as the operator does.
func (l *installedLandlord) setServerReady(t *testing.T, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	ctx := context.Background()
	server := &tenancyv1alpha1.DatabaseServer{}
	if err := l.client.Get(ctx, client.ObjectKey{Name: "pg-eu"}, server); err != nil {
		t.Fatal(err)
	}
	server.Status.ObservedGeneration = server.Generation
	meta.SetStatusCondition(&server.Status.Conditions, metav1.Condition{Type: tenancyv1alpha1.ReadyCondition, Status: status,
		Reason: reason, Message: message, ObservedGeneration: server.Generation})
	if err := l.client.Status().Update(ctx, server); err != nil {
		t.Fatal(err)
	}
}

// installTool installs a stand-in for a GitOps tool's CRD, labelled with the tool's version as
// its manifests label it.
func (l *installedLandlord) installTool(t *testing.T, group, kind, plural, version string) {
	t.Helper()
	c := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, Labels: map[string]string{versionLabel: version}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if err := l.client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// check runs `landlordctl check -o json` with args and returns its report and error.
func (l *installedLandlord) check(t *testing.T, args ...string) (map[string]checkResult, error) {
	t.Helper()
	out, stderr, err := run(t, binaryName, append([]string{"check", "-o", "json", "--kubeconfig", l.kubeconfig}, args...)...)
	var report checkReport
	if jerr := json.Unmarshal([]byte(out), &report); jerr != nil {
		t.Fatalf("-o json: %v\nstdout:\n%s\nstderr:\n%s", jerr, out, stderr)
	}
	byName := map[string]checkResult{}
	for _, c := range report.Checks {
		byName[c.Name] = c
	}
	if len(byName) != 11 {
		t.Fatalf("%d checks, want 11:\n%s", len(byName), out)
	}
	return byName, err
}

// patch merge-patches a cluster-scoped or namespaced object.
func (l *installedLandlord) patch(t *testing.T, obj client.Object, patch string) {
	t.Helper()
	if err := l.client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func TestCheckPassesOnAnInstalledRunningLandlordAndNamesEachThingBrokenOnPurpose(t *testing.T) {
	l := installLandlord(t)
	ctx := context.Background()
	c := l.client

	t.Run("everything installed and running passes every check, and the command succeeds", func(t *testing.T) {
		checks, err := l.check(t, "--config", l.configPath)
		if err != nil {
			t.Errorf("err = %v", err)
		}
		for name, res := range checks {
			if res.Status != checkOK {
				t.Errorf("%s: %s: %s", name, res.Status, res.Message)
			}
		}
	})

	t.Run("without --config the policies are compared with the defaults and a difference, like the store left unchecked, is only a warning", func(t *testing.T) {
		checks, err := l.check(t)
		if err != nil {
			t.Errorf("err = %v, want success with warnings", err)
		}
		if p := checks["admission-policies"]; p.Status != checkWarning || !strings.Contains(p.Message, "default configuration") || !strings.Contains(p.Message, "velero") {
			t.Errorf("admission-policies: %+v", p)
		}
		if s := checks["secret-store"]; s.Status != checkWarning || !strings.Contains(s.Message, "no --config") {
			t.Errorf("secret-store: %+v", s)
		}
	})

	t.Run("people read one line per check and what to do", func(t *testing.T) {
		out, _, err := run(t, binaryName, "check", "--kubeconfig", l.kubeconfig, "--config", l.configPath)
		if err != nil || !strings.Contains(out, "[ok]      kubernetes-version: Kubernetes v1.37.2") || !strings.HasSuffix(out, "all 11 checks passed\n") {
			t.Errorf("err=%v\n%s", err, out)
		}
	})

	crdProtection := &admissionregistrationBinding{name: policy.CRDProtection}
	for _, tc := range []struct {
		name string
		// check is the check that must fail (or warn), saying says; also are others that fail
		// with it because of how the case is made.
		check  string
		status checkStatus
		says   []string
		also   []string
		breaks func(t *testing.T) (repair func(t *testing.T))
	}{
		{
			name: "a deleted CRD fails the crds check, naming it", check: "crds", status: checkFailed,
			says: []string{"tenantpools.tenancy.landlord.dev is not installed"},
			// Deleting a Landlord CRD takes deleting the protection binding first.
			also: []string{"admission-policies"},
			breaks: func(t *testing.T) func(*testing.T) {
				crdProtection.delete(t, c)
				pools := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "tenantpools.tenancy.landlord.dev"}}
				// The API server drops the binding from its policies a moment after the delete.
				NewWithT(t).Eventually(func() error { return c.Delete(ctx, pools) }).WithTimeout(waitLimit).Should(Succeed())
				NewWithT(t).Eventually(func() bool { return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(pools), pools)) }).
					WithTimeout(waitLimit).Should(BeTrue())
				return func(t *testing.T) {
					if err := c.Create(ctx, shippedCRD(t, pools.Name)); err != nil {
						t.Fatal(err)
					}
					crdProtection.restore(t, c, l.config)
				}
			},
		},
		{
			name: "the previous release's Tenant CRD fails the crds check, naming the fields it lacks", check: "crds", status: checkFailed,
			says: []string{"tenants.tenancy.landlord.dev is not this build's", "lacks", "spec.class"},
			breaks: func(t *testing.T) func(*testing.T) {
				if err := l.env.InstallPreviousTenantCRD(ctx); err != nil {
					t.Fatal(err)
				}
				return func(t *testing.T) {
					current := &apiextensionsv1.CustomResourceDefinition{}
					if err := c.Get(ctx, client.ObjectKey{Name: "tenants.tenancy.landlord.dev"}, current); err != nil {
						t.Fatal(err)
					}
					shipped := shippedCRD(t, current.Name)
					shipped.ResourceVersion = current.ResourceVersion
					if err := c.Update(ctx, shipped); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
		{
			name: "a tenant ClusterRole granting more fails the tenant-roles check, naming the role and the grant", check: "tenant-roles", status: checkFailed,
			says: []string{"ClusterRole landlord-tenant-viewer was edited", "it grants get secrets"},
			breaks: func(t *testing.T) func(*testing.T) {
				role := &rbacv1.ClusterRole{}
				name := resources.ClusterRoleName(resources.ViewerRole)
				if err := c.Get(ctx, client.ObjectKey{Name: name}, role); err != nil {
					t.Fatal(err)
				}
				role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
				if err := c.Update(ctx, role); err != nil {
					t.Fatal(err)
				}
				return func(t *testing.T) {
					role.Rules = role.Rules[:len(role.Rules)-1]
					if err := c.Update(ctx, role); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
		{
			name: "a policy binding switched to Warn fails the admission-policies check, naming the field", check: "admission-policies", status: checkFailed,
			says: []string{"ValidatingAdmissionPolicyBinding landlord-crd-protection", `spec.validationActions is ["Warn"], this build makes ["Deny"]`},
			breaks: func(t *testing.T) func(*testing.T) {
				binding := crdProtection.object()
				l.patch(t, binding, `{"spec":{"validationActions":["Warn"]}}`)
				return func(t *testing.T) { l.patch(t, binding, `{"spec":{"validationActions":["Deny"]}}`) }
			},
		},
		{
			name: "no operator Lease fails the operator-leader check", check: "operator-leader", status: checkFailed,
			says: []string{"no operator holds the default shard's Lease landlord-system/landlord.tenancy.landlord.dev"},
			breaks: func(t *testing.T) func(*testing.T) {
				if err := c.Delete(ctx, l.lease(time.Now(), 0)); err != nil {
					t.Fatal(err)
				}
				return func(t *testing.T) {
					if err := c.Create(ctx, l.lease(time.Now(), 3600)); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
		{
			name: "a Lease not renewed within its duration fails the operator-leader check", check: "operator-leader", status: checkFailed,
			says: []string{"was last renewed 1h", "longer than its duration (15s)"},
			breaks: func(t *testing.T) func(*testing.T) {
				stale := l.lease(time.Now().Add(-time.Hour), 15)
				l.patch(t, stale, `{"spec":{"leaseDurationSeconds":15,"renewTime":"`+stale.Spec.RenewTime.Format(metav1.RFC3339Micro)+`"}}`)
				return func(t *testing.T) {
					fresh := l.lease(time.Now(), 3600)
					l.patch(t, fresh, `{"spec":{"leaseDurationSeconds":3600,"renewTime":"`+fresh.Spec.RenewTime.Format(metav1.RFC3339Micro)+`"}}`)
				}
			},
		},
		{
			name: "a store whose identity is not the one the cluster records fails the secret-store check", check: "secret-store", status: checkFailed,
			says: []string{"is not the one this cluster records (identity 0f0f-another-store)"},
			breaks: func(t *testing.T) func(*testing.T) {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.config.Secrets.TemplateNamespace}}
				l.patch(t, ns, `{"metadata":{"annotations":{"`+tenancyv1alpha1.SecretStoreAnnotation+`":"0f0f-another-store"}}}`)
				return func(t *testing.T) {
					l.patch(t, ns, `{"metadata":{"annotations":{"`+tenancyv1alpha1.SecretStoreAnnotation+`":"`+l.storeID+`"}}}`)
				}
			},
		},
		{
			name: "a DatabaseServer the operator found unreachable fails the database-servers check, naming the reason", check: "database-servers", status: checkFailed,
			says: []string{"pg-eu is not Ready: Unreachable: dial tcp 10.0.0.7:5432: connect: connection refused"},
			breaks: func(t *testing.T) func(*testing.T) {
				l.setServerReady(t, metav1.ConditionFalse, "Unreachable", "dial tcp 10.0.0.7:5432: connect: connection refused")
				return func(t *testing.T) { l.setServerReady(t, metav1.ConditionTrue, "Reachable", "logged in") }
			},
		},
		{
			name: "a platform namespace the configuration names that does not exist is a warning", check: "platform-namespaces", status: checkWarning,
			says: []string{"names monitoring, which does not exist", policy.PlatformNamespaces},
			breaks: func(t *testing.T) func(*testing.T) {
				// No namespace controller runs here: the namespace is finalized by hand, as it
				// would be once emptied.
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}
				g := NewWithT(t)
				g.Expect(c.Delete(ctx, ns)).To(Succeed())
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ns), ns)).To(Succeed())
				ns.Spec.Finalizers = nil
				g.Expect(c.SubResource("finalize").Update(ctx, ns)).To(Succeed())
				g.Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(ns), ns))).To(BeTrue())
				return func(t *testing.T) {
					NewWithT(t).Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}})).To(Succeed())
				}
			},
		},
		{
			name: "Flux older than v2.9 fails the flux check", check: "flux", status: checkFailed,
			says: []string{"Flux v2.8.0 is older than v2.9"},
			breaks: func(t *testing.T) func(*testing.T) {
				kustomizations := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: fluxTool.crd}}
				l.patch(t, kustomizations, `{"metadata":{"labels":{"`+versionLabel+`":"v2.8.0"}}}`)
				return func(t *testing.T) {
					l.patch(t, kustomizations, `{"metadata":{"labels":{"`+versionLabel+`":"v2.9.1"}}}`)
				}
			},
		},
		{
			name: "an Argo CD whose CRD names no version is a warning, and the command still succeeds", check: "argo-cd", status: checkWarning,
			says: []string{"names no version"},
			breaks: func(t *testing.T) func(*testing.T) {
				applications := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: argoCDTool.crd}}
				l.patch(t, applications, `{"metadata":{"labels":{"`+versionLabel+`":null}}}`)
				return func(t *testing.T) { l.patch(t, applications, `{"metadata":{"labels":{"`+versionLabel+`":"v2.13.1"}}}`) }
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repair := tc.breaks(t)
			checks, err := l.check(t, "--config", l.configPath)
			got := checks[tc.check]
			if got.Status != tc.status || got.Fix == "" {
				t.Errorf("%s: %s: %s (fix: %q), want %s with a fix", tc.check, got.Status, got.Message, got.Fix, tc.status)
			}
			for _, s := range tc.says {
				if !strings.Contains(got.Message, s) {
					t.Errorf("%s says %q, want it to say %q", tc.check, got.Message, s)
				}
			}
			for name, res := range checks {
				if name != tc.check && res.Status != checkOK && !slices.Contains(tc.also, name) {
					t.Errorf("%s: %s: %s; only %s should be", name, res.Status, res.Message, tc.check)
				}
			}
			if wantErr := tc.status == checkFailed; (err != nil) != wantErr {
				t.Errorf("err = %v, want an error: %t", err, wantErr)
			}
			repair(t)
			if checks, err := l.check(t, "--config", l.configPath); err != nil || checks[tc.check].Status != checkOK {
				t.Fatalf("after the repair: err=%v %s: %+v", err, tc.check, checks[tc.check])
			}
		})
	}
}

// shippedCRD is this build's CRD name, ready to create.
func shippedCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := crd.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("this build ships no CRD %s", name)
	return nil
}

// admissionregistrationBinding is one of Landlord's ValidatingAdmissionPolicyBindings.
type admissionregistrationBinding struct{ name string }

func (b *admissionregistrationBinding) object() client.Object {
	for _, obj := range policy.Objects(policy.Operator{}) {
		if obj.GetName() == b.name && obj.GetObjectKind().GroupVersionKind().Kind == "ValidatingAdmissionPolicyBinding" {
			return obj
		}
	}
	panic("no binding " + b.name)
}

func (b *admissionregistrationBinding) delete(t *testing.T, c client.Client) {
	t.Helper()
	if err := c.Delete(context.Background(), b.object()); err != nil {
		t.Fatal(err)
	}
}

func (b *admissionregistrationBinding) restore(t *testing.T, c client.Client, cfg config.Config) {
	t.Helper()
	for _, obj := range policy.Objects(policy.OperatorOf(cfg, "")) {
		if obj.GetName() == b.name && obj.GetObjectKind().GroupVersionKind().Kind == "ValidatingAdmissionPolicyBinding" {
			if err := c.Create(context.Background(), obj); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}
