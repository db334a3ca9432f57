package backupjobs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database"
)

// A backup or restore Job's pod runs its plan's two steps, each a container holding only what
// it needs: the step whose client tools run against the tenant's databases (dump, load) mounts
// its own plan, with the logins, and gets neither the store's credentials nor the key; the step
// that reads or writes the store (seal, fetch) gets those, and its plan names no login.
func TestABackupJobsStepsHoldOnlyWhatTheyNeed(t *testing.T) {
	cfg := config.Backups{Namespace: "landlord-system", Image: "registry.example.com/landlord-backup:1", EnvFromSecrets: []string{"store-credentials"}}
	owner := metav1.OwnerReference{APIVersion: "tenancy.landlord.dev/v1alpha1", Kind: "TenantBackup", Name: "nightly", UID: "uid"}
	const password = "tenant-login-password"
	plan := backup.Plan{Objects: "s3://backups", TenantKey: []byte("tenant-data-key"), Location: "t/b/",
		Databases: []backup.Database{{Name: "app", Target: backup.Target{Engine: database.Postgres, Host: "db", Port: 5432, Database: "d", Username: "u", Password: password}}}}

	for _, tc := range []struct {
		op                 backup.Operation
		databases, store   backup.Operation
		databasesStepFirst bool
	}{
		{op: backup.OpBackup, databases: backup.OpDump, store: backup.OpSeal, databasesStepFirst: true},
		{op: backup.OpRestore, databases: backup.OpLoad, store: backup.OpFetch},
	} {
		t.Run("a "+string(tc.op)+" runs "+string(tc.databases)+" apart from "+string(tc.store), func(t *testing.T) {
			g := NewWithT(t)
			plan.Operation = tc.op
			s, err := PlanSecret(cfg, "landlord-job", owner, plan)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Data).To(HaveLen(2))
			g.Expect(string(s.Data[StepKey(tc.databases)])).To(ContainSubstring(password))
			g.Expect(string(s.Data[StepKey(tc.databases)])).NotTo(ContainSubstring("s3://backups"))
			var storeStep backup.Plan
			g.Expect(json.Unmarshal(s.Data[StepKey(tc.store)], &storeStep)).To(Succeed())
			g.Expect(string(s.Data[StepKey(tc.store)])).NotTo(ContainSubstring(password))
			g.Expect(storeStep.TenantKey).To(Equal(plan.TenantKey))

			spec := Job(cfg, "landlord-job", tc.op, owner, []string{"pg"}).Spec.Template.Spec
			g.Expect(spec.InitContainers).To(HaveLen(1))
			g.Expect(spec.Containers).To(HaveLen(1))
			first, second := spec.InitContainers[0], spec.Containers[0]
			data, store := first, second
			if !tc.databasesStepFirst {
				data, store = second, first
			}
			g.Expect(data.Name).To(Equal(string(tc.databases)))
			g.Expect(store.Name).To(Equal(string(tc.store)))
			g.Expect(data.EnvFrom).To(BeEmpty(), "no store credentials where the client tools run")
			g.Expect(store.EnvFrom).To(HaveLen(1))
			g.Expect(sharedVolumes(data, store)).To(ConsistOf("dumps"), "the steps share the dumps and nothing else: no HOME, no TMPDIR")
			for _, c := range []corev1.Container{data, store} {
				g.Expect(c.Args).To(Equal([]string{"job", "--plan", planDir + "/" + planFile, "--dir", stepsDir}))
				mounted := mountedKeys(spec, c)
				g.Expect(mounted).To(Equal([]string{StepKey(backup.Operation(c.Name))}), "container %s mounts its own plan alone", c.Name)
				for _, e := range c.Env {
					g.Expect(strings.ToUpper(e.Name)).NotTo(ContainSubstring("KEY"))
				}
			}
		})
	}
}

// A database move's copy is one step: it holds both logins, so it mounts its own plan alone,
// with no store, no key and none of the store's credentials.
func TestACopyJobIsOneStepWithNothingOfTheStore(t *testing.T) {
	g := NewWithT(t)
	cfg := config.Backups{Namespace: "landlord-system", Image: "registry.example.com/landlord-backup:1", EnvFromSecrets: []string{"store-credentials"}}
	owner := metav1.OwnerReference{APIVersion: "tenancy.landlord.dev/v1alpha1", Kind: "DatabaseMove", Name: "acme-app", UID: "uid"}
	target := func(host, password string) backup.Target {
		return backup.Target{Engine: database.Postgres, Host: host, Port: 5432, Database: "d", Username: "u", Password: password}
	}
	plan := backup.Plan{Operation: backup.OpCopy,
		Databases: []backup.Database{{Name: "app", Target: target("old", "fence-password")}},
		CopyTo:    []backup.Database{{Name: "app", Target: target("new", "new-password")}}}

	s, err := PlanSecret(cfg, "landlord-copy", owner, plan)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Data).To(HaveLen(1))
	var got backup.Plan
	g.Expect(json.Unmarshal(s.Data[StepKey(backup.OpCopy)], &got)).To(Succeed())
	g.Expect(got).To(Equal(plan))

	spec := Job(cfg, "landlord-copy", backup.OpCopy, owner, []string{"old", "new"}).Spec.Template.Spec
	g.Expect(spec.InitContainers).To(BeEmpty())
	g.Expect(spec.Containers).To(HaveLen(1))
	c := spec.Containers[0]
	g.Expect(c.Name).To(Equal(string(backup.OpCopy)))
	g.Expect(c.EnvFrom).To(BeEmpty(), "no store credentials where both logins are")
	g.Expect(mountedKeys(spec, c)).To(Equal([]string{StepKey(backup.OpCopy)}))
	var volumes []string
	for _, v := range spec.Volumes {
		volumes = append(volumes, v.Name)
	}
	g.Expect(volumes).To(ConsistOf("plan-copy", "scratch-copy", "dumps"))
}

// sharedVolumes are the volumes both containers mount.
func sharedVolumes(a, b corev1.Container) []string {
	var out []string
	for _, m := range a.VolumeMounts {
		for _, n := range b.VolumeMounts {
			if m.Name == n.Name {
				out = append(out, m.Name)
			}
		}
	}
	return out
}

// mountedKeys are the keys of the Job's plan Secret that the container mounts.
func mountedKeys(spec corev1.PodSpec, c corev1.Container) []string {
	var keys []string
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				keys = append(keys, "(every key)")
			}
			for _, item := range v.Secret.Items {
				keys = append(keys, item.Key)
			}
		}
	}
	return keys
}

// The NetworkPolicy the install ships (config/default) selects every backup and restore Job's
// pod, in the namespace the Jobs run in by default, and lets no connection reach them.
func TestTheShippedNetworkPolicyTakesNoConnectionToAJobsPod(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "default", "backup_jobs_networkpolicy.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	policy := &networkingv1.NetworkPolicy{}
	g.Expect(yaml.UnmarshalStrict(data, policy)).To(Succeed())
	g.Expect(policy.Namespace).To(Equal("landlord-system"), "the operator's namespace, where the Jobs run unless backups.namespace says otherwise")
	g.Expect(policy.Spec.PolicyTypes).To(ContainElement(networkingv1.PolicyTypeIngress))
	g.Expect(policy.Spec.Ingress).To(BeEmpty(), "no rule lets a connection in")
	selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
	g.Expect(err).NotTo(HaveOccurred())
	cfg := config.Backups{Namespace: "landlord-system", PodLabels: map[string]string{"team": "platform"}}
	for _, op := range []backup.Operation{backup.OpBackup, backup.OpRestore} {
		pod := Job(cfg, "landlord-job", op, metav1.OwnerReference{}, nil).Spec.Template
		g.Expect(selector.Matches(labels.Set(pod.Labels))).To(BeTrue(), "a %s Job's pod is selected", op)
	}
	g.Expect(selector.Matches(labels.Set{"app.kubernetes.io/name": "landlord"})).To(BeFalse(), "the operator's own pods are not")
}

// A plan Secret made by the previous release (the whole plan under plan.json), whose operator
// was killed before it made the Job, is made again with this release's step keys: a Job of two
// steps over it would never start. One whose Job the previous release made is left to that Job.
func TestAPlanOfTheEarlierReleaseIsMadeAgainUnlessItsJobReadsIt(t *testing.T) {
	cfg := config.Backups{Namespace: "landlord-system", Image: "registry.example.com/landlord-backup:1"}
	owner := metav1.OwnerReference{APIVersion: "tenancy.landlord.dev/v1alpha1", Kind: "TenantBackup", Name: "nightly", UID: "backup-uid", Controller: ptr.To(true)}
	plan := backup.Plan{Operation: backup.OpBackup, Objects: "s3://backups", TenantKey: []byte("k"), Location: "t/b/",
		Databases: []backup.Database{{Name: "app", Target: backup.Target{Engine: database.Postgres, Host: "db", Port: 5432, Database: "d", Username: "u", Password: "p"}}}}
	const name = "landlord-backup-0123456789ab"
	earlier := func() *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: name, OwnerReferences: []metav1.OwnerReference{owner}},
			Data: map[string][]byte{"plan.json": []byte(`{"operation":"backup"}`)}}
	}

	t.Run("without its Job, it is made again", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(earlier()).Build()
		g.Expect(Create(t.Context(), c, cfg, name, plan, owner, []string{"pg"})).To(MatchError(ContainSubstring("made by an earlier release")))
		g.Expect(apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKey{Namespace: cfg.Namespace, Name: name}, &corev1.Secret{}))).To(BeTrue(), "the earlier plan is deleted")
		g.Expect(Create(t.Context(), c, cfg, name, plan, owner, []string{"pg"})).To(Succeed(), "the next reconcile makes it again")
		s := &corev1.Secret{}
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: cfg.Namespace, Name: name}, s)).To(Succeed())
		g.Expect(s.Data).To(HaveKey(StepKey(backup.OpDump)))
		g.Expect(s.Data).To(HaveKey(StepKey(backup.OpSeal)))
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: cfg.Namespace, Name: name}, &batchv1.Job{})).To(Succeed())
	})

	t.Run("with its Job, it is left to that Job", func(t *testing.T) {
		g := NewWithT(t)
		earlierJob := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: name, OwnerReferences: []metav1.OwnerReference{owner}}}
		c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(earlier(), earlierJob).Build()
		g.Expect(Create(t.Context(), c, cfg, name, plan, owner, []string{"pg"})).To(Succeed())
		s := &corev1.Secret{}
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: cfg.Namespace, Name: name}, s)).To(Succeed())
		g.Expect(s.Data).To(HaveKey("plan.json"), "the earlier release's Job still reads it")
	})
}
