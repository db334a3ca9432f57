package tenantbackup_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/test/testenv"
)

// drainSetting is a setting of the drain test: def for the suite, the environment variable for
// the benchmark (make bench-drain): LANDLORD_DRAIN_TENANTS, how many tenants the drained
// server holds, and LANDLORD_DRAIN_CONCURRENCY, the drain's --concurrency.
func drainSetting(t *testing.T, name string, def int) int {
	n := def
	if v := os.Getenv(name); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", name, v)
		}
	}
	return n
}

// labelledServer starts a PostgreSQL server and registers it with the labels given.
func labelledServer(t *testing.T, prefix string, labels map[string]string, maxTenants *int32) (string, *dbtest.Instance) {
	t.Helper()
	inst, err := dbtest.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Close() })
	name := prefix + "-" + strconv.Itoa(int(inst.Server.Port))
	if err := env.RegisterDatabaseServer(context.Background(), opConfig.Databases.CredentialsNamespace, name, inst, func(s *tenancyv1alpha1.DatabaseServerSpec) {
		s.MaxTenants = maxTenants
		s.MaxConcurrentJobs = ptr.To[int32](1000)
	}); err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	ds := &tenancyv1alpha1.DatabaseServer{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, ds)).To(Succeed())
	patch := client.MergeFrom(ds.DeepCopy())
	ds.Labels = labels
	g.Expect(k8s.Patch(context.Background(), ds, patch)).To(Succeed())
	// Before its server stops, it takes no more tenants: the suite's later tests place theirs on
	// the servers that stay.
	t.Cleanup(func() {
		_ = k8s.Patch(context.Background(), &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxTenants":0}}`)))
	})
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, ds)).To(Succeed())
		res, err := testenv.KStatus(ds)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Status.String()).To(Equal("Current"), res.Message)
	}).WithTimeout(timeout).Should(Succeed())
	return name, inst
}

// releaseHeldJobs lets every Job pod of the backups' namespace run as soon as kwok has made it
// Running, held, until ctx ends: a drain's copies run one after another without the test naming
// each. It watches the namespace's pods.
func releaseHeldJobs(ctx context.Context, t *testing.T) {
	t.Helper()
	c, err := client.NewWithWatch(env.Admin, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, &corev1.PodList{}, client.InNamespace(opConfig.Backups.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+localcluster.HoldAnnotation+`":null}}}`))
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				p, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					continue
				}
				if _, held := p.Annotations[localcluster.HoldAnnotation]; held && p.Status.Phase == corev1.PodRunning {
					_ = c.Patch(ctx, p, patch)
				}
			}
		}
	}()
}

func TestDrainingAServerMovesEachOfItsTenantsOffAndLeavesItEmpty(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	n := drainSetting(t, "LANDLORD_DRAIN_TENANTS", 3)
	concurrency := drainSetting(t, "LANDLORD_DRAIN_CONCURRENCY", 1)
	src, srcInst := labelledServer(t, "drain-src", map[string]string{"drain": "src"}, nil)
	dst, dstInst := labelledServer(t, "drain-dst", map[string]string{"drain": "dst"}, ptr.To[int32](0))

	// The tenants are placed on the server to drain by a class, which then stops placing them.
	newClass(t, "drain", tenancyv1alpha1.TenantClassSpec{Databases: &tenancyv1alpha1.ClassDatabases{
		ServerSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"drain": "src"}},
	}})
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("drain-%03d", i)
		tn := newTenant(names[i], func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Class = "drain"
			tn.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
		})
		g.Expect(k8s.Create(ctx, tn)).To(Succeed())
		t.Cleanup(func() { deleteTenant(t, tn.Name) })
	}
	for _, name := range names {
		tenant := testenv.WaitTenantCurrent(t, k8s, name, 5*timeout)
		g.Expect(tenant.Status.Databases).To(ConsistOf(HaveField("Server", src)))
		db := openOn(t, srcInst, testenv.AccountOf(credentials(g, name, "app")))
		_, err := db.ExecContext(ctx, "CREATE TABLE items (id INT PRIMARY KEY, v BIGINT NOT NULL); INSERT INTO items VALUES (1, 7)")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(db.Close()).To(Succeed())
	}
	class := &tenancyv1alpha1.TenantClass{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "drain"}, class)).To(Succeed())
	g.Expect(k8s.Patch(ctx, class, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"databases":null}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "drain"}, class)).To(Succeed())
		g.Expect(class.Status.ObservedGeneration).To(Equal(class.Generation))
		g.Expect(class.Status.Updated).To(BeEquivalentTo(n))
	}).WithTimeout(2 * timeout).Should(Succeed())

	bin := filepath.Join(t.TempDir(), "landlordctl")
	build := exec.Command("go", "build", "-o", bin, "./cmd/landlordctl")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/landlordctl: %v\n%s", err, out)
	}
	kubeconfig, err := env.WriteKubeconfig(t.TempDir(), "local")
	g.Expect(err).NotTo(HaveOccurred())
	released, stop := context.WithCancel(ctx)
	defer stop()
	releaseHeldJobs(released, t)

	start := time.Now()
	drain := exec.Command(bin, "db", "drain", src, "--to", dst, "--confirm", "--timeout", "10m", "--concurrency", strconv.Itoa(concurrency))
	drain.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := drain.CombinedOutput()
	took := time.Since(start)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	stop()
	t.Logf("drained %d tenants' databases, %d at a time, each confirmed, in %s (%.2f s a tenant)", n, concurrency, took, took.Seconds()/float64(n))

	t.Run("every tenant runs on the target with its rows, and its old copy is dropped", func(t *testing.T) {
		g := NewWithT(t)
		moves := &tenancyv1alpha1.DatabaseMoveList{}
		// A confirmed move drops the old copy after the drain has moved on.
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.List(ctx, moves)).To(Succeed())
			for _, m := range moves.Items {
				if strings.HasPrefix(m.Spec.Tenant, "drain-") {
					g.Expect(m.Status.Phase).To(Equal(tenancyv1alpha1.MoveSucceeded), "move %s", m.Name)
				}
			}
		}).WithTimeout(timeout).Should(Succeed())
		admin := adminOf(t, srcInst)
		for _, name := range names {
			tenant := testenv.WaitTenantCurrent(t, k8s, name, timeout)
			g.Expect(tenant.Status.Databases).To(ConsistOf(HaveField("Server", dst)), "tenant %s", name)
			db := openOn(t, dstInst, testenv.AccountOf(credentials(g, name, "app")))
			var v int64
			g.Expect(db.QueryRowContext(ctx, "SELECT v FROM items WHERE id = 1").Scan(&v)).To(Succeed())
			g.Expect(v).To(BeEquivalentTo(7))
			g.Expect(db.Close()).To(Succeed())
			found := 0
			for _, m := range moves.Items {
				if m.Spec.Tenant != name {
					continue
				}
				found++
				g.Expect(m.Status.Phase).To(Equal(tenancyv1alpha1.MoveSucceeded), "move %s", m.Name)
				g.Expect(admin.Holds(ctx, database.Account{Database: m.Status.From.Database, Username: m.Status.From.Username})).To(BeFalse())
			}
			g.Expect(found).To(Equal(1), "the moves of tenant %s", name)
		}
	})

	t.Run("the drained server holds no tenant", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			ds := &tenancyv1alpha1.DatabaseServer{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: src}, ds)).To(Succeed())
			g.Expect(ds.Status.Tenants).To(BeEquivalentTo(0))
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(strings.Count(string(out), "Switched")).To(BeNumerically(">=", n), string(out))
	})
}
