package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// The raw-write baseline answers "how far is Landlord from what this control plane can do at
// all?": a plain client, with no cache, no reconcile and no client-side rate limit, creates
// exactly the objects Landlord wrote for a tenant (the same kinds, sizes, labels and owner
// references, copied from a tenant Landlord made and renamed), for N tenants, under the
// operator's identity so that the same admission policies judge every write. Then it writes a
// new value into each tenant's shared-secret copy, as a shared-secret change does. Landlord's
// times divided by these are how much of the control plane's capacity Landlord leaves unused.

// baseline is one raw-write run.
type baseline struct {
	// Concurrency is how many requests the client keeps in flight.
	Concurrency int `json:"concurrency"`
	// ObjectsPerTenant is what it creates per tenant: the Tenant itself and what Landlord wrote
	// for it.
	ObjectsPerTenant int             `json:"objectsPerTenant"`
	Create           baselineFigures `json:"create"`
	FanOut           baselineFigures `json:"fanOut"`
}

type baselineFigures struct {
	Seconds             float64        `json:"seconds"`
	Requests            testenv.Counts `json:"requests"`
	APIServerCPUSeconds float64        `json:"apiserverCPUSeconds"`
	EtcdCPUSeconds      float64        `json:"etcdCPUSeconds"`
}

// ownedKinds are the kinds Landlord writes into a tenant's namespace (the Namespace itself
// aside), in the order a plain client creates them.
var ownedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ResourceQuota"},
	{Version: "v1", Kind: "LimitRange"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Service"},
}

// tenantTemplate is what Landlord wrote for one tenant, as JSON with the server's fields
// (identity, versions, status, allocated addresses) taken out: the Tenant first, its Namespace
// second, then the rest.
type tenantTemplate struct {
	name    string
	uid     string
	objects [][]byte
	// sharedCopy indexes the shared secret's copy in objects, or is -1.
	sharedCopy int
}

// captureTenant reads back everything Landlord made for the tenant named name.
func captureTenant(ctx context.Context, c client.Client, nsName, name string) (*tenantTemplate, error) {
	t := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		return nil, err
	}
	tpl := &tenantTemplate{name: name, uid: string(t.UID), sharedCopy: -1}
	fresh := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: t.Name, Labels: t.Labels}, Spec: t.Spec}
	fresh.SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind("Tenant"))
	data, err := json.Marshal(fresh)
	if err != nil {
		return nil, err
	}
	tpl.objects = append(tpl.objects, data)
	ns := &unstructured.Unstructured{}
	ns.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	if err := c.Get(ctx, client.ObjectKey{Name: nsName}, ns); err != nil {
		return nil, err
	}
	owned := []*unstructured.Unstructured{ns}
	for _, gvk := range ownedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(nsName)); err != nil {
			return nil, err
		}
		for i := range list.Items {
			if ownedBy(&list.Items[i], t.UID) {
				owned = append(owned, &list.Items[i])
			}
		}
	}
	for _, obj := range owned {
		if obj.GetLabels()[tenancyv1alpha1.SharedCopyLabel] == "true" {
			tpl.sharedCopy = len(tpl.objects)
		}
		data, err := json.Marshal(asWritten(obj))
		if err != nil {
			return nil, err
		}
		tpl.objects = append(tpl.objects, data)
	}
	return tpl, nil
}

func ownedBy(obj *unstructured.Unstructured, uid types.UID) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == uid })
}

// asWritten takes out of obj what the API server added to what its writer sent.
func asWritten(obj *unstructured.Unstructured) map[string]any {
	out := obj.DeepCopy().Object
	md, _ := out["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"} {
		delete(md, k)
	}
	delete(out, "status")
	if obj.GetKind() == "Service" {
		spec, _ := out["spec"].(map[string]any)
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	}
	return out
}

// forTenant is the template's objects renamed for another tenant, whose UID is not known until
// its Tenant is created: uid stands in for it.
func (tpl *tenantTemplate) forTenant(name string) [][]byte {
	out := make([][]byte, len(tpl.objects))
	for i, data := range tpl.objects {
		out[i] = bytes.ReplaceAll(data, []byte(tpl.name), []byte(name))
	}
	return out
}

// runBaseline creates n tenants' objects with a plain client, then changes every tenant's
// shared-secret copy, and measures both. The Tenants are created as an administrator, as the
// benchmark creates Landlord's; what Landlord writes, as the operator.
func runBaseline(ctx context.Context, env *testenv.Env, tpl *tenantTemplate, prefix string, n, concurrency int) (*baseline, error) {
	plain := func(user string) (client.Client, error) {
		cfg := rest.CopyConfig(env.Admin)
		// No client-side rate limit: the server's limits are what is measured.
		cfg.QPS, cfg.Burst = -1, 0
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return client.New(cfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	}
	admin, err := plain("")
	if err != nil {
		return nil, err
	}
	c, err := plain(testenv.OperatorUser)
	if err != nil {
		return nil, err
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%0*d", prefix, len(tpl.name)-len(prefix), i)
	}
	res := &baseline{Concurrency: concurrency, ObjectsPerTenant: len(tpl.objects)}
	create := func(name string) error {
		objs := tpl.forTenant(name)
		var uid types.UID
		for i, data := range objs {
			obj := &unstructured.Unstructured{}
			if i > 0 {
				// Owner references name the new Tenant's UID.
				data = bytes.ReplaceAll(data, []byte(tpl.uid), []byte(uid))
			}
			if err := obj.UnmarshalJSON(data); err != nil {
				return err
			}
			writer := c
			if i == 0 {
				writer = admin
			}
			if err := writer.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
			if i == 0 {
				uid = obj.GetUID()
			}
		}
		return nil
	}
	fmt.Fprintf(os.Stderr, "baseline: %d tenants × %d objects, %d requests in flight...\n", n, len(tpl.objects), concurrency)
	if res.Create, err = measureRaw(ctx, env, func() error { return forEach(names, concurrency, create) }); err != nil {
		return nil, err
	}
	if tpl.sharedCopy < 0 {
		return res, nil
	}
	copyOf := func(name string) (*unstructured.Unstructured, error) {
		obj := &unstructured.Unstructured{}
		return obj, obj.UnmarshalJSON(tpl.forTenant(name)[tpl.sharedCopy])
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"token":"`+encodeToken("v3")+`"}}`))
	fmt.Fprintf(os.Stderr, "baseline: a shared-secret change into %d namespaces...\n", n)
	res.FanOut, err = measureRaw(ctx, env, func() error {
		return forEach(names, concurrency, func(name string) error {
			obj, err := copyOf(name)
			if err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch)
		})
	})
	return res, err
}

// encodeToken is v as a Secret's data holds it.
func encodeToken(v string) string {
	data, _ := json.Marshal([]byte(v))
	return string(bytes.Trim(data, `"`))
}

// measureRaw times work and takes the API server's count of requests and the control plane's
// CPU over it. With the operator stopped, every request counted is the benchmark's.
func measureRaw(ctx context.Context, env *testenv.Env, work func() error) (baselineFigures, error) {
	before, err := env.APIServerRequests(ctx)
	if err != nil {
		return baselineFigures{}, err
	}
	apiserver0, etcd0 := controlPlaneCPU()
	start := time.Now()
	if err := work(); err != nil {
		return baselineFigures{}, err
	}
	f := baselineFigures{Seconds: time.Since(start).Seconds()}
	apiserver1, etcd1 := controlPlaneCPU()
	f.APIServerCPUSeconds, f.EtcdCPUSeconds = apiserver1-apiserver0, etcd1-etcd0
	after, err := env.APIServerRequests(ctx)
	if err != nil {
		return f, err
	}
	f.Requests, _ = splitControlPlane(after.Sub(before))
	fmt.Fprintf(os.Stderr, "  %.2fs, %s (apiserver %.1fs, etcd %.1fs)\n", f.Seconds, byVerb(f.Requests), f.APIServerCPUSeconds, f.EtcdCPUSeconds)
	return f, nil
}

// forEach calls fn for every name, concurrency at a time, and returns the first error.
func forEach(names []string, concurrency int, fn func(string) error) error {
	work := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				if err := fn(name); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	return first
}

// freshControlPlane starts a second control plane for the baseline, holding only what Landlord
// installs at start: the admission policies, which then judge the baseline's writes as they
// judged Landlord's. An operator process like `like` runs on it until it has installed as many
// admission policies and bindings of each kind as `want` counts, and is stopped. (The first
// control plane, stopped by then, held every tenant the other phases made; its writes cost more
// the more it holds, and the ratio would flatter Landlord.)
func freshControlPlane(ctx context.Context, work string, like childFlags, want policyCounts) (*testenv.Env, error) {
	env, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = env.Stop()
		}
	}()
	f := like
	f.kubeconfig, f.profile = filepath.Join(work, "fresh.kubeconfig"), ""
	if err := writeOperatorKubeconfig(env, f.kubeconfig); err != nil {
		return nil, err
	}
	if f.metricsAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	if f.controlAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	// The operator starts once the API server serves the CRDs it was started with, as the
	// first control plane's did by the time the benchmark started it.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return env.AdminClient.List(ctx, &tenancyv1alpha1.TenantList{}) == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("the fresh control plane does not serve Tenants: %w", err)
	}
	op, err := startOperator(f)
	if err != nil {
		return nil, err
	}
	var got policyCounts
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if got, err = countPolicies(ctx, env); err != nil {
			return false, nil // a List that fails is asked again
		}
		return got.atLeast(want), nil
	})
	if stopErr := op.stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return nil, fmt.Errorf("the fresh control plane's admission policies, %+v against %+v: %w", got, want, err)
	}
	if err := waitPoliciesEnforced(ctx, env.AdminClient, 2*time.Minute); err != nil {
		return nil, err
	}
	ok = true
	return env, nil
}

// policyCounts counts the admission policies and bindings of each kind on a control plane.
type policyCounts struct{ validating, validatingBindings, mutating, mutatingBindings int }

// atLeast is whether c has as many of each kind as want.
func (c policyCounts) atLeast(want policyCounts) bool {
	return c.validating >= want.validating && c.validatingBindings >= want.validatingBindings &&
		c.mutating >= want.mutating && c.mutatingBindings >= want.mutatingBindings
}

func countPolicies(ctx context.Context, env *testenv.Env) (policyCounts, error) {
	var c policyCounts
	for _, l := range []struct {
		list client.ObjectList
		n    *int
	}{
		{&admissionregistrationv1.ValidatingAdmissionPolicyList{}, &c.validating},
		{&admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}, &c.validatingBindings},
		{&admissionregistrationv1.MutatingAdmissionPolicyList{}, &c.mutating},
		{&admissionregistrationv1.MutatingAdmissionPolicyBindingList{}, &c.mutatingBindings},
	} {
		if err := env.AdminClient.List(ctx, l.list); err != nil {
			return c, err
		}
		*l.n = meta.LenList(l.list)
	}
	return c, nil
}
