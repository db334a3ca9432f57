package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// soakParams say how long the soak churns, how fast, and how often it samples.
type soakParams struct {
	duration    time.Duration
	interval    time.Duration
	rate        float64
	secretEvery time.Duration
}

func (s *soakParams) bind(fs *flag.FlagSet) {
	fs.DurationVar(&s.duration, "soak", 0, "After the other phases, churn the fleet for this long and sample the operator's memory (off when 0; not run with -shards).")
	fs.DurationVar(&s.interval, "soak-interval", 30*time.Second, "Soak: time between samples of the operator's memory.")
	fs.Float64Var(&s.rate, "soak-rate", 2, "Soak: churn operations per second (create, claim, archive, purge, release, delete, delete in turn).")
	fs.DurationVar(&s.secretEvery, "soak-secret-every", 2*time.Minute, "Soak: time between changes of the shared secret, each one a write in every tenant namespace (never when 0).")
}

// soakReport is what the soak measured: the operator's memory over time, under churn that keeps
// the fleet the same size, so that a flat line is what a process that leaks nothing draws.
type soakReport struct {
	Seconds             float64        `json:"seconds"`
	OperationsPerSecond float64        `json:"operationsPerSecond"`
	Samples             []soakSample   `json:"samples"`
	Operations          soakOperations `json:"operations"`
	// LiveHeapSlopeMiBPerHour is the least-squares slope of the live heap over the samples.
	LiveHeapSlopeMiBPerHour float64 `json:"liveHeapSlopeMiBPerHour"`
	// NamespacesFinished counts the tenant namespaces the benchmark emptied and finalized once
	// Landlord had deleted them, in place of the namespace controller its control plane lacks.
	NamespacesFinished int `json:"namespacesFinished"`
	// Errors counts churn requests that failed; each is printed as it happens, and the churn
	// goes on.
	Errors int `json:"errors"`
}

// soakSample is one look at the operator during the soak. Counters are cumulative.
type soakSample struct {
	Seconds      float64 `json:"seconds"`
	RSSMiB       float64 `json:"rssMiB"`
	HeapInuseMiB float64 `json:"heapInuseMiB"`
	// LiveHeapMiB is the heap right after a collection the benchmark forces.
	LiveHeapMiB float64 `json:"liveHeapMiB"`
	// CPUSeconds and Reconciles count from the operator process's start.
	CPUSeconds float64 `json:"operatorCPUSeconds"`
	Reconciles int     `json:"reconciles"`
	Tenants    int     `json:"tenants"`
	// PendingNamespaces are namespaces of archived, purged or released tenants not gone yet:
	// a number that grows says removals fall behind.
	PendingNamespaces int            `json:"pendingNamespaces"`
	Operations        soakOperations `json:"operations"`
}

// soakOperations counts the churn's operations.
type soakOperations struct {
	Created             int `json:"created"`
	Claimed             int `json:"claimed"`
	Archived            int `json:"archived"`
	Purged              int `json:"purged"`
	Released            int `json:"released"`
	Deleted             int `json:"deleted"`
	SharedSecretChanges int `json:"sharedSecretChanges"`
}

// soakEnv is what the soak works with, all of it the benchmark's own: its client, its cache,
// the secret store and the running operator process.
type soakEnv struct {
	c         client.Client
	watched   *benchCache
	store     secret.Store
	cfg       config.Config
	op        *operatorProcess
	tenants   []string
	postgres  int
	component bool
}

const (
	soakPool = "soak-pool"
	// soakPoolReplicas is a few spares: enough that a claim finds one Ready while the pool
	// replaces the last one taken.
	soakPoolReplicas = 3
	// A backlog of an operation (left waiting on the operator) is caught up at most this many
	// at a time, and remembered up to maxDue, so a stall never turns into a burst.
	maxPerTick = 2
	maxDue     = 5
)

type churnOp int

const (
	opCreate churnOp = iota
	opClaim
	opArchive
	opPurge
	opRelease
	opDelete
	churnOps
)

// churnCycle is the churn's round. A create adds a tenant, and so does a claim (the pool
// replaces the spare it takes); the two deletes take two Purged tenants away, one purged from
// Archived and one released by its claim. The fleet keeps its size, so its memory should too.
var churnCycle = []churnOp{opCreate, opClaim, opArchive, opPurge, opRelease, opDelete, opDelete}

// runSoak churns the fleet for p.duration at p.rate operations per second, sampling the
// operator's memory every p.interval; nil when the soak is off.
func runSoak(ctx context.Context, p soakParams, e soakEnv) (*soakReport, error) {
	if p.duration <= 0 {
		return nil, nil
	}
	if p.rate <= 0 || p.interval <= 0 {
		return nil, fmt.Errorf("-soak-rate and -soak-interval must be positive")
	}
	fmt.Fprintf(os.Stderr, "soak: churning for %s at %.1f operations/s...\n", p.duration, p.rate)
	ch := &churn{soakEnv: e, active: slices.Clone(e.tenants), contents: namespaceContents(&e.cfg)}
	if err := ch.fillPool(ctx); err != nil {
		return nil, err
	}
	rep := &soakReport{OperationsPerSecond: p.rate}
	start := time.Now()
	record := func() error {
		s, err := ch.sample(ctx, time.Since(start))
		if err != nil {
			return fmt.Errorf("soak: %w", err)
		}
		rep.Samples = append(rep.Samples, s)
		fmt.Fprintf(os.Stderr, "  soak %4.0fs: RSS %.0f MiB, live heap %.1f MiB, %d tenants, %d namespaces pending, %+v\n",
			s.Seconds, s.RSSMiB, s.LiveHeapMiB, s.Tenants, s.PendingNamespaces, s.Operations)
		return nil
	}
	if err := record(); err != nil {
		return nil, err
	}

	end := time.NewTimer(p.duration)
	defer end.Stop()
	churnTick := time.NewTicker(time.Duration(float64(time.Second) / p.rate))
	defer churnTick.Stop()
	sampleTick := time.NewTicker(p.interval)
	defer sampleTick.Stop()
	// The namespace controller's stand-in looks once a second, about as soon as the real one
	// starts on a namespace.
	finishTick := time.NewTicker(time.Second)
	defer finishTick.Stop()
	var secretTick <-chan time.Time
	if p.secretEvery > 0 {
		t := time.NewTicker(p.secretEvery)
		defer t.Stop()
		secretTick = t.C
	}
	for tick := 0; ; {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-churnTick.C:
			ch.step(ctx, churnCycle[tick%len(churnCycle)])
			tick++
		case <-finishTick.C:
			ch.finishNamespaces(ctx)
		case <-secretTick:
			ch.changeSharedSecret(ctx)
		case <-sampleTick.C:
			if err := record(); err != nil {
				return nil, err
			}
		case <-end.C:
			// The last sample closes the soak unless one was just taken.
			if last := rep.Samples[len(rep.Samples)-1]; time.Since(start).Seconds()-last.Seconds > p.interval.Seconds()/2 {
				if err := record(); err != nil {
					return nil, err
				}
			}
			rep.Seconds = time.Since(start).Seconds()
			rep.Operations, rep.NamespacesFinished, rep.Errors = ch.ops, ch.finished, ch.errors
			hours, live := make([]float64, len(rep.Samples)), make([]float64, len(rep.Samples))
			for i, s := range rep.Samples {
				hours[i], live[i] = s.Seconds/3600, s.LiveHeapMiB
			}
			rep.LiveHeapSlopeMiBPerHour = leastSquaresSlope(hours, live)
			return rep, nil
		}
	}
}

// churn is the soak's state: the tenants at each step of their life, oldest first.
type churn struct {
	soakEnv
	active, archived, purged []string
	// claims are the soak's TenantClaims, in namespace default.
	claims []string
	due    [churnOps]int
	serial int
	ops    soakOperations
	// finishing are namespaces the benchmark finishes once Landlord has deleted them.
	finishing []string
	contents  []schema.GroupVersionKind
	finished  int
	errors    int
}

// fillPool creates the soak's pool, with spares like the benchmark's tenants, and waits until
// its spares are Ready, so the first claims find one.
func (ch *churn) fillPool(ctx context.Context) error {
	pool := &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: soakPool},
		Spec: tenancyv1alpha1.TenantPoolSpec{Replicas: soakPoolReplicas,
			Template: tenancyv1alpha1.TenantTemplate{Spec: soakTenant("", ch.postgres, ch.component).Spec}},
	}
	if err := ch.c.Create(ctx, pool); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if err := ch.c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		if pool.Status.Ready >= soakPoolReplicas {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("soak: pool not filled after 5 minutes: %+v", pool.Status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// soakTenant is a tenant with the spec createAll gives the benchmark's tenants: a churned
// fleet is the same fleet.
func soakTenant(name string, postgres int, withComponent bool) *tenancyv1alpha1.Tenant {
	t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if name != "" {
		t.Spec.Organization, t.Spec.Email = "Bench "+name, "ops@"+name+".example.com"
	}
	if withComponent {
		t.Spec.Components = []tenancyv1alpha1.Component{{Name: "bench-web", Version: "1.0.0"}}
	}
	for i := range postgres {
		t.Spec.Databases.Postgres = append(t.Spec.Databases.Postgres, tenancyv1alpha1.Database{Name: fmt.Sprintf("db%d", i)})
	}
	return t
}

// step runs one operation of the round, or catches up on earlier ones of its kind that waited
// for the operator.
func (ch *churn) step(ctx context.Context, op churnOp) {
	ch.due[op] = min(ch.due[op]+1, maxDue)
	for range maxPerTick {
		if ch.due[op] == 0 {
			return
		}
		done, err := ch.do(ctx, op)
		if err != nil {
			ch.fail(err)
			return
		}
		if !done {
			return
		}
		ch.due[op]--
	}
}

// do runs one operation; false when it has to wait for the operator to finish an earlier step
// of the tenant it would take next.
func (ch *churn) do(ctx context.Context, op churnOp) (bool, error) {
	switch op {
	case opCreate:
		name := fmt.Sprintf("soak-%06d", ch.serial)
		ch.serial++
		if err := ch.c.Create(ctx, soakTenant(name, ch.postgres, ch.component)); err != nil {
			return false, err
		}
		ch.active = append(ch.active, name)
		ch.ops.Created++
	case opClaim:
		name := fmt.Sprintf("soak-claim-%06d", ch.serial)
		ch.serial++
		claim := &tenancyv1alpha1.TenantClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: soakPool, Organization: "Signup " + name, Email: "ops@" + name + ".example.com"},
		}
		if err := ch.c.Create(ctx, claim); err != nil {
			return false, err
		}
		ch.claims = append(ch.claims, name)
		ch.ops.Claimed++
	case opArchive:
		if len(ch.active) == 0 {
			return false, nil
		}
		name := ch.active[0]
		if err := ch.setState(ctx, name, tenancyv1alpha1.StateArchived); err != nil {
			return false, err
		}
		ch.active = ch.active[1:]
		ch.archived = append(ch.archived, name)
		ch.finishing = append(ch.finishing, ch.cfg.NamespaceName(name))
		ch.ops.Archived++
	case opPurge:
		if len(ch.archived) == 0 || !ch.settled(ctx, ch.archived[0]) {
			return false, nil
		}
		name := ch.archived[0]
		if err := ch.setState(ctx, name, tenancyv1alpha1.StatePurged); err != nil {
			return false, err
		}
		ch.archived = ch.archived[1:]
		ch.purged = append(ch.purged, name)
		ch.ops.Purged++
	case opRelease:
		// The customer leaves: the claim goes, and its tenant is purged, to be deleted later.
		if len(ch.claims) == 0 {
			return false, nil
		}
		claim := &tenancyv1alpha1.TenantClaim{}
		if err := ch.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: ch.claims[0]}, claim); err != nil {
			return false, err
		}
		if claim.Status.Phase != tenancyv1alpha1.ClaimBound {
			return false, nil
		}
		// Purged first: should the claim's deletion fail, the next turn purges again, which
		// changes nothing, and deletes it then.
		if err := ch.setState(ctx, claim.Status.Tenant, tenancyv1alpha1.StatePurged); err != nil {
			return false, err
		}
		if err := ch.c.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
			return false, err
		}
		ch.claims = ch.claims[1:]
		ch.purged = append(ch.purged, claim.Status.Tenant)
		ch.finishing = append(ch.finishing, claim.Status.Namespace)
		ch.ops.Released++
	case opDelete:
		// A Purged tenant has no namespace and no data left, and is deleted without the
		// confirmation an Active one needs.
		if len(ch.purged) == 0 || !ch.settled(ctx, ch.purged[0]) {
			return false, nil
		}
		t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: ch.purged[0]}}
		if err := ch.c.Delete(ctx, t); client.IgnoreNotFound(err) != nil {
			return false, err
		}
		ch.purged = ch.purged[1:]
		ch.ops.Deleted++
	}
	return true, nil
}

// setState moves a tenant to a lifecycle state with one merge patch; Purged carries the
// confirmation the API requires.
func (ch *churn) setState(ctx context.Context, name string, state tenancyv1alpha1.TenantState) error {
	patch := fmt.Sprintf(`{"spec":{"state":%q}}`, state)
	if state == tenancyv1alpha1.StatePurged {
		patch = fmt.Sprintf(`{"spec":{"state":%q,"purgeConfirmation":%q}}`, state, name)
	}
	t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return ch.c.Patch(ctx, t, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// settled is whether the operator has finished with the tenant's current spec (Ready for its
// generation), as the benchmark's cache sees it: no request. A tenant that is gone has nothing
// left to wait for.
func (ch *churn) settled(ctx context.Context, name string) bool {
	t := &tenancyv1alpha1.Tenant{}
	if err := ch.watched.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		return apierrors.IsNotFound(err)
	}
	return t.Status.ObservedGeneration == t.Generation && meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.ReadyCondition)
}

// changeSharedSecret changes the shared secret in the store and tells the operator, as the
// shared secret phase does.
func (ch *churn) changeSharedSecret(ctx context.Context) {
	value := fmt.Sprintf("soak-%d", ch.ops.SharedSecretChanges+1)
	if err := putShared(ctx, ch.store, ch.cfg, sharedName(0), value); err != nil {
		ch.fail(err)
		return
	}
	if _, err := ch.op.post("/template-sync"); err != nil {
		ch.fail(err)
		return
	}
	ch.ops.SharedSecretChanges++
}

// finishNamespaces does for the namespaces Landlord deleted what the namespace controller does
// in a cluster: empties them and removes the kubernetes finalizer. The benchmark's control plane
// runs no controller-manager, and without this every archived or purged tenant's namespace
// would stay Terminating with all its objects, in etcd and in the operator's cache: memory that
// grows with the churn and says nothing about Landlord.
func (ch *churn) finishNamespaces(ctx context.Context) {
	keep := ch.finishing[:0]
	for _, name := range ch.finishing {
		ns := &corev1.Namespace{}
		err := ch.c.Get(ctx, client.ObjectKey{Name: name}, ns)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			ch.fail(err)
		case ns.DeletionTimestamp.IsZero():
			// Landlord has not deleted it yet.
		default:
			if err := ch.finishNamespace(ctx, ns); err != nil {
				ch.fail(fmt.Errorf("finishing namespace %s: %w", name, err))
			} else {
				ch.finished++
				continue
			}
		}
		keep = append(keep, name)
	}
	ch.finishing = keep
}

func (ch *churn) finishNamespace(ctx context.Context, ns *corev1.Namespace) error {
	for _, gvk := range ch.contents {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		err := ch.c.DeleteAllOf(ctx, obj, client.InNamespace(ns.Name))
		if apierrors.IsMethodNotSupported(err) {
			err = ch.deleteEach(ctx, gvk, ns.Name)
		}
		if err != nil {
			return err
		}
	}
	ns.Spec.Finalizers = nil
	return ch.c.SubResource("finalize").Update(ctx, ns)
}

// deleteEach deletes the objects of a kind whose collection cannot be deleted at once.
func (ch *churn) deleteEach(ctx context.Context, gvk schema.GroupVersionKind, namespace string) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := ch.c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		item := &list.Items[i]
		item.SetGroupVersionKind(gvk)
		errs = append(errs, client.IgnoreNotFound(ch.c.Delete(ctx, item)))
	}
	return errors.Join(errs...)
}

// namespaceContents are the kinds a tenant namespace holds in the benchmark: what
// resources.Build puts there besides the namespace itself, Secrets (shared secret copies and
// database credentials), the NetworkPolicy to the database servers, and the benchmark
// component's ConfigMap and Service. Nothing else writes there: with no controller-manager,
// no ServiceAccount, root CA ConfigMap or EndpointSlice appears in a namespace.
func namespaceContents(cfg *config.Config) []schema.GroupVersionKind {
	objs := resources.Build(&tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, cfg)
	objs = append(objs, &corev1.Secret{}, &corev1.ConfigMap{}, &corev1.Service{})
	var kinds []schema.GroupVersionKind
	for _, obj := range objs {
		if _, ok := obj.(*corev1.Namespace); ok {
			continue
		}
		gvk, err := apiutil.GVKForObject(obj, tenancyv1alpha1.Scheme())
		if err == nil && !slices.Contains(kinds, gvk) {
			kinds = append(kinds, gvk)
		}
	}
	return kinds
}

func (ch *churn) fail(err error) {
	ch.errors++
	fmt.Fprintln(os.Stderr, "  soak:", err)
}

// sample reads the operator's memory (after a collection, for the live heap) and the fleet's
// size from the benchmark's cache.
func (ch *churn) sample(ctx context.Context, since time.Duration) (soakSample, error) {
	s, err := ch.op.sample()
	if err != nil {
		return soakSample{}, err
	}
	live, err := ch.op.post("/live-heap")
	if err != nil {
		return soakSample{}, err
	}
	var liveBytes float64
	if _, err := fmt.Sscan(live, &liveBytes); err != nil {
		return soakSample{}, fmt.Errorf("live heap %q: %w", live, err)
	}
	tenants := &tenancyv1alpha1.TenantList{}
	if err := ch.watched.List(ctx, tenants, client.UnsafeDisableDeepCopy); err != nil {
		return soakSample{}, err
	}
	return soakSample{
		Seconds: since.Seconds(), RSSMiB: s.rssBytes / (1 << 20), HeapInuseMiB: s.heapInuseBytes / (1 << 20), LiveHeapMiB: liveBytes / (1 << 20),
		CPUSeconds: s.cpuSeconds, Reconciles: int(s.reconciles), Tenants: len(tenants.Items), PendingNamespaces: len(ch.finishing),
		Operations: ch.ops,
	}, nil
}

// leastSquaresSlope is the slope of the least-squares line through the points (xs[i], ys[i]),
// 0 when the xs do not spread.
func leastSquaresSlope(xs, ys []float64) float64 {
	n := min(len(xs), len(ys))
	if n < 2 {
		return 0
	}
	var meanX, meanY float64
	for i := range n {
		meanX += xs[i]
		meanY += ys[i]
	}
	meanX /= float64(n)
	meanY /= float64(n)
	var sxy, sxx float64
	for i := range n {
		sxy += (xs[i] - meanX) * (ys[i] - meanY)
		sxx += (xs[i] - meanX) * (xs[i] - meanX)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// printSoak adds the soak to the Markdown report.
func printSoak(w io.Writer, s *soakReport) {
	if s == nil || len(s.Samples) == 0 {
		return
	}
	o := s.Operations
	fmt.Fprintf(w, "\nSoak: %.0f minutes of churn at %.1f operations/s: %d tenants created, %d claimed, %d archived, %d purged, %d released, %d deleted; %d shared secret changes; %d errors. %d tenant namespaces were emptied and finalized by the benchmark, standing in for the namespace controller.\n\n",
		s.Seconds/60, s.OperationsPerSecond, o.Created, o.Claimed, o.Archived, o.Purged, o.Released, o.Deleted, o.SharedSecretChanges, s.Errors, s.NamespacesFinished)
	fmt.Fprintln(w, "| figure | first | last | min | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, row := range []struct {
		name, format string
		value        func(soakSample) float64
	}{
		{"operator RSS", "%.0f MiB", func(s soakSample) float64 { return s.RSSMiB }},
		{"live heap", "%.1f MiB", func(s soakSample) float64 { return s.LiveHeapMiB }},
		{"tenants", "%.0f", func(s soakSample) float64 { return float64(s.Tenants) }},
	} {
		first, last := row.value(s.Samples[0]), row.value(s.Samples[len(s.Samples)-1])
		lo, hi := first, first
		for _, sm := range s.Samples {
			lo, hi = min(lo, row.value(sm)), max(hi, row.value(sm))
		}
		f := row.format
		fmt.Fprintf(w, "| %s | "+f+" | "+f+" | "+f+" | "+f+" |\n", row.name, first, last, lo, hi)
	}
	fmt.Fprintf(w, "\nLive heap trend: %+.2f MiB per hour (least squares over %d samples).\n", s.LiveHeapSlopeMiBPerHour, len(s.Samples))
}
