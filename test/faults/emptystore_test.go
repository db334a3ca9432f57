package faults_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/templatesync"
)

// The operator restarts on an empty store, as a shipped install can (an emptyDir after a
// failover or rollout, a wrong bucket prefix). A template sync from it would remove every shared
// secret from the template namespace and so from every tenant, and tenants whose stored
// database credentials it lacks would have them regenerated. Nothing is removed or rewritten,
// the sync says why, and once the right store is back everything converges on the data it had.
func TestARestartOnAnEmptyStoreDeletesNothing(t *testing.T) {
	const scenario = "emptystore"
	ctx := context.Background()
	deleteLease(t)
	shared := []string{scenario + "-api-key", scenario + "-license"}
	for _, name := range shared {
		NewWithT(t).Expect(store.Put(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: opConfig.Secrets.TemplateNamespace, Name: name,
				Labels: map[string]string{tenancyv1alpha1.SharedLabel: "true"},
			},
			Data: map[string][]byte{"token": []byte("value of " + name)},
		})).To(Succeed())
	}
	tenants := []string{scenario + "-pg", scenario + "-mysql"}

	first := startOperator(t, scenario+"-right-store")
	waitLeader(t, first)
	NewWithT(t).Expect(env.AdminClient.Create(ctx, newTenant(scenario, tenants[0], tenancyv1alpha1.EnginePostgres))).To(Succeed())
	NewWithT(t).Expect(env.AdminClient.Create(ctx, newTenant(scenario, tenants[1], tenancyv1alpha1.EngineMySQL))).To(Succeed())
	t.Run("tenants converge with the store's shared secrets and their databases", func(t *testing.T) {
		checkInvariants(t, scenario)
		NewWithT(t).Eventually(func(g Gomega) {
			for _, tenant := range tenants {
				g.Expect(sharedCopies(g, tenant)).To(ContainElements(shared), "shared secrets of tenant %s", tenant)
			}
		}).WithTimeout(convergeTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
	if t.Failed() {
		return
	}
	before := secretsOf(NewWithT(t), tenants)
	first.kill(t)
	deleteLease(t)

	emptyDir := filepath.Join(work, "empty-store")
	metricsAddr := freeAddr(t)
	second := startOperator(t, scenario+"-empty-store", "--config="+writeConfigWithStore(t, "landlord-empty-store.yaml", emptyDir),
		"--metrics-bind-address="+metricsAddr, "--metrics-insecure")
	waitLeader(t, second)

	t.Run("the template sync refuses the store, says why in an event, and reports the sync down", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(storeEvents(g, templatesync.ReasonStoreMismatch)).NotTo(BeEmpty())
		}).WithTimeout(outageTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(scrape(g, metricsAddr, "landlord_secret_store_sync_up")).To(Equal(0.0))
		}).WithTimeout(outageTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	during := scenario + "-during"
	NewWithT(t).Expect(env.AdminClient.Create(ctx, newTenant(scenario, during, tenancyv1alpha1.EnginePostgres))).To(Succeed())
	t.Run("a tenant created meanwhile waits for the right store and stores nothing in the wrong one", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			dbs := conditionOf(g, during, tenancyv1alpha1.DatabasesReadyCondition)
			g.Expect(dbs.Reason).To(Equal(tenancyv1alpha1.ReasonStoreUnavailable))
			g.Expect(dbs.Message).To(ContainSubstring("is not the one this cluster records"))
		}).WithTimeout(outageTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
		empty, err := secret.NewFileStore(emptyDir, filepath.Join(emptyDir, "key.json"))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		for _, tenant := range append(slices.Clone(tenants), during) {
			stored, err := empty.List(ctx, namespaceOf(tenant))
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			NewWithT(t).Expect(stored).To(BeEmpty(), "credentials of tenant %s in the empty store", tenant)
		}
	})
	t.Run("no template secret, shared copy or credentials Secret is removed or rewritten", func(t *testing.T) {
		// The sync retries with backoff and every tenant is reconciled on start-up: several
		// passes, none of which may change anything.
		NewWithT(t).Consistently(func(g Gomega) {
			g.Expect(secretsOf(g, tenants)).To(Equal(before))
		}).WithTimeout(outageDuration).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
	second.kill(t)
	deleteLease(t)

	third := startOperator(t, scenario+"-right-store-again")
	waitLeader(t, third)
	t.Run("back on the right store, every tenant converges on the data it had", func(t *testing.T) {
		checkInvariants(t, scenario)
		NewWithT(t).Expect(secretsOf(NewWithT(t), tenants)).To(Equal(before))
	})
	logOperatorErrors(t, first, second, third)
	third.stop(t)
	deleteLease(t)
}

// writeConfigWithStore writes the suite's operator configuration with the file store in dir,
// as a pod that lost its store's volume would read it, and returns its path.
func writeConfigWithStore(t *testing.T, file, dir string) string {
	t.Helper()
	cfg := opConfig
	cfg.Secrets.Store.File.Dir = dir
	cfg.Secrets.Store.File.KeyFile = filepath.Join(dir, "key.json")
	path, err := writeConfig(file, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// secretsOf identifies, by UID and a digest of their data, the template namespace's secrets
// from the store and the tenants' shared copies and credentials Secrets: a secret removed and
// written again, or rewritten with other data, changes its entry.
func secretsOf(g Gomega, tenants []string) map[string]string {
	out := map[string]string{}
	add := func(namespace string, labels client.MatchingLabels) {
		list := &corev1.SecretList{}
		g.Expect(env.AdminClient.List(context.Background(), list, client.InNamespace(namespace), labels)).To(Succeed())
		for _, s := range list.Items {
			h := sha256.New()
			for _, k := range sortedKeys(s.Data) {
				fmt.Fprintf(h, "%s=%x;", k, s.Data[k])
			}
			out[namespace+"/"+s.Name] = fmt.Sprintf("%s %x", s.UID, h.Sum(nil))
		}
	}
	add(opConfig.Secrets.TemplateNamespace, client.MatchingLabels{tenancyv1alpha1.FromStoreLabel: "true"})
	for _, tenant := range tenants {
		add(namespaceOf(tenant), client.MatchingLabels{tenancyv1alpha1.TenantLabel: tenant})
	}
	return out
}

// sharedCopies are the names of the shared secrets copied into a tenant's namespace.
func sharedCopies(g Gomega, tenant string) []string {
	list := &corev1.SecretList{}
	g.Expect(env.AdminClient.List(context.Background(), list, client.InNamespace(namespaceOf(tenant)),
		client.MatchingLabels{tenancyv1alpha1.SharedCopyLabel: "true"})).To(Succeed())
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

// storeEvents are the messages of the events with the reason about the template namespace.
func storeEvents(g Gomega, reason string) []string {
	events, err := env.Clientset.EventsV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, ev := range events.Items {
		if ev.Reason == reason && ev.Regarding.Kind == "Namespace" && ev.Regarding.Name == opConfig.Secrets.TemplateNamespace {
			out = append(out, ev.Note)
		}
	}
	return out
}

// conditionOf is a tenant's condition of the type, which must be present.
func conditionOf(g Gomega, tenant, conditionType string) *metav1.Condition {
	c := meta.FindStatusCondition(getTenant(g, tenant).Status.Conditions, conditionType)
	g.Expect(c).NotTo(BeNil(), "tenant %s has no condition %s", tenant, conditionType)
	return c
}

// scrape reads one unlabelled sample from an operator's metrics endpoint.
func scrape(g Gomega, addr, metric string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if value, ok := strings.CutPrefix(lines.Text(), metric+" "); ok {
			v, err := strconv.ParseFloat(value, 64)
			g.Expect(err).NotTo(HaveOccurred())
			return v
		}
	}
	g.Expect(lines.Err()).NotTo(HaveOccurred())
	g.Expect(metric).To(BeEmpty(), "the operator does not export %s", metric)
	return 0
}
