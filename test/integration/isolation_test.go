package integration

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/test/testenv"
)

// Landlord's admission policies, evaluated by the real API server against a tenant admin's
// requests: pods stay on their tenant's node pool, nothing is exposed outside the ingress,
// Ingresses serve only the tenant's domains, Pod Security Admission holds, and none of it can be
// changed by the tenant. Namespaces that are not tenants' are untouched.
func TestTenantIsolationPolicies(t *testing.T) {
	createTenant(t, newTenant("iso-a", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.NodePool = "pool-a"
		t.Spec.Domains = []tenancyv1alpha1.Domain{"iso-a.example.com", "*.apps.iso-a.example.com"}
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "Group", Name: "oidc:iso-a.admins"}}
	}))
	createTenant(t, newTenant("iso-b", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"iso-b.example.com"}
	}))
	const ns = "tenant-iso-a"
	ctx := context.Background()
	admin := impersonate(t, "alice", "oidc:iso-a.admins")
	waitForPolicies(t, admin, ns)

	t.Run("a pod without a nodeSelector is placed on the tenant's node pool", func(t *testing.T) {
		g := NewWithT(t)
		pod := restrictedPod(ns, "placed")
		g.Expect(admin.Create(ctx, pod)).To(Succeed())
		g.Expect(pod.Spec.NodeSelector).To(Equal(map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-a"}))
		g.Expect(pod.Spec.Tolerations).To(ContainElement(poolToleration("pool-a")))
		g.Expect(countPoolTolerations(pod)).To(Equal(1))
	})

	t.Run("a pod with a nodeSelector and tolerations of its own keeps them and gains the pool's", func(t *testing.T) {
		g := NewWithT(t)
		pod := restrictedPod(ns, "own-selector")
		pod.Spec.NodeSelector = map[string]string{"disktype": "ssd"}
		gpu := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
		pod.Spec.Tolerations = []corev1.Toleration{gpu}
		g.Expect(admin.Create(ctx, pod)).To(Succeed())
		g.Expect(pod.Spec.NodeSelector).To(Equal(map[string]string{"disktype": "ssd", tenancyv1alpha1.NodePoolLabel: "pool-a"}))
		g.Expect(pod.Spec.Tolerations).To(ContainElements(gpu, poolToleration("pool-a")))
		g.Expect(countPoolTolerations(pod)).To(Equal(1))
	})

	t.Run("a pod that already selects and tolerates its pool is left as it is", func(t *testing.T) {
		g := NewWithT(t)
		pod := restrictedPod(ns, "already-placed")
		pod.Spec.NodeSelector = map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-a"}
		pod.Spec.Tolerations = []corev1.Toleration{poolToleration("pool-a")}
		g.Expect(admin.Create(ctx, pod)).To(Succeed())
		g.Expect(pod.Spec.NodeSelector).To(Equal(map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-a"}))
		g.Expect(countPoolTolerations(pod)).To(Equal(1))
	})

	t.Run("a pod of a tenant without a node pool is left to the scheduler", func(t *testing.T) {
		g := NewWithT(t)
		pod := restrictedPod("tenant-iso-b", "unplaced")
		g.Expect(k8s.Create(ctx, pod)).To(Succeed())
		g.Expect(pod.Spec.NodeSelector).To(BeEmpty())
		g.Expect(countPoolTolerations(pod)).To(BeZero())
	})

	t.Run("a pod of a tenant without a node pool asking for one is refused, saying what to do", func(t *testing.T) {
		err := k8s.Create(ctx, restrictedPod("tenant-iso-b", "wants-pool-a", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-a"}
		}))
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring(
			"pods in tenant-iso-b run on no dedicated node pool: remove the nodeSelector tenancy.landlord.dev/node-pool=pool-a")))
	})

	refused := []struct {
		name    string
		obj     client.Object
		message string
	}{
		{"a pod asking for another node pool", restrictedPod(ns, "pool-b", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-b"}
		}), "pods in tenant-iso-a run on node pool pool-a, not pool-b: remove the nodeSelector tenancy.landlord.dev/node-pool or set it to pool-a"},
		{"a pod tolerating another node pool", restrictedPod(ns, "tolerates-b", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{poolToleration("pool-b")}
		}), "tolerate tenancy.landlord.dev/node-pool=pool-a:NoSchedule only"},
		{"a pod tolerating every taint", restrictedPod(ns, "tolerates-all", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}), "may not tolerate every taint"},
		{"a pod naming its node", restrictedPod(ns, "node-name", func(p *corev1.Pod) { p.Spec.NodeName = "node-of-pool-b" }),
			"are placed by the scheduler: remove spec.nodeName"},
		{"a NodePort Service", service(ns, "node-port", corev1.ServiceTypeNodePort),
			"Services of type NodePort are not allowed in tenant-iso-a: use type ClusterIP"},
		{"a LoadBalancer Service", service(ns, "load-balancer", corev1.ServiceTypeLoadBalancer),
			"Services of type LoadBalancer are not allowed in tenant-iso-a: use type ClusterIP"},
		{"a Service with external IPs", func() client.Object {
			s := service(ns, "external-ips", corev1.ServiceTypeClusterIP)
			s.Spec.ExternalIPs = []string{"203.0.113.10"}
			return s
		}(), "may not set spec.externalIPs (203.0.113.10)"},
		{"an Ingress for another tenant's host", ingress(ns, "neighbour", "iso-b.example.com"),
			"Ingress hosts iso-b.example.com are not among the domains of tenant-iso-a (iso-a.example.com, *.apps.iso-a.example.com)"},
		{"an Ingress for a host two labels under an allowed wildcard", ingress(ns, "too-deep", "a.b.apps.iso-a.example.com"),
			"Ingress hosts a.b.apps.iso-a.example.com are not among the domains"},
		{"an Ingress for a wider wildcard than the one allowed", ingress(ns, "wider", "*.iso-a.example.com"),
			"Ingress hosts *.iso-a.example.com are not among the domains"},
		{"an Ingress with another tenant's host in its TLS section only", func() client.Object {
			i := ingress(ns, "tls-neighbour", "iso-a.example.com")
			i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"iso-a.example.com", "iso-b.example.com"}, SecretName: "tls"}}
			return i
		}(), "Ingress hosts iso-b.example.com are not among the domains"},
		{"an Ingress rule without a host", ingress(ns, "any-host", ""),
			"every rule of an Ingress in tenant-iso-a must name a host"},
		{"an Ingress with a default backend", func() client.Object {
			i := ingress(ns, "default-backend", "iso-a.example.com")
			i.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
			return i
		}(), "may not set spec.defaultBackend"},
		{"a privileged pod", restrictedPod(ns, "privileged", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}), `privileged (container "app" must not set securityContext.privileged=true)`},
		{"a pod on the host network", restrictedPod(ns, "host-network", func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			`violates PodSecurity "restricted:` + opConfig.Defaults.PodSecurityVersion + `": host namespaces (hostNetwork=true)`},
		{"a pod in the host PID namespace", restrictedPod(ns, "host-pid", func(p *corev1.Pod) { p.Spec.HostPID = true }),
			`violates PodSecurity "restricted:` + opConfig.Defaults.PodSecurityVersion + `": host namespaces (hostPID=true)`},
		{"a pod mounting a host path", restrictedPod(ns, "host-path", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}), `violates PodSecurity "restricted:` + opConfig.Defaults.PodSecurityVersion + `": restricted volume types (volume "root" uses restricted volume type "hostPath")`},
		{"a pod running as root", restrictedPod(ns, "root", func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = nil
			p.Spec.SecurityContext.RunAsUser = ptr.To[int64](0)
		}), `runAsUser=0 (pod must not set runAsUser=0)`},
	}
	for _, tc := range refused {
		t.Run(tc.name+" is refused, saying what to do", func(t *testing.T) {
			err := admin.Create(ctx, tc.obj)
			NewWithT(t).Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			NewWithT(t).Expect(err.Error()).To(ContainSubstring(tc.message))
		})
	}

	admitted := []struct {
		name string
		obj  client.Object
	}{
		{"a pod meeting the restricted Pod Security Standard", restrictedPod(ns, "compliant")},
		{"a ClusterIP Service", service(ns, "web", corev1.ServiceTypeClusterIP)},
		{"an Ingress for an exact tenant domain", ingress(ns, "exact", "iso-a.example.com")},
		{"an Ingress for a host under a tenant wildcard", ingress(ns, "wildcard", "shop.apps.iso-a.example.com")},
		{"an Ingress for the tenant wildcard itself", ingress(ns, "wildcard-itself", "*.apps.iso-a.example.com")},
		{"an Ingress with TLS for tenant hosts", func() client.Object {
			i := ingress(ns, "tls", "iso-a.example.com")
			i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"iso-a.example.com", "api.apps.iso-a.example.com"}, SecretName: "tls"}}
			return i
		}()},
	}
	for _, tc := range admitted {
		t.Run(tc.name+" is admitted", func(t *testing.T) {
			NewWithT(t).Expect(admin.Create(ctx, tc.obj)).To(Succeed())
		})
	}

	// An Ingress for a domain its tenant no longer holds must not be edited
	// at all, annotations included (a permanent-redirect annotation would keep taking the host's
	// traffic); only what deleting it needs stays allowed.
	t.Run("after a tenant loses a domain, its Ingress for it may only be deleted and its finalizers removed", func(t *testing.T) {
		g := NewWithT(t)
		ing := &networkingv1.Ingress{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "exact"}, ing)).To(Succeed())
		// A controller cleaning up after the Ingress adds its finalizer while the domain is held
		// (tenant users may not: landlord-serving-finalizers).
		g.Expect(k8s.Patch(ctx, ing, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/cleanup"]}}`)))).To(Succeed())
		setDomains := func(domains string) {
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "iso-a"}, tenant)).To(Succeed())
			g.Expect(k8s.Patch(ctx, tenant, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"domains":`+domains+`}}`)))).To(Succeed())
		}
		setDomains(`["elsewhere.example.com"]`)
		t.Cleanup(func() {
			setDomains(`["iso-a.example.com","*.apps.iso-a.example.com"]`)
			waitReady(t, "iso-a")
		})
		g.Eventually(func() error {
			return admin.Create(ctx, ingress(ns, "after-change", "iso-a.example.com"), client.DryRunAll)
		}).WithTimeout(timeout).Should(MatchError(ContainSubstring("(elsewhere.example.com)")))

		// (Another finalizer is refused whatever the domains: TestATenantsFinalizerHoldsNoHandover.)
		refusedUpdates := []struct {
			name   string
			change func(*networkingv1.Ingress)
		}{
			{"a redirect annotation", func(i *networkingv1.Ingress) {
				i.Annotations = map[string]string{"nginx.ingress.kubernetes.io/permanent-redirect": "https://evil.example.net"}
			}},
			{"a label", func(i *networkingv1.Ingress) { i.Labels = map[string]string{"team": "web"} }},
			{"a changed path", func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths[0].Path = "/v2" }},
		}
		for _, tc := range refusedUpdates {
			t.Run("an update adding "+tc.name+" is refused", func(t *testing.T) {
				g := NewWithT(t)
				live := &networkingv1.Ingress{}
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ing), live)).To(Succeed())
				tc.change(live)
				err := admin.Update(ctx, live, client.DryRunAll)
				g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
				g.Expect(err.Error()).To(ContainSubstring("Ingress hosts iso-a.example.com are not among the domains of tenant-iso-a"))
			})
		}

		t.Run("it is deleted, and its finalizer removed, by the tenant", func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(admin.Delete(ctx, ing)).To(Succeed())
			live := &networkingv1.Ingress{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ing), live)).To(Succeed())
			g.Expect(live.DeletionTimestamp).NotTo(BeNil(), "the finalizer holds it")
			live.Finalizers = nil
			g.Expect(admin.Update(ctx, live)).To(Succeed(), "removing a finalizer is what deleting needs")
			err := admin.Get(ctx, client.ObjectKeyFromObject(ing), live)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "expected NotFound, got %v", err)
		})
	})

	forbidden := []struct {
		name string
		do   func() error
	}{
		{"relabeling its namespace onto another node pool", func() error {
			return admin.Patch(ctx, named(&corev1.Namespace{}, "", ns), client.RawPatch(types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"`+tenancyv1alpha1.NodePoolLabel+`":"pool-b"}}}`)))
		}},
		{"adding a domain to its namespace", func() error {
			return admin.Patch(ctx, named(&corev1.Namespace{}, "", ns), client.RawPatch(types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"`+tenancyv1alpha1.DomainsAnnotation+`":"iso-b.example.com"}}}`)))
		}},
		{"deleting a validating policy", func() error {
			return admin.Delete(ctx, named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.ServiceExposure))
		}},
		{"switching a binding to warn only", func() error {
			return admin.Patch(ctx, named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", policy.NodePool),
				client.RawPatch(types.MergePatchType, []byte(`{"spec":{"validationActions":["Warn"]}}`)))
		}},
		{"deleting the placement binding", func() error {
			return admin.Delete(ctx, named(&admissionregistrationv1.MutatingAdmissionPolicyBinding{}, "", policy.NodePoolPlacement))
		}},
	}
	for _, tc := range forbidden {
		t.Run("a tenant admin "+tc.name+" is forbidden", func(t *testing.T) {
			err := tc.do()
			NewWithT(t).Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
		})
	}
}

// Outside tenant namespaces the policies do nothing: the rest of the cluster never depends on
// them and never fails because of them.
func TestIsolationPoliciesLeaveOtherNamespacesAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	createTenant(t, newTenant("iso-scope", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.NodePool = "pool-scope"
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "scope-admin"}}
	}))
	waitForPolicies(t, impersonate(t, "scope-admin"), "tenant-iso-scope")
	const ns = "iso-platform"
	g := NewWithT(t)
	g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, named(&corev1.Namespace{}, "", ns))
		waitNamespaceGone(t, ns)
	})

	t.Run("a NodePort Service is admitted", func(t *testing.T) {
		NewWithT(t).Expect(k8s.Create(ctx, service(ns, "node-port", corev1.ServiceTypeNodePort))).To(Succeed())
	})
	t.Run("a pod gets no nodeSelector or toleration and may name any pool", func(t *testing.T) {
		g := NewWithT(t)
		plain := restrictedPod(ns, "plain")
		g.Expect(k8s.Create(ctx, plain)).To(Succeed())
		g.Expect(plain.Spec.NodeSelector).To(BeEmpty())
		g.Expect(countPoolTolerations(plain)).To(BeZero())
		elsewhere := restrictedPod(ns, "elsewhere", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{tenancyv1alpha1.NodePoolLabel: "pool-scope"}
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		})
		g.Expect(k8s.Create(ctx, elsewhere)).To(Succeed())
	})
	t.Run("an Ingress for any host is admitted", func(t *testing.T) {
		NewWithT(t).Expect(k8s.Create(ctx, ingress(ns, "anything", "iso-a.example.com"))).To(Succeed())
	})
}

// The operator owns its policies outright: whoever deletes one, edits one or strips its label,
// it is back as shipped in config/policies within seconds, and in force again.
func TestIsolationPoliciesHealThemselves(t *testing.T) {
	ctx := context.Background()
	shipped := shippedPolicies(t)
	createTenant(t, newTenant("iso-heal", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.NodePool = "pool-heal"
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "heal-admin"}}
	}))
	const ns = "tenant-iso-heal"
	admin := impersonate(t, "heal-admin")
	waitForPolicies(t, admin, ns)
	mergePatch := func(patch string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(patch)) }

	cases := []struct {
		name   string
		obj    client.Object
		damage func(obj client.Object) error
		// changesSpec is whether the damage leaves a spec that differs from the shipped one.
		changesSpec bool
	}{
		{"a deleted validating policy",
			named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.ServiceExposure),
			func(obj client.Object) error { return k8s.Delete(ctx, obj) }, false},
		{"a validating policy stripped of its managed label",
			named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.IngressHosts),
			func(obj client.Object) error {
				return k8s.Patch(ctx, obj, mergePatch(`{"metadata":{"labels":{"`+tenancyv1alpha1.ManagedByLabel+`":null}}}`))
			}, false},
		{"a validating policy given a match condition that switches it off",
			named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.NodePool),
			func(obj client.Object) error {
				p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
				p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: "never", Expression: "false"})
				return k8s.Update(ctx, p)
			}, true},
		{"a validating binding switched to warn only",
			named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", policy.ServiceExposure),
			func(obj client.Object) error {
				return k8s.Patch(ctx, obj, mergePatch(`{"spec":{"validationActions":["Warn"]}}`))
			}, true},
		{"a deleted mutating binding",
			named(&admissionregistrationv1.MutatingAdmissionPolicyBinding{}, "", policy.NodePoolPlacement),
			func(obj client.Object) error { return k8s.Delete(ctx, obj) }, false},
		{"a mutating policy left with one of its mutations",
			named(&admissionregistrationv1.MutatingAdmissionPolicy{}, "", policy.NodePoolPlacement),
			func(obj client.Object) error {
				p := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
				p.Spec.Mutations = p.Spec.Mutations[:1]
				return k8s.Update(ctx, p)
			}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is restored and in force again", func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tc.obj), tc.obj)).To(Succeed())
			want, have := enforcedSpecs(g, shipped, tc.obj)
			g.Expect(have).To(BeComparableTo(want), "%T %s is not as shipped before the damage", tc.obj, tc.obj.GetName())
			g.Expect(tc.damage(tc.obj)).To(Succeed())
			if tc.changesSpec {
				// The write's answer is the damaged object, whatever the operator does next.
				want, have := enforcedSpecs(g, shipped, tc.obj)
				g.Expect(have).NotTo(BeComparableTo(want), "the damage left %T %s as shipped", tc.obj, tc.obj.GetName())
			}
			// An update or patch leaves the damaged version in tc.obj, a delete the last one
			// before it: either way a repair is a newer version.
			damaged := tc.obj.GetResourceVersion()
			g.Eventually(func(g Gomega) {
				live := tc.obj.DeepCopyObject().(client.Object)
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tc.obj), live)).To(Succeed())
				g.Expect(live.GetResourceVersion()).NotTo(Equal(damaged))
				g.Expect(live.GetLabels()).To(HaveKeyWithValue(tenancyv1alpha1.ManagedByLabel, tenancyv1alpha1.ManagedByValue))
				want, have := enforcedSpecs(g, shipped, live)
				g.Expect(have).To(BeComparableTo(want), "%T %s is not as shipped", live, live.GetName())
			}).WithTimeout(timeout).Should(Succeed())
			waitForPolicies(t, admin, ns)
		})
	}

	t.Run("restored policies settle: the operator sends nothing more", func(t *testing.T) {
		admission := func() int {
			n := 0
			for key, count := range op.Requests.Snapshot() {
				if strings.Contains(key, "admissionpolic") {
					n += count
				}
			}
			return n
		}
		g := NewWithT(t)
		var last int
		g.Eventually(func() bool {
			prev := last
			last = admission()
			return prev == last
		}).WithTimeout(timeout).WithPolling(time.Second).Should(BeTrue())
		g.Consistently(admission).WithTimeout(3 * time.Second).Should(Equal(last))
	})
}

// shippedPolicies reads the policies and bindings config/policies ships: the reviewed file of
// what a cluster must enforce, and what the operator keeps in place.
func shippedPolicies(t *testing.T) map[string]client.Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "policies", "policies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string]client.Object{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var typeMeta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &typeMeta); err != nil {
			t.Fatal(err)
		}
		var obj client.Object
		switch typeMeta.Kind {
		case "":
			continue // the header comment
		case "ValidatingAdmissionPolicy":
			obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		case "ValidatingAdmissionPolicyBinding":
			obj = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		case "MutatingAdmissionPolicy":
			obj = &admissionregistrationv1.MutatingAdmissionPolicy{}
		case "MutatingAdmissionPolicyBinding":
			obj = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		default:
			t.Fatalf("config/policies ships a %s", typeMeta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatal(err)
		}
		shipped[typeMeta.Kind+"/"+obj.GetName()] = obj
	}
	// As many as the builders make: a file that lost one would leave it unchecked here.
	if want := len(policy.Objects(policy.Operator{})); len(shipped) != want {
		t.Fatalf("config/policies ships %d policies and bindings, want the %d internal/policy builds", len(shipped), want)
	}
	return shipped
}

// enforcedSpecs returns the spec of the shipped object of live's kind and name, and live's own
// spec, each with the API server's defaults where the shipped file leaves a field unset.
// Everything in a spec decides what the API server enforces, so the whole of it must match.
func enforcedSpecs(g Gomega, shipped map[string]client.Object, live client.Object) (want, have any) {
	gvk, err := apiutil.GVKForObject(live, k8s.Scheme())
	g.Expect(err).NotTo(HaveOccurred())
	golden, ok := shipped[gvk.Kind+"/"+live.GetName()]
	g.Expect(ok).To(BeTrue(), "Landlord ships no %T %s", live, live.GetName())
	return enforcedSpec(golden), enforcedSpec(live)
}

func enforcedSpec(obj client.Object) any {
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		s := o.Spec.DeepCopy()
		s.MatchConstraints = withServerDefaults(s.MatchConstraints)
		return *s
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		s := o.Spec.DeepCopy()
		s.MatchResources = withServerDefaults(s.MatchResources)
		return *s
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		s := o.Spec.DeepCopy()
		s.MatchConstraints = withServerDefaults(s.MatchConstraints)
		return *s
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		s := o.Spec.DeepCopy()
		s.MatchResources = withServerDefaults(s.MatchResources)
		return *s
	}
	return nil
}

// withServerDefaults fills in what the API server sets on match resources left unset: every
// namespace, every object, equivalent versions of the matched resources.
func withServerDefaults(m *admissionregistrationv1.MatchResources) *admissionregistrationv1.MatchResources {
	if m == nil {
		return nil
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
	return m
}

// waitForPolicies waits until every policy is in force in the namespace: the API server takes a
// moment to act on a policy after it is written. The probes are dry runs, so nothing is created
// whether or not a policy is in force yet.
func waitForPolicies(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	NewWithT(t).Eventually(func(g Gomega) {
		for _, name := range []string{policy.NodePool, policy.ServiceExposure, policy.IngressHosts, policy.RouteHostnames} {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})).To(Succeed())
		}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: policy.NodePoolPlacement}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{})).To(Succeed())

		placed := restrictedPod(ns, "probe")
		g.Expect(c.Create(ctx, placed, client.DryRunAll)).To(Succeed())
		g.Expect(placed.Spec.NodeSelector).To(HaveKey(tenancyv1alpha1.NodePoolLabel), "the placement policy is not in force yet")
		g.Expect(countPoolTolerations(placed)).To(Equal(1), "the placement policy is not in force yet")
		for name, obj := range map[string]client.Object{
			policy.NodePool: restrictedPod(ns, "probe", func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{tenancyv1alpha1.NodePoolLabel: "no-such-pool"}
			}),
			policy.ServiceExposure: service(ns, "probe", corev1.ServiceTypeNodePort),
			policy.IngressHosts:    ingress(ns, "probe", "probe.invalid"),
		} {
			g.Expect(c.Create(ctx, obj, client.DryRunAll)).To(MatchError(ContainSubstring("ValidatingAdmissionPolicy '"+name+"'")), "%s is not in force yet", name)
		}
	}).WithTimeout(timeout).Should(Succeed())
}

// restrictedPod meets the restricted Pod Security Standard; mutate breaks it in one way.
func restrictedPod(namespace, name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	return testenv.RestrictedPod(namespace, name, mutate...)
}

func poolToleration(pool string) corev1.Toleration {
	return corev1.Toleration{Key: tenancyv1alpha1.NodePoolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}
}

func countPoolTolerations(p *corev1.Pod) int {
	n := 0
	for _, tol := range p.Spec.Tolerations {
		if tol.Key == tenancyv1alpha1.NodePoolLabel {
			n++
		}
	}
	return n
}

func service(namespace, name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
}

func ingress(namespace, name, host string) *networkingv1.Ingress {
	pathType := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &pathType,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
			}}}},
		}}},
	}
}
