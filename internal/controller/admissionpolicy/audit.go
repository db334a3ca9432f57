package admissionpolicy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/internal/resources"
)

// The audit lists Services, Ingresses, routes (HTTPRoutes, GRPCRoutes, TLSRoutes), NetworkPolicies
// and pods in every namespace (tenants' are not in the cache) and deletes those that reach across
// tenants; it reads the tenant namespaces and the Tenants to report on. The grants are the ones
// the component kinds and the domain handover already need, but for pods and tenants' own
// NetworkPolicies, which the audit alone lists and deletes one by one.
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list
// +kubebuilder:rbac:groups="",resources=services,verbs=list;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=list;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=list;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes;grpcroutes;tlsroutes,verbs=list;delete
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants,verbs=get

// ReasonPolicyViolation: the policy audit found an object in a tenant namespace that breaks an
// isolation policy (created while the policy was absent); the action says whether it was
// deleted or reported.
const ReasonPolicyViolation = "PolicyViolation"

// auditedPolicies are the policies whose absence lets in objects the audit looks for: when one
// of them, or its binding, has to be created or repaired, the audit runs again.
var auditedPolicies = map[string]bool{
	policy.ServiceExposure: true, policy.IngressHosts: true, policy.RouteHostnames: true,
	policy.IngressClasses: true, policy.IngressAnnotations: true, policy.NodePool: true,
	policy.NetworkPolicyPeers: true,
}

// auditPageSize bounds each list of the audit, so a large fleet is read in pages rather than in
// one response held whole by the API server and the operator.
const auditPageSize = 500

// policyAuditFindings counts objects found breaking a policy, by policy and by what was done.
// No tenant label: the events on each Tenant name the objects.
var policyAuditFindings = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "landlord_policy_audit_findings_total",
	Help: "Objects in tenant namespaces the policy audit found breaking an isolation policy (created while the policy was absent), by policy and action (Delete, Report); an object reported and kept counts again at each audit.",
}, []string{"policy", "action"})

// policyAudits counts completed audits: one at each start, two after each gap in the policies.
var policyAudits = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "landlord_policy_audits_total",
	Help: "Audits of tenant namespaces for objects breaking an isolation policy that ran to the end: one at each start of the operator, two after each time the policies were missing.",
})

func init() {
	metrics.Registry.MustRegister(policyAuditFindings, policyAudits)
}

// Auditor finds what got into tenant namespaces while Landlord's admission policies were
// absent. The policies judge requests only: an ExternalName Service, an Ingress for another
// tenant's host, for another controller's class or injecting a snippet into the shared ingress
// controller, created in the gap (policies deleted by hand, a `kubectl delete -k`, a fresh
// install over existing tenant namespaces) outlives their return. The auditor judges each such
// object by the policy's rule, reports it on its Tenant and, with the Delete action, deletes
// those that reach across tenants.
type Auditor struct {
	// Client deletes; APIReader lists, since tenants' own objects are not in the cache.
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Action is isolation.audit.
	Action config.AuditAction
	// Network is what tenants' own NetworkPolicies may name (policy.Operator.Network).
	Network policy.NetworkBounds
}

// tenantNamespace is what the audit needs of a tenant namespace: what its annotations allow, as
// the policies read them.
type tenantNamespace struct {
	name    string
	tenant  string
	domains []string
	// classes are the Ingress classes its Ingresses may name; none means any.
	classes []string
	// pool is the node pool its pods run on, "" for none.
	pool string
	// moving: the tenant's pool changed and its pods placed for the old one are not deleted yet;
	// the tenant controller deletes them all (see movePods, in tenant/workloads), so the audit
	// leaves them alone.
	moving bool
}

// tenantNamespaceOf reads what the policies read of a tenant namespace.
func tenantNamespaceOf(ns client.Object) tenantNamespace {
	return tenantNamespace{
		name:    ns.GetName(),
		tenant:  ns.GetLabels()[tenancyv1alpha1.TenantLabel],
		domains: annotationList(ns.GetAnnotations()[tenancyv1alpha1.DomainsAnnotation]),
		classes: annotationList(ns.GetAnnotations()[tenancyv1alpha1.IngressClassesAnnotation]),
		pool:    ns.GetLabels()[tenancyv1alpha1.NodePoolLabel],
		moving:  podsPool(ns) != ns.GetLabels()[tenancyv1alpha1.NodePoolLabel],
	}
}

// podsPool is resources.PodsPool for a namespace read as metadata: the pool its pods were placed
// on.
func podsPool(ns client.Object) string {
	if pool, ok := ns.GetAnnotations()[tenancyv1alpha1.PodsPoolAnnotation]; ok {
		return pool
	}
	return ns.GetLabels()[tenancyv1alpha1.NodePoolLabel]
}

// stillRunning is whether an object may still be serving: not being deleted, or, for a pod, being
// deleted with longer to stop than Landlord gives the pods it deletes (a pod may ask for a year,
// and keep running on the pool meanwhile).
func stillRunning(obj client.Object) bool {
	if obj.GetDeletionTimestamp() == nil {
		return true
	}
	_, pod := obj.(*corev1.Pod)
	return pod && ptr.Deref(obj.GetDeletionGracePeriodSeconds(), 0) > resources.PodStopGracePeriodSeconds
}

// nodePools maps every node to its pool ("" for the shared nodes).
func (a *Auditor) nodePools(ctx context.Context) (map[string]string, error) {
	pools := map[string]string{}
	err := a.listPages(ctx, func() client.ObjectList {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
		return l
	}, func(obj client.Object) error {
		pools[obj.GetName()] = obj.GetLabels()[tenancyv1alpha1.NodePoolLabel]
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	return pools, nil
}

// judgeObject applies to obj, in the namespace ns, the policies that judge its kind. nodePools
// maps the nodes to their pools, for pods already bound to one; nil judges pods by their spec
// alone. bounds are what tenants' own NetworkPolicies may name.
func judgeObject(ns tenantNamespace, obj client.Object, nodePools map[string]string, bounds policy.NetworkBounds) []auditFinding {
	switch o := obj.(type) {
	case *networkingv1.NetworkPolicy:
		return judgeNetworkPolicy(o, ns.name, bounds)
	case *corev1.Service:
		return judgeService(o)
	case *networkingv1.Ingress:
		return judgeIngress(o, ns)
	case *unstructured.Unstructured:
		return judgeRoute(o, ns.domains)
	case *corev1.Pod:
		if ns.moving {
			return nil
		}
		return judgePod(o, ns.pool, nodePools)
	}
	return nil
}

// Audit judges every Service, Ingress, route, NetworkPolicy and pod in tenant namespaces, and acts on each that
// breaks a policy.
func (a *Auditor) Audit(ctx context.Context) error { return a.audit(ctx, true) }

// audit is Audit, with pods only when withPods: listing every pod of the cluster is the audit's
// largest read, and only the node pool policy judges them.
func (a *Auditor) audit(ctx context.Context, withPods bool) error {
	namespaces, err := a.tenantNamespaces(ctx)
	if err != nil || len(namespaces) == 0 {
		return err
	}
	var nodePools map[string]string
	judge := func(namespaces map[string]tenantNamespace, obj client.Object) []auditFinding {
		ns, ok := namespaces[obj.GetNamespace()]
		if !ok || !stillRunning(obj) {
			return nil
		}
		return judgeObject(ns, obj, nodePools, a.Network)
	}
	// Typed list items carry no kind; the events and logs name it.
	var suspects []client.Object
	visit := func(kind schema.GroupVersionKind) func(obj client.Object) error {
		return func(obj client.Object) error {
			if len(judge(namespaces, obj)) == 0 {
				return nil
			}
			if !kind.Empty() {
				obj.GetObjectKind().SetGroupVersionKind(kind)
			}
			suspects = append(suspects, obj)
			return nil
		}
	}
	// Routes first: finding their kinds may fail, and nothing read before would then count.
	err = resources.EachRouteKind(func(gvk schema.GroupVersionKind) error {
		return a.listPages(ctx, func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk)
			return l
		}, visit(schema.GroupVersionKind{}))
	})
	if err != nil {
		return fmt.Errorf("auditing routes: %w", err)
	}
	if err := a.listPages(ctx, func() client.ObjectList { return &corev1.ServiceList{} }, visit(corev1.SchemeGroupVersion.WithKind("Service"))); err != nil {
		return fmt.Errorf("auditing Services: %w", err)
	}
	if err := a.listPages(ctx, func() client.ObjectList { return &networkingv1.IngressList{} }, visit(networkingv1.SchemeGroupVersion.WithKind("Ingress"))); err != nil {
		return fmt.Errorf("auditing Ingresses: %w", err)
	}
	if err := a.listPages(ctx, func() client.ObjectList { return &networkingv1.NetworkPolicyList{} }, visit(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"))); err != nil {
		return fmt.Errorf("auditing NetworkPolicies: %w", err)
	}
	if withPods {
		// A pod bound to a node is judged by the node's pool too: one created with spec.nodeName
		// skips the scheduler, and the taint that keeps others off a pool.
		if nodePools, err = a.nodePools(ctx); err != nil {
			return err
		}
		if err := a.listPages(ctx, func() client.ObjectList { return &corev1.PodList{} }, visit(corev1.SchemeGroupVersion.WithKind("Pod"))); err != nil {
			return fmt.Errorf("auditing pods: %w", err)
		}
	}
	if len(suspects) == 0 {
		return nil
	}
	// Judged again by what the namespaces allow now, read after every object: a domain or an
	// Ingress class granted after the first reading, and an object made for it since, must not
	// be taken for a breach.
	if namespaces, err = a.tenantNamespaces(ctx); err != nil {
		return err
	}
	for _, obj := range suspects {
		if findings := judge(namespaces, obj); len(findings) > 0 {
			if err := a.act(ctx, namespaces[obj.GetNamespace()], obj, findings); err != nil {
				return err
			}
		}
	}
	return nil
}

// tenantNamespaces maps each tenant namespace to its tenant and what it allows.
func (a *Auditor) tenantNamespaces(ctx context.Context) (map[string]tenantNamespace, error) {
	selector, err := metav1.LabelSelectorAsSelector(policy.TenantNamespaces())
	if err != nil {
		return nil, err
	}
	namespaces := map[string]tenantNamespace{}
	err = a.listPages(ctx, func() client.ObjectList {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
		return l
	}, func(obj client.Object) error {
		namespaces[obj.GetName()] = tenantNamespaceOf(obj)
		return nil
	}, client.MatchingLabelsSelector{Selector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing tenant namespaces: %w", err)
	}
	return namespaces, nil
}

// listPages lists from the API server a page at a time, calling visit with every item.
func (a *Auditor) listPages(ctx context.Context, newList func() client.ObjectList, visit func(client.Object) error, opts ...client.ListOption) error {
	cont := ""
	for {
		list := newList()
		if err := a.APIReader.List(ctx, list, append(opts, client.Limit(auditPageSize), client.Continue(cont))...); err != nil {
			return err
		}
		err := meta.EachListItem(list, func(o runtime.Object) error { return visit(o.(client.Object)) })
		if err != nil {
			return err
		}
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
}

// act deletes the object when it reaches across tenants and the action is Delete, and reports
// it on its Tenant either way.
func (a *Auditor) act(ctx context.Context, ns tenantNamespace, obj client.Object, findings []auditFinding) error {
	action := config.AuditReport
	if a.Action == config.AuditDelete && crossesTenants(findings) {
		action = config.AuditDelete
	}
	ref := fmt.Sprintf("%s %s/%s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName())
	if action == config.AuditDelete {
		// With a UID precondition: one replaced since the list was created while the policies
		// are back, and they judged it.
		opts := []client.DeleteOption{client.Preconditions{UID: ptr.To(obj.GetUID())}}
		if _, pod := obj.(*corev1.Pod); pod {
			// Not the pod's own grace period, which it chose while the policy was absent.
			opts = append(opts, client.GracePeriodSeconds(resources.PodStopGracePeriodSeconds))
		}
		err := a.Client.Delete(ctx, obj, opts...)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("deleting %s: %w", ref, err)
		}
	}
	var broken []string
	for _, f := range findings {
		policyAuditFindings.WithLabelValues(f.Policy, string(action)).Inc()
		broken = append(broken, f.Policy+": "+strings.Join(f.Rules, "; "))
	}
	verb := "found"
	if action == config.AuditDelete {
		verb = "deleted"
	}
	note := fmt.Sprintf("%s %s, created while Landlord's admission policies were absent: it breaks %s", verb, ref, strings.Join(broken, "; "))
	log.FromContext(ctx).Info("policy audit: "+note, append(writes.ObjectLogKeys(obj), "tenant", ns.tenant, "action", action)...)
	tenant := &tenancyv1alpha1.Tenant{}
	if ns.tenant == "" || a.Recorder == nil {
		return nil
	}
	if err := a.APIReader.Get(ctx, client.ObjectKey{Name: ns.tenant}, tenant); err != nil {
		// A namespace whose Tenant is gone: the log and the count are the report.
		return client.IgnoreNotFound(err)
	}
	a.Recorder.Eventf(tenant, obj, corev1.EventTypeWarning, ReasonPolicyViolation, string(action), "%s", writes.Truncate(note, maxEventNote))
	return nil
}

// maxEventNote is the longest note an event may carry.
const maxEventNote = 1024

// crossesTenants is whether any finding reaches across tenants.
func crossesTenants(findings []auditFinding) bool {
	for _, f := range findings {
		if f.Crosses {
			return true
		}
	}
	return false
}

// policyAuditDue is how many audits follow a gap in the policies: one at once, and one after
// policyAuditSettle, since the API server enforces a policy only a moment after it is written
// and an object created in that moment would otherwise slip past both policy and audit.
const policyAuditDue = 2

// policyAuditSettle is how long after a gap the second audit runs: well past the moment the API
// server takes to load a policy.
const policyAuditSettle = 10 * time.Second

// auditSchedule says when the policy controller audits tenant namespaces.
type auditSchedule struct {
	started bool
	// due is how many audits are still to run, the next not before next.
	due  int
	next time.Time
	// pods: the audits due judge pods, which only the node pool policy's absence lets in.
	pods bool
}

// gap schedules the audits that follow the policy named created or repaired: one at once, one
// after policyAuditSettle.
func (s *auditSchedule) gap(name string) {
	s.due, s.next = policyAuditDue, time.Time{}
	s.pods = s.pods || name == policy.NodePool
}

// auditTenantNamespaces runs the audit when one is due, once the policies are all applied.
func (r *Reconciler) auditTenantNamespaces(ctx context.Context) (ctrl.Result, error) {
	s := &r.audits
	defer func() { r.settled.Store(s.started && s.due == 0) }()
	if r.Auditor == nil {
		return ctrl.Result{}, nil
	}
	// At start-up every policy may have been absent while the operator was not running, however
	// the apply found them: one audit, and two if they were missing until now.
	if !s.started {
		s.started = true
		s.due = max(s.due, 1)
		s.pods = true
	}
	if s.due == 0 {
		return ctrl.Result{}, nil
	}
	// The second audit waits for its time, whatever event brings the reconcile sooner.
	if wait := time.Until(s.next); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.Auditor.audit(ctx, s.pods); err != nil {
		return ctrl.Result{}, fmt.Errorf("auditing tenant namespaces: %w", err)
	}
	policyAudits.Inc()
	if s.due--; s.due > 0 {
		s.next = time.Now().Add(policyAuditSettle)
		return ctrl.Result{RequeueAfter: policyAuditSettle}, nil
	}
	s.pods = false
	return ctrl.Result{}, nil
}
