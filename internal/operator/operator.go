// Package operator wires Landlord's manager: scheme, cache restrictions, client limits and
// controllers. The binary, the tests and the benchmark all start the operator through New, so
// what is tested and measured is what runs.
package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	k8sfields "k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/admissionpolicy"
	"github.com/landlord-dev/landlord/internal/controller/classrollout"
	"github.com/landlord-dev/landlord/internal/controller/componentrollout"
	"github.com/landlord-dev/landlord/internal/controller/databasemove"
	"github.com/landlord-dev/landlord/internal/controller/databaseserver"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/jobslots"
	"github.com/landlord-dev/landlord/internal/controller/templatemirror"
	"github.com/landlord-dev/landlord/internal/controller/tenant"
	"github.com/landlord-dev/landlord/internal/controller/tenantbackup"
	"github.com/landlord-dev/landlord/internal/controller/tenantclaim"
	"github.com/landlord-dev/landlord/internal/controller/tenantpool"
	"github.com/landlord-dev/landlord/internal/crdcheck"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/internal/priority"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/shard"
	"github.com/landlord-dev/landlord/internal/usage"
)

// User agents of the operator's two clients.
const (
	UserAgent       = "landlord"
	UrgentUserAgent = "landlord-urgent"
)

// Options are the process-level settings; everything about tenants is in Config.
type Options struct {
	Config config.Config

	// MetricsAddr and ProbeAddr are listen addresses; "0" turns the server off.
	MetricsAddr string
	// MetricsInsecure serves metrics over plain HTTP without authentication, for local use.
	// Otherwise metrics are served over HTTPS to callers the API server authorizes for
	// GET /metrics (the landlord-metrics-reader ClusterRole).
	MetricsInsecure bool
	// MetricsCertDir holds the certificate the metrics server serves, tls.crt and tls.key (a
	// kubernetes.io/tls Secret mounted there; a renewed one is picked up). Empty: a self-signed
	// certificate made at start-up, which no scraper can verify.
	MetricsCertDir string
	ProbeAddr      string
	// PprofAddr serves net/http/pprof when set; "" or "0" turns it off.
	PprofAddr string

	LeaderElection          bool
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod time leader election; zero is
	// controller-runtime's default (15s, 10s and 2s). A standby takes a killed leader's lease
	// over once it has gone unrenewed for LeaseDuration; the leader gives up its lease, and
	// stops, when it cannot renew it within RenewDeadline; every replica tries every RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// RefuseBehindLeader makes a process that finds the lease held refuse to start rather than
	// wait as a standby (cmd/landlord's --wait-for-leader=false; New itself does not read it).
	RefuseBehindLeader bool

	// Shard is the operator shard this process is: it reconciles the Tenants whose
	// tenancy.landlord.dev/shard label names it, and caches only their objects. The default
	// shard ("") takes the tenants without the label, and alone runs the cluster-wide duties:
	// admission policies, the template namespace sync, pools, claims, database servers,
	// rollouts and the tenant counts.
	Shard string

	// Resync, when set, enqueues the tenants sent on it (tests and the benchmark use it to force a
	// resync of every tenant without writing to any).
	Resync <-chan event.GenericEvent

	// Store overrides the secret store the configuration names (tests use it to inject faults).
	Store secret.Store

	// Clock tells backup schedules and the usage sampler the time (tests step a fake one); the
	// real clock when nil.
	Clock clock.WithTicker

	// AnotherInProcess lets this operator share its process with another (tests that restart
	// the operator): controller names are otherwise unique per process.
	AnotherInProcess bool
}

// nonZero is a pointer to d, or nil (the manager's default) when d is zero.
func nonZero(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}

// Operator is a configured manager and the parts of it callers may poke.
type Operator struct {
	manager.Manager
	// TemplateSync mirrors the secret store into the template namespace; Trigger syncs now.
	TemplateSync *templatemirror.Reconciler
	// Tenants is the tenant reconciler, whose memory tests check.
	Tenants *tenant.Reconciler
	// Policies is the admission policy reconciler, nil on a shard's operator.
	Policies *admissionpolicy.Reconciler
	// Gate holds the manager client's writes back while a claim binds.
	Gate *priority.Gate
}

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func metricsOptions(opts Options) metricsserver.Options {
	if opts.MetricsInsecure {
		return metricsserver.Options{BindAddress: opts.MetricsAddr}
	}
	return metricsserver.Options{
		BindAddress:    opts.MetricsAddr,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
		CertDir:        opts.MetricsCertDir,
	}
}

// checkMetricsCertificate refuses a certificate directory without the certificate and key in
// it: the metrics server would quietly serve a self-signed certificate instead, and every scrape
// that verifies it would fail.
func checkMetricsCertificate(opts Options) error {
	if opts.MetricsCertDir == "" || opts.MetricsInsecure {
		return nil
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(opts.MetricsCertDir, name)); err != nil {
			return fmt.Errorf("--metrics-cert-dir %s: %w (a kubernetes.io/tls Secret mounted there holds tls.crt and tls.key)", opts.MetricsCertDir, err)
		}
	}
	return nil
}

// checkIdentity refuses to run a process the API server knows by another name than the
// configured controller.identity, the one user Landlord's admission policies exempt. The policies
// would refuse such a process's labelled writes and claim binds; and were it to write the
// policies for itself, it would confine the installed operator, and the two would rewrite them
// in turn for as long as both ran.
func checkIdentity(restCfg *rest.Config, identity string) error {
	self, err := whoAmI(restCfg)
	if err != nil {
		return err
	}
	if self != identity {
		return fmt.Errorf("the API server knows this process as %q, but controller.identity is %q, the one user Landlord's admission policies exempt: "+
			"run the operator as %[2]q, or set controller.identity to the user it runs as (only where no other Landlord runs)", self, identity)
	}
	return nil
}

// whoAmI asks the API server who the operator is (a SelfSubjectReview, which every
// authenticated user may make).
func whoAmI(restCfg *rest.Config) (string, error) {
	c, err := client.New(restCfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server who the operator is: %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", errors.New("the API server did not say who the operator is")
	}
	return review.Status.UserInfo.Username, nil
}

// New returns a manager with every Landlord controller registered.
func New(restCfg *rest.Config, opts Options) (*Operator, error) {
	if err := checkMetricsCertificate(opts); err != nil {
		return nil, err
	}
	cfg := opts.Config
	store := opts.Store
	if store == nil {
		var err error
		if store, err = secret.Open(context.Background(), cfg.Secrets.Store); err != nil {
			return nil, fmt.Errorf("opening secret store: %w", err)
		}
	}
	store = secret.Instrumented(secret.WithTimeout(store, cfg.Secrets.Store.Timeout.Duration), cfg.Secrets.Store.Backend)
	if len(cfg.Isolation.IngressClasses) == 0 {
		// Not an error: a cluster with one ingress controller has no class to choose. With
		// more, a tenant could publish through any of them, the platform's internal one included.
		ctrl.Log.WithName("setup").Info("isolation.ingressClasses is empty: tenants without spec.ingressClasses may name any Ingress class; list the classes tenants may use")
	}
	managed, err := shardSelector(opts.Shard)
	if err != nil {
		return nil, err
	}
	restCfg = rest.CopyConfig(restCfg)
	restCfg.QPS = cfg.Client.QPS
	restCfg.Burst = cfg.Client.Burst
	restCfg.UserAgent = UserAgent
	if err := checkIdentity(restCfg, cfg.Controller.Identity); err != nil {
		return nil, err
	}
	// Helm never upgrades a chart's crds/: an operator upgraded without its CRDs has fields it
	// writes silently dropped by the API server. It says so at start, as an error, and runs on:
	// refusing to start would stop every tenant's convergence for the want of fields only
	// suspend and reconcile requests use, and the tenant controller bounds what a dropped
	// status.lastHandledReconcileAt costs (a request is verified once per process).
	crdCtx, cancelCRD := context.WithTimeout(context.Background(), 30*time.Second)
	if err := crdcheck.Tenant(crdCtx, restCfg); err != nil {
		var outdated *crdcheck.OutdatedError
		if opts.Shard != "" && errors.As(err, &outdated) {
			// A CRD without status.shard and status.handoverTo drops every handover: a named
			// shard would take tenants over while the shard that has them still writes.
			cancelCRD()
			return nil, fmt.Errorf("shard %s: %w", opts.Shard, err)
		}
		ctrl.Log.WithName("setup").Error(err, "checking the installed Tenant CRD")
	}
	cancelCRD()
	// Everything the manager's client writes is background work, which gives way to a
	// customer's bind (the urgent client's, below, which does not pass the gate).
	gate := priority.NewGate(cfg.Client.Yield.InFlight, cfg.Client.Yield.MaxWait.Duration)
	background := rest.CopyConfig(restCfg)
	background.Wrap(gate.Transport)
	// The manager's REST mapper, made here to tell whether the kinds of backups are served: it
	// reads the API server's discovery once, as the manager would anyway.
	httpClient, err := rest.HTTPClientFor(background)
	if err != nil {
		return nil, err
	}
	mapper, err := newMapper(background, httpClient)
	if err != nil {
		return nil, err
	}
	// Backups run on the default shard, where their kinds are served; every shard's migrations
	// may ask for one.
	backupsServed, err := served(mapper, "TenantBackup", "TenantRestore", "TenantBackupSchedule")
	if err != nil {
		return nil, err
	}
	backups := false
	if opts.Shard == "" {
		backups = backupsServed
		if !backups {
			ctrl.Log.WithName("setup").Error(errors.New("the TenantBackup, TenantRestore and TenantBackupSchedule CustomResourceDefinitions are not installed"),
				"backups and restores are off until they are (apply this release's CRDs) and the operator restarts")
		}
	}
	byObject := map[client.Object]cache.ByObject{
		&tenancyv1alpha1.Tenant{}:            {Label: labels.Everything()},
		&tenancyv1alpha1.DatabaseServer{}:    {Label: labels.Everything()},
		&tenancyv1alpha1.ComponentTemplate{}: {Label: labels.Everything()},
		&tenancyv1alpha1.TenantPool{}:        {Label: labels.Everything()},
		&tenancyv1alpha1.TenantClaim{}:       {Label: labels.Everything()},
		&tenancyv1alpha1.ComponentRollout{}:  {Label: labels.Everything()},
		// The template namespace is Landlord's own and is cached whole: its secrets are
		// the sources of every tenant's shared secrets.
		// So is the operator's own namespace, for the database servers' admin credentials.
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{
			cfg.Secrets.TemplateNamespace:      {LabelSelector: labels.Everything()},
			cfg.Databases.CredentialsNamespace: {LabelSelector: labels.Everything()},
			cache.AllNamespaces:                {LabelSelector: managed},
		}},
	}
	if backups {
		// People make them: they carry no label of Landlord's.
		byObject[&tenancyv1alpha1.TenantBackup{}] = cache.ByObject{Label: labels.Everything()}
		byObject[&tenancyv1alpha1.TenantRestore{}] = cache.ByObject{Label: labels.Everything()}
		byObject[&tenancyv1alpha1.TenantBackupSchedule{}] = cache.ByObject{Label: labels.Everything()}
	}
	// Tenants' own requests came in a later release than backups: without their kinds, backups
	// run and no request is answered.
	requests := false
	if backups {
		if requests, err = served(mapper, "BackupRequest", "RestoreRequest"); err != nil {
			return nil, err
		}
		if !requests {
			ctrl.Log.WithName("setup").Error(errors.New("the BackupRequest and RestoreRequest CustomResourceDefinitions are not installed"),
				"tenants' backup and restore requests are not answered until they are (apply this release's CRDs) and the operator restarts")
		}
	}
	// Database moves came in a later release still: without their kind, no database moves and
	// the tenant controller does not look for moves.
	moves, err := served(mapper, "DatabaseMove")
	if err != nil {
		return nil, err
	}
	if !moves {
		ctrl.Log.WithName("setup").Error(errors.New("the DatabaseMove CustomResourceDefinition is not installed"),
			"databases cannot be moved between servers until it is (apply this release's CRDs) and the operator restarts")
	} else {
		byObject[&tenancyv1alpha1.DatabaseMove{}] = cache.ByObject{Label: labels.Everything()}
	}
	// Classes came with moves' release, after them: without their kind, a tenant naming a class
	// stalls (ClassNotFound) and changes nothing.
	classes, err := served(mapper, "TenantClass")
	if err != nil {
		return nil, err
	}
	if !classes {
		ctrl.Log.WithName("setup").Error(errors.New("the TenantClass CustomResourceDefinition is not installed"),
			"tenants naming a class stall until it is (apply this release's CRDs) and the operator restarts")
	} else {
		byObject[&tenancyv1alpha1.TenantClass{}] = cache.ByObject{Label: labels.Everything()}
	}
	if requests {
		byObject[&tenancyv1alpha1.BackupRequest{}] = cache.ByObject{Label: labels.Everything()}
		byObject[&tenancyv1alpha1.RestoreRequest{}] = cache.ByObject{Label: labels.Everything()}
	}

	mgr, err := ctrl.NewManager(background, ctrl.Options{
		Scheme: tenancyv1alpha1.Scheme(),
		Cache: cache.Options{
			// Only what Landlord manages for this shard's tenants is cached, so memory follows the
			// number of its tenants and not the size of the cluster. Tenants themselves are
			// cached whole, every shard's: domain conflicts and database server counts are
			// questions about all of them.
			DefaultLabelSelector: managed,
			DefaultTransform:     cacheTransform(tenancyv1alpha1.Scheme()),
			ByObject:             byObject,
			// Every informer is declared by a controller's watches; a read of anything else is a
			// bug, not a reason to start an informer on the whole cluster.
			ReaderFailOnMissingInformer: true,
			NewInformer:                 newInformer,
		},
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		// Component objects are read as unstructured; they come from the cache like the rest.
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              shard.LeaseName(opts.Shard),
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 nonZero(opts.LeaseDuration),
		RenewDeadline:                 nonZero(opts.RenewDeadline),
		RetryPeriod:                   nonZero(opts.RetryPeriod),
		Controller: ctrlconfig.Controller{
			SkipNameValidation:    ptr.To(opts.AnotherInProcess),
			CacheSyncTimeout:      cfg.Controller.CacheSyncTimeout.Duration,
			ReconciliationTimeout: cfg.Controller.ReconcileTimeout.Duration,
			// Start-up enqueues every tenant at once; the priority queue serves events for
			// changed objects ahead of that initial list.
			UsePriorityQueue: ptr.To(true),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	// The writes a change or a customer waits on (a shared secret's copies, claim binds) go
	// through a client whose token buckets are its own: creating tenants or refilling a pool
	// drains the manager client's, never these. Reads come from the same cache. Its user agent
	// tells its requests apart in the API server's audit log.
	urgentCfg := rest.CopyConfig(restCfg)
	urgentCfg.QPS = cfg.Client.Urgent.QPS
	urgentCfg.Burst = cfg.Client.Urgent.Burst
	urgentCfg.UserAgent = UrgentUserAgent
	urgent, err := client.New(urgentCfg, client.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		Cache: &client.CacheOptions{Reader: mgr.GetCache(), Unstructured: true},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the urgent client: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}

	if err := indexes.Add(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	if moves {
		if err := indexes.AddMoves(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return nil, err
		}
	}
	conns := &database.Connections{Client: mgr.GetClient(), Namespace: cfg.Databases.CredentialsNamespace}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		conns.Close()
		return nil
	})); err != nil {
		return nil, err
	}
	leaseNamespace, err := leaderElectionNamespace(opts.LeaderElectionNamespace)
	if err != nil {
		return nil, err
	}
	templates, err := templateNamespaceReader(mgr, cfg.Secrets.TemplateNamespace, opts.Shard)
	if err != nil {
		return nil, err
	}
	clk := cmp.Or[clock.WithTicker](opts.Clock, clock.RealClock{})
	usageChanged := make(chan event.GenericEvent)
	sampler := &usage.Sampler{
		Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Objects: managed, Provisioners: conns,
		Namespace: cfg.NamespaceName, QuotaName: resources.QuotaName,
		Interval: cfg.Usage.Interval.Duration, Timeout: cfg.Databases.Timeout.Duration, Clock: clk, Shard: opts.Shard, Changed: usageChanged,
	}
	if *cfg.Usage.PodMetrics {
		// Protobuf: the list holds every pod of the cluster, and protobuf is the smaller and
		// cheaper to decode (metrics-server serves it, as kubectl top asks for it).
		metricsCfg := rest.CopyConfig(mgr.GetConfig())
		metricsCfg.ContentType = runtime.ContentTypeProtobuf
		metricsCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		podMetrics, err := metricsclient.NewForConfig(metricsCfg)
		if err != nil {
			return nil, err
		}
		sampler.PodMetrics = usage.MetricsAPI{Client: podMetrics}
	}
	if err := mgr.Add(sampler); err != nil {
		return nil, err
	}
	slots := &jobslots.Slots{}
	tenants := &tenant.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Config:    &cfg,
		Recorder:  mgr.GetEventRecorder("landlord"),
		// Tenants' credentials go only to the store the template namespace records: one that
		// is not the cluster's would have them regenerated, then lost when the right one is back.
		Secrets: secret.TenantSecrets{Store: secret.Guarded(store, func(ctx context.Context) (string, error) {
			ns := &corev1.Namespace{}
			err := templates.Get(ctx, client.ObjectKey{Name: cfg.Secrets.TemplateNamespace}, ns)
			if apierrors.IsNotFound(err) {
				return "", nil
			}
			return ns.Annotations[tenancyv1alpha1.SecretStoreAnnotation], err
		})},
		Databases: conns,
		Moves:     moves,
		Classes:   classes,
		Backups:   backupsServed,
		// Migrations, backups and restores share each database server's places for Jobs.
		Slots:  slots,
		Resync: opts.Resync,
		Usage:  sampler, UsageChanged: usageChanged,
		Urgent: urgent,
		Shard:  opts.Shard,
		Shards: &shard.LeaseReader{Reader: mgr.GetAPIReader(), Namespace: leaseNamespace},
	}
	if opts.AnotherInProcess && opts.Shard != "" {
		// Controllers of one name share their workqueue metrics within a process: a shard
		// stopped with tenants queued would leave the other operator's queue looking busy.
		tenants.ControllerName = "tenant-" + opts.Shard
	}
	if err := tenants.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up tenant controller: %w", err)
	}
	if err := tenants.ForgetWhatIsGone(context.Background(), mgr.GetCache()); err != nil {
		return nil, fmt.Errorf("setting up tenant controller: %w", err)
	}
	if err := mgr.Add(leading(opts.Shard)); err != nil {
		return nil, err
	}
	o := &Operator{Manager: mgr, Tenants: tenants, Gate: gate}
	if opts.Shard != "" {
		return o, nil
	}
	if o.TemplateSync, o.Policies, err = clusterWideDuties(mgr, opts, store, urgent, gate, conns, restCfg, classes); err != nil {
		return nil, err
	}
	if backups {
		if err := backupControllers(mgr, &cfg, tenants.Secrets, conns, clk, slots, requests, moves); err != nil {
			return nil, err
		}
	}
	if classes {
		if err := (&classrollout.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up tenant class controller: %w", err)
		}
	}
	if moves {
		m := &databasemove.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: &cfg,
			Recorder: mgr.GetEventRecorder("landlord"), Secrets: tenants.Secrets, Databases: conns, Restores: backups}
		if err := m.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up database move controller: %w", err)
		}
	}
	return o, nil
}

// clusterWideDuties registers what the default shard alone runs: what is not one tenant's.
func clusterWideDuties(mgr manager.Manager, opts Options, store secret.Store, urgent client.Client, gate *priority.Gate, conns *database.Connections, restCfg *rest.Config, classes bool) (*templatemirror.Reconciler, *admissionpolicy.Reconciler, error) {
	cfg := opts.Config
	// landlord_tenants and the age of the oldest tenant not Ready are computed from the cache at
	// scrape time, by the leader: every shard caches every Tenant, so the default shard reports
	// the whole fleet's, each shard's apart.
	if err := mgr.Add(tenant.Counts(mgr.GetCache())); err != nil {
		return nil, nil, err
	}
	pools := &tenantpool.Reconciler{Client: mgr.GetClient()}
	if err := pools.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up tenant pool controller: %w", err)
	}
	claims := &tenantclaim.Reconciler{
		Client: mgr.GetClient(), Urgent: urgent, Gate: gate, Config: &cfg,
		Recorder: mgr.GetEventRecorder("landlord"), MaxConcurrentBinds: cfg.Controller.MaxConcurrentReconciles,
		Namespaces: mgr.GetAPIReader(),
	}
	if err := claims.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up tenant claim controller: %w", err)
	}
	policies := &admissionpolicy.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("landlord"), Operator: policy.OperatorOf(cfg, opts.LeaderElectionNamespace), Auditor: &admissionpolicy.Auditor{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("landlord"), Action: cfg.Isolation.Audit,
		Network: policy.NetworkBoundsOf(cfg.Network)}}
	if err := policies.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up admission policy controller: %w", err)
	}
	rollouts := &componentrollout.Reconciler{Client: mgr.GetClient(), Classes: classes}
	if err := rollouts.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up component rollout controller: %w", err)
	}
	servers := &databaseserver.Reconciler{Client: mgr.GetClient(), Config: &cfg, Connections: conns}
	if err := servers.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up database server controller: %w", err)
	}
	// Rollouts' progress and servers' capacity are read from their statuses at scrape time.
	for _, source := range []manager.Runnable{componentrollout.Metrics(mgr.GetCache()), databaseserver.Metrics(mgr.GetCache())} {
		if err := mgr.Add(source); err != nil {
			return nil, nil, err
		}
	}
	// The sync reads namespaces and secrets through the cache; register those informers now so
	// they start (and sync) with the cache rather than with the first controller that needs them.
	for _, obj := range []client.Object{&corev1.Namespace{}, &corev1.Secret{}} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj, cache.BlockUntilSynced(false)); err != nil {
			return nil, nil, err
		}
	}
	sync := &templatemirror.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Store: store,
		Namespace: cfg.Secrets.TemplateNamespace, Interval: cfg.Secrets.SyncInterval.Duration,
		MaxDeletionPercent: cfg.Secrets.MaxDeletionPercent, Recorder: mgr.GetEventRecorder("landlord"),
		RecordOnly: cfg.Secrets.SharedSource == config.SharedFromNamespace,
	}
	if err := sync.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up template namespace sync: %w", err)
	}
	return sync, policies, nil
}

// logins converges tenant logins through the administrator connections the tenant controller
// uses.
type logins struct{ conns *database.Connections }

func (l logins) Ensure(ctx context.Context, server string, acct database.Account) error {
	p, err := l.conns.Provisioner(ctx, server)
	if err != nil {
		return err
	}
	return p.Ensure(ctx, acct)
}

// served reports whether the API server serves every one of Landlord's kinds named.
func served(mapper meta.RESTMapper, kinds ...string) (bool, error) {
	for _, kind := range kinds {
		_, err := mapper.RESTMapping(tenancyv1alpha1.GroupVersion.WithKind(kind).GroupKind(), tenancyv1alpha1.GroupVersion.Version)
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("discovering %s: %w", kind, err)
		}
	}
	return true, nil
}

// backupControllers registers the TenantBackup and TenantRestore controllers, with the backup
// store when one is configured (without one, each backup and restore waits, saying so).
func backupControllers(mgr manager.Manager, cfg *config.Config, secrets secret.TenantSecrets, conns *database.Connections, clk clock.WithTicker, slots *jobslots.Slots, requests, moves bool) error {
	if err := indexes.AddBackups(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	var store tenantbackup.Store
	if cfg.Backups.Enabled() {
		s, err := backup.OpenStore(context.Background(), cfg.Backups.Objects, cfg.Backups.Key, cfg.Backups.Keys)
		if err != nil {
			return fmt.Errorf("opening the backup store: %w", err)
		}
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			<-ctx.Done()
			return s.Close()
		})); err != nil {
			return err
		}
		store = s
	}
	recorder := mgr.GetEventRecorder("landlord")
	backups := &tenantbackup.BackupReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg, Recorder: recorder, Secrets: secrets, Store: store, Slots: slots}
	if err := backups.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up tenant backup controller: %w", err)
	}
	restores := &tenantbackup.RestoreReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg, Recorder: recorder,
		Secrets: secrets, Store: store, Logins: logins{conns}, Moves: moves}
	if err := restores.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up tenant restore controller: %w", err)
	}
	schedules := &tenantbackup.ScheduleReconciler{Client: mgr.GetClient(), Recorder: recorder, Clock: clk}
	// The age of each tenant's last good backup, read from this operator's cache at each scrape.
	tenantbackup.ReportBackupAges(mgr.GetClient())
	if err := schedules.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up tenant backup schedule controller: %w", err)
	}
	purges := &tenantbackup.PurgeReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg, Recorder: recorder, Store: store, Clock: clk}
	if s, ok := store.(*backup.Store); ok && cfg.Backups.ExportAtPurge != "" {
		exports, err := backup.OpenExporter(context.Background(), s, cfg.Backups.ExportAtPurge)
		if err != nil {
			return fmt.Errorf("opening backups.exportAtPurge: %w", err)
		}
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			<-ctx.Done()
			return exports.Close()
		})); err != nil {
			return err
		}
		purges.Exports = exports
	}
	if err := purges.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up tenant backup purge controller: %w", err)
	}
	if !requests {
		return nil
	}
	// The day's limits compare creation times, which are the API server's, with the time now:
	// the real clock's, never the schedules' (a test steps theirs).
	reqs := &tenantbackup.RequestReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg, Recorder: recorder, Clock: clock.RealClock{}, Enabled: store != nil}
	if err := reqs.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up tenant backup request controllers: %w", err)
	}
	return nil
}

// templateNamespaceReader reads the template namespace, which records the secret store the
// cluster's credentials go to. The default shard's cache holds it; it has no shard label, so the
// other shards' caches do not, and each watches it alone, by name.
func templateNamespaceReader(mgr manager.Manager, name, shard string) (client.Reader, error) {
	if shard == "" {
		return mgr.GetClient(), nil
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Namespace{}: {Field: k8sfields.OneTermEqualSelector("metadata.name", name)},
		},
		DefaultTransform:            cacheTransform(mgr.GetScheme()),
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the template namespace's cache: %w", err)
	}
	if _, err := c.GetInformer(context.Background(), &corev1.Namespace{}, cache.BlockUntilSynced(false)); err != nil {
		return nil, err
	}
	return c, mgr.Add(c)
}

// shardSelector selects the objects a shard caches: Landlord's, of the shard's tenants.
func shardSelector(shard string) (labels.Selector, error) {
	managed, err := labels.NewRequirement(tenancyv1alpha1.ManagedByLabel, selection.Equals, []string{tenancyv1alpha1.ManagedByValue})
	if err != nil {
		return nil, err
	}
	of, err := labels.NewRequirement(tenancyv1alpha1.ShardLabel, selection.DoesNotExist, nil)
	if shard != "" {
		of, err = labels.NewRequirement(tenancyv1alpha1.ShardLabel, selection.Equals, []string{shard})
	}
	if err != nil {
		return nil, fmt.Errorf("shard %q: %w", shard, err)
	}
	return labels.NewSelector().Add(*managed, *of), nil
}

// inClusterNamespaceFile holds the pod's namespace, where controller-runtime puts the leader
// election lease when no namespace is given.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaderElectionNamespace is where the shards' leases are: the one given, else the pod's own, else
// unknown (""), out of a cluster without leader election.
func leaderElectionNamespace(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	b, err := os.ReadFile(inClusterNamespaceFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the pod's namespace: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
