package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/policy"
)

// installed is the object an installer holds for live, one of Landlord's admission policies: the
// same kind, name, labels, annotations and spec, as the release manifest or the chart carries
// it when it was built from the operator's configuration.
func installed(t *testing.T, live client.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: map[string]any{"spec": content["spec"]}}
	u.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind(kindOf(live)))
	u.SetName(live.GetName())
	u.SetLabels(live.GetLabels())
	u.SetAnnotations(live.GetAnnotations())
	return u
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return "ValidatingAdmissionPolicy"
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return "ValidatingAdmissionPolicyBinding"
	}
	panic("no kind for " + obj.GetName())
}

// managers are the field managers of obj's live copy.
func managers(g Gomega, obj client.Object) []string {
	live := obj.DeepCopyObject().(client.Object)
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), live)).To(Succeed())
	var out []string
	for _, e := range live.GetManagedFields() {
		out = append(out, e.Manager)
	}
	return out
}

// admissionWrites are the operator's writes to admission policies and bindings so far.
func admissionWrites() int {
	n := 0
	for key, count := range op.Requests.Snapshot() {
		if strings.Contains(key, "admissionpolic") && !strings.HasPrefix(key, "GET") && !strings.HasPrefix(key, "LIST") && !strings.HasPrefix(key, "WATCH") {
			n += count
		}
	}
	return n
}

// The release manifest (kubectl apply --server-side), Flux's kustomize-controller and Helm apply
// Landlord's admission policies too, on every install, upgrade and Flux interval. The installer
// that applies what the operator applies changed nothing: the operator neither repairs the
// policy (no landlord_drift_repairs_total, no write) nor strips the installer's ownership, so the
// next apply finds nothing to do either and the two never fight. One that changes a field is
// still repaired (TestAdditiveEditsToTheAdmissionPoliciesAreReverted).
func TestAnInstallersOwnApplyOfThePoliciesIsNoRepair(t *testing.T) {
	ctx := context.Background()
	objects := []client.Object{
		named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.ServiceExposure),
		named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", policy.ServiceExposure),
	}
	installers := []struct {
		name, manager string
		apply         func(obj *unstructured.Unstructured) error
	}{
		{"kubectl apply --server-side of the release manifest", "kubectl", func(obj *unstructured.Unstructured) error {
			return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kubectl"), client.ForceOwnership)
		}},
		{"Flux's kustomize-controller", "kustomize-controller", func(obj *unstructured.Unstructured) error {
			return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kustomize-controller"), client.ForceOwnership)
		}},
		{"helm upgrade", "helm", func(obj *unstructured.Unstructured) error {
			// Helm 3 writes a three-way merge patch as an update, not an apply.
			data, err := obj.MarshalJSON()
			if err != nil {
				return err
			}
			return k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data), client.FieldOwner("helm"))
		}},
	}
	for _, in := range installers {
		t.Run(in.name+" of the policies the operator applies is no repair and no write", func(t *testing.T) {
			g := NewWithT(t)
			waitIdle(t)
			repairs := map[string]float64{}
			for _, obj := range objects {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
				repairs[kindOf(obj)] = driftRepairs(g, kindOf(obj))
			}
			writes := admissionWrites()
			for _, obj := range objects {
				g.Expect(in.apply(installed(t, obj))).To(Succeed())
			}
			// An absence has no event to wait for: the operator sees each write within
			// milliseconds, and is given seconds.
			g.Consistently(func(g Gomega) {
				for _, obj := range objects {
					g.Expect(driftRepairs(g, kindOf(obj))).To(Equal(repairs[kindOf(obj)]), "%s %s was repaired", kindOf(obj), obj.GetName())
				}
				g.Expect(admissionWrites()).To(Equal(writes), "the operator wrote the policies again")
			}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
			if in.manager != "helm" {
				// An apply makes its manager an owner of what it applied; an update of values
				// that were already there owns nothing.
				for _, obj := range objects {
					g.Expect(managers(g, obj)).To(ContainElement(in.manager), "the installer's ownership was taken off %s", obj.GetName())
				}
			}
		})
	}

	t.Run("policies an installer created before the operator ran are taken over, not repaired", func(t *testing.T) {
		g := NewWithT(t)
		waitIdle(t)
		var held []*unstructured.Unstructured
		repairs := map[string]float64{}
		for _, obj := range objects {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			held = append(held, installed(t, obj))
			repairs[kindOf(obj)] = driftRepairs(g, kindOf(obj))
		}
		// A fresh install: the installer creates the policies, then the operator starts.
		stopOperator(t)
		for i, obj := range objects {
			g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
			g.Eventually(func() bool {
				return k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)) != nil
			}).WithTimeout(timeout).Should(BeTrue())
			g.Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(held[i].DeepCopy()), client.FieldOwner("kubectl"), client.ForceOwnership)).To(Succeed())
		}
		startSuiteOperator(t)
		g.Eventually(func(g Gomega) {
			for _, obj := range objects {
				g.Expect(managers(g, obj)).To(ContainElement("landlord"))
			}
		}).WithTimeout(timeout).Should(Succeed())
		waitIdle(t)
		for _, obj := range objects {
			g.Expect(driftRepairs(g, kindOf(obj))).To(Equal(repairs[kindOf(obj)]), "%s %s was counted as repaired", kindOf(obj), obj.GetName())
		}
		t.Run("and the installer's next apply is no repair either", func(t *testing.T) {
			g := NewWithT(t)
			writes := admissionWrites()
			for i := range objects {
				g.Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(held[i].DeepCopy()), client.FieldOwner("kubectl"), client.ForceOwnership)).To(Succeed())
			}
			g.Consistently(func(g Gomega) {
				for _, obj := range objects {
					g.Expect(driftRepairs(g, kindOf(obj))).To(Equal(repairs[kindOf(obj)]))
				}
				g.Expect(admissionWrites()).To(Equal(writes))
			}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		})
	})
}
