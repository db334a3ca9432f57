// Package config holds the operator's configuration file: its schema, its defaults and its
// validation. Everything has a default, so an empty file (or none) gives a working operator.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/component"
	"github.com/landlord-dev/landlord/internal/database"
)

// MaxNamespacePrefix keeps "<prefix><tenant name>" a valid namespace name: tenant names are at
// most 50 characters (enforced by the CRD) and namespace names at most 63.
const MaxNamespacePrefix = 13

// Config is the operator configuration file.
type Config struct {
	// NamespacePrefix is prepended to a tenant's name to make its namespace name.
	NamespacePrefix string `json:"namespacePrefix,omitempty"`

	// Defaults apply to tenants that do not set the field.
	Defaults Defaults `json:"defaults,omitempty"`

	// Network shapes every tenant's NetworkPolicies.
	Network Network `json:"network,omitempty"`

	// Client limits the operator's requests to the API server.
	Client Client `json:"client,omitempty"`

	// Controller bounds reconcile concurrency.
	Controller Controller `json:"controller,omitempty"`

	// Secrets configures the secret store and the template namespace.
	Secrets Secrets `json:"secrets,omitempty"`

	// Databases configures how tenant databases are provisioned.
	Databases Databases `json:"databases,omitempty"`

	// Components configures how application components are rendered.
	Components Components `json:"components,omitempty"`

	// Isolation configures what the admission policies allow tenants.
	Isolation Isolation `json:"isolation,omitempty"`

	// Backups configures per-tenant backups and restores.
	Backups Backups `json:"backups,omitempty"`

	// Usage configures how each tenant's usage is sampled for billing.
	Usage Usage `json:"usage,omitempty"`
}

// MaxBaseDomain keeps "<tenant name>.<base domain>" within the 253 characters of a DNS name:
// tenant names are at most 50 characters.
const MaxBaseDomain = 253 - 51

// Isolation configures tenant isolation.
type Isolation struct {
	// BaseDomain, when set, lets every tenant serve "<tenant>.<baseDomain>" besides its
	// spec.domains, so a tenant has a working hostname without anyone listing it.
	BaseDomain string `json:"baseDomain,omitempty"`
	// IngressClasses are the Ingress classes a tenant's Ingresses may name when its Tenant
	// lists none (spec.ingressClasses replaces them, it does not add to them). While a tenant
	// has a list, an Ingress naming no class is refused: the cluster's default class may be
	// any controller. Empty (the default) leaves the class to the tenant.
	IngressClasses []string `json:"ingressClasses,omitempty"`
	// PriorityClasses are the PriorityClasses tenants' pods may name. Empty (the default) allows
	// none: a tenant's pods run at the cluster's default priority, and none can take a system
	// class (system-node-critical, system-cluster-critical) to preempt other tenants' pods. A
	// cluster with a globalDefault PriorityClass lists it here: Kubernetes writes its name into
	// every pod that names none.
	PriorityClasses []string `json:"priorityClasses,omitempty"`
	// Tolerations are the taints tenants' pods may tolerate besides their own node pool's and
	// failed nodes' (node.kubernetes.io/not-ready and unreachable, with effect NoExecute, as
	// Kubernetes tolerates them on every pod), each written as kubectl writes a taint: "key" or
	// "key=value", then ":Effect" for that effect only. "key" tolerates the taint with operator
	// Exists, "key=value" with Equal. Empty (the default) allows no other: in particular not the
	// control plane's taint.
	Tolerations []string `json:"tolerations,omitempty"`
	// MaxTerminationGracePeriod is the longest termination grace period a tenant's pod may ask
	// for (terminationGracePeriodSeconds, in whole seconds; a preStop hook runs within it). A
	// drain of a node waits that long for each of its pods, so it bounds how long one tenant
	// can hold the drain of a node it shares with others. Default 5m; from 30s (what Kubernetes
	// gives a pod that names none) to 24h.
	MaxTerminationGracePeriod metav1.Duration `json:"maxTerminationGracePeriod,omitempty"`
	// Audit is what the operator does with objects in tenant namespaces that break an isolation
	// policy, found when it starts and whenever it puts back a policy that was missing: Delete
	// (the default) deletes those that reach across tenants and reports the rest, Report only
	// reports. Each finding is a Warning event on the Tenant and a count in
	// landlord_policy_audit_findings_total.
	Audit AuditAction `json:"audit,omitempty"`
	// TrustedPrincipals are the platform's own tools that Landlord's guards over its labels,
	// annotations and the objects it manages let through, as they let the operator and
	// Kubernetes' own controllers through: a backup tool restoring tenant namespaces with their
	// labels (Velero), a policy engine that copies labels or generates objects (Kyverno,
	// Gatekeeper's mutation). Each is a User, a Group or a ServiceAccount, written as in a
	// RoleBinding's subjects. They are not let past the rules over what a tenant's own objects
	// may do (hosts, Services, Ingresses, scheduling, NetworkPolicy peers). Never a principal a
	// tenant could be or become: a ServiceAccount in a tenant namespace, the groups every user
	// or ServiceAccount is in, or anonymous requests are refused.
	TrustedPrincipals []rbacv1.Subject `json:"trustedPrincipals,omitempty"`
}

// DefaultPlatformNamespaces are the namespaces network.platformNamespaceSelector lets reach
// tenants' pods by default: the ingress controller's and monitoring's.
var DefaultPlatformNamespaces = []string{"ingress-nginx", "monitoring"}

// DisruptionBudgetsQuota is the quota key counting a namespace's PodDisruptionBudgets.
const DisruptionBudgetsQuota corev1.ResourceName = "count/poddisruptionbudgets.policy"

// RequestQuotas are the quota keys counting a namespace's BackupRequests and RestoreRequests.
var RequestQuotas = []corev1.ResourceName{"count/backuprequests.tenancy.landlord.dev", "count/restorerequests.tenancy.landlord.dev"}

// DefaultMaxTerminationGracePeriod is isolation.maxTerminationGracePeriod's default: long enough
// for a server to drain its connections, short enough that a node's drain ends within minutes.
const DefaultMaxTerminationGracePeriod = 5 * time.Minute

// MinTerminationGracePeriodBound and MaxTerminationGracePeriodBound bound
// isolation.maxTerminationGracePeriod itself: Kubernetes gives a pod that names none 30 seconds,
// and the operator stops a Frozen tenant's pods with as long.
const (
	MinTerminationGracePeriodBound = 30 * time.Second
	MaxTerminationGracePeriodBound = 24 * time.Hour
)

// MaxIngressClasses bounds isolation.ingressClasses, as the CRD bounds a Tenant's own list.
const MaxIngressClasses = 16

// DefaultDomain is the domain every tenant may serve under the base domain, or "" without one.
func (c *Config) DefaultDomain(tenant string) string {
	if c.Isolation.BaseDomain == "" {
		return ""
	}
	return tenant + "." + c.Isolation.BaseDomain
}

// Components configures component rendering.
type Components struct {
	// DefaultValues are values per component name, between the template's defaults and the
	// tenant's values (an image registry mirror, a log level for the whole fleet).
	DefaultValues map[string]map[string]any `json:"defaultValues,omitempty"`
	// AllowedKinds are the kinds a component may render into a tenant namespace; unset, the
	// defaults of component.DefaultAllowedKinds. Kinds the tenant's isolation is built of (RBAC,
	// NetworkPolicy, ResourceQuota, LimitRange, admission policies, Namespace, Landlord's own) can
	// never be listed, and cluster-scoped kinds are refused when rendered. A kind added here also
	// needs a grant for the operator's ServiceAccount.
	AllowedKinds []metav1.GroupKind `json:"allowedKinds,omitempty"`
	// Render bounds each render of a component template.
	Render RenderLimits `json:"render,omitempty"`
}

// RenderLimits bound one render of a component template, so a careless or hostile template
// cannot hold a worker or the operator's memory; a render past one stalls its tenant.
type RenderLimits struct {
	// Timeout bounds the render's wall-clock time.
	Timeout metav1.Duration `json:"timeout,omitempty"`
	// MaxOutputBytes bounds the rendered manifests, and any one value a template function takes
	// or returns.
	MaxOutputBytes int `json:"maxOutputBytes,omitempty"`
	// MaxIterations bounds the range iterations and template calls of one render.
	MaxIterations int `json:"maxIterations,omitempty"`
}

// Limits are the render limits as the renderer takes them.
func (r RenderLimits) Limits() component.Limits {
	return component.Limits{Timeout: r.Timeout.Duration, MaxOutputBytes: r.MaxOutputBytes, MaxIterations: r.MaxIterations}
}

// AllowedComponentKinds are components.allowedKinds as the renderer takes them.
func (c *Config) AllowedComponentKinds() []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(c.Components.AllowedKinds))
	for _, gk := range c.Components.AllowedKinds {
		out = append(out, schema.GroupKind{Group: gk.Group, Kind: gk.Kind})
	}
	return out
}

// Databases configures database provisioning.
type Databases struct {
	// CredentialsNamespace holds the DatabaseServers' admin credential Secrets; it is the
	// operator's own namespace, which tenants cannot read.
	CredentialsNamespace string `json:"credentialsNamespace,omitempty"`
	// CheckInterval is how often each DatabaseServer is logged in to, to report reachability.
	CheckInterval metav1.Duration `json:"checkInterval,omitempty"`
	// Timeout bounds one provisioning call (connect, create, grant) to a server.
	Timeout metav1.Duration `json:"timeout,omitempty"`
	// Naming is how new databases and logins are named: "tenant" (the default),
	// <namePrefix><tenant>_<database>, or "opaque", <namePrefix> and a digest of the tenant's UID
	// and the database's name, so that the other logins of a shared server, which can read its
	// catalog, never see a customer's tenant name. Only databases created afterwards are named
	// this way: an existing database keeps the names recorded for it.
	Naming database.Naming `json:"naming,omitempty"`
}

// Secrets configures where secrets live at rest and how shared ones reach the cluster.
type Secrets struct {
	// TemplateNamespace is the reserved namespace holding shared secrets, mirrored from the store
	// (or written by another tool, see SharedSource) and copied into every tenant.
	TemplateNamespace string `json:"templateNamespace,omitempty"`
	// SharedSource is what writes the template namespace's Secrets: "Store" (the default), Landlord
	// mirroring the store's shared secrets; or "Namespace", another tool (External Secrets
	// Operator, Sealed Secrets, Flux with SOPS), with Landlord writing none of them. Either way
	// Landlord copies those labelled tenancy.landlord.dev/shared into tenants, never rewrites or
	// removes a template Secret it did not write, and keeps tenants' database credentials in the
	// store.
	SharedSource SharedSource `json:"sharedSource,omitempty"`
	// SyncInterval is how often the template namespace is brought in line with the store (with
	// sharedSource Namespace: how often the store the namespace records is checked).
	SyncInterval metav1.Duration `json:"syncInterval,omitempty"`
	// MaxDeletionPercent is the largest share of the template namespace's shared secrets one sync
	// may remove; a sync that would remove more removes none and reports it. Removing one secret
	// is always allowed.
	MaxDeletionPercent int `json:"maxDeletionPercent,omitempty"`
	// Store is the secret store.
	Store SecretStore `json:"store,omitempty"`
}

// Secret store backends.
const (
	StoreBackendFile = "file"
	StoreBackendGCS  = "gcs"
	StoreBackendURL  = "url"
)

// SecretStore selects and configures the secret store backend. Cloud credentials come from the
// environment (Google's Application Default Credentials, AWS's and Azure's default credential
// chains, Vault's VAULT_ADDR and VAULT_TOKEN), never from this file.
type SecretStore struct {
	// Backend is "file" (a local directory, the default), "gcs" (Cloud Storage + Cloud KMS) or
	// "url" (a bucket and a key-encryption key of any cloud, each named by URL).
	Backend string          `json:"backend,omitempty"`
	File    FileSecretStore `json:"file,omitempty"`
	GCS     GCSSecretStore  `json:"gcs,omitempty"`
	URL     URLSecretStore  `json:"url,omitempty"`
	// Timeout bounds every call to the store (a listing with what it reads, a write, a delete),
	// so an outage that hangs rather than fails holds no worker.
	Timeout metav1.Duration `json:"timeout,omitempty"`
}

// FileSecretStore is a local directory and the key that encrypts it.
type FileSecretStore struct {
	Dir string `json:"dir,omitempty"`
	// KeyFile holds the local key; created (mode 0600) on first use. Default: <dir>/key.json.
	KeyFile string `json:"keyFile,omitempty"`
}

// GCSSecretStore is a bucket and the Cloud KMS key that encrypts its objects.
type GCSSecretStore struct {
	Bucket string `json:"bucket,omitempty"`
	// Prefix is prepended to object names, e.g. "prod/".
	Prefix string `json:"prefix,omitempty"`
	// KMSKey is projects/P/locations/L/keyRings/R/cryptoKeys/K.
	KMSKey string `json:"kmsKey,omitempty"`
}

// URLSecretStore is a bucket and the key-encryption key that encrypts its objects, each named by
// URL as the Go CDK (gocloud.dev) reads them.
type URLSecretStore struct {
	// Objects is where the records are kept: s3://BUCKET, azblob://CONTAINER, gs://BUCKET or
	// file:///DIR, with the provider's query parameters (s3://b?region=eu-west-1, and endpoint=
	// and use_path_style=true for an S3-compatible server) and prefix= for a folder in it.
	Objects string `json:"objects,omitempty"`
	// Key is the key-encryption key that wraps each record's data key: awskms://KEY (a key ID,
	// alias or, as awskms:///ARN, an ARN; ?region=; every decrypt names this key, so an alias
	// pointed at another key makes the records unreadable: rotate with AWS's automatic rotation,
	// which keeps the key, or move with landlordctl secrets migrate --to-key),
	// azurekeyvault://VAULT.vault.azure.net/keys/KEY/VERSION (the version is required),
	// gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K or hashivault://KEY (Vault's
	// transit engine).
	Key string `json:"key,omitempty"`
}

// ObjectsURLSchemes are the schemes secrets.store.url.objects takes.
var ObjectsURLSchemes = []string{"s3", "azblob", "gs", "file"}

// KeyURLSchemes are the schemes secrets.store.url.key takes.
var KeyURLSchemes = []string{"awskms", "azurekeyvault", "gcpkms", "hashivault"}

// CheckObjectsURL says what is wrong with a secret store objects URL, naming the part at fault,
// or returns nil.
func CheckObjectsURL(raw string) error {
	u, err := parseStoreURL(raw, ObjectsURLSchemes)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme == "file" && u.Host != "" && u.Host != "localhost":
		return fmt.Errorf("the host %q of a file URL is not allowed: give an absolute path, file:///DIR", u.Host)
	case u.Scheme == "file" && strings.Trim(u.Path, "/") == "":
		return errors.New("the directory (the URL's path) is missing: file:///DIR")
	case u.Scheme != "file" && u.Host == "":
		return fmt.Errorf("the bucket (the URL's host) is missing: %s://BUCKET", u.Scheme)
	case u.Scheme != "file" && strings.Trim(u.Path, "/") != "":
		return fmt.Errorf("the path %q is not allowed: name a folder in the bucket with ?prefix=%s/", u.Path, strings.Trim(u.Path, "/"))
	}
	return nil
}

// CheckKeyURL says what is wrong with a key-encryption key URL, naming the part at fault, or
// returns nil.
func CheckKeyURL(raw string) error {
	u, err := parseStoreURL(raw, KeyURLSchemes)
	if err != nil {
		return err
	}
	if strings.Trim(u.Host+u.Path, "/") == "" {
		return fmt.Errorf("the key (the URL's host and path) is missing: %s://KEY", u.Scheme)
	}
	// A Key Vault key named without its version is its newest version, for decrypting too: a
	// rotation would make every record unreadable. The version is named, as a Cloud KMS key's
	// versions are kept by the key itself.
	if segments := strings.Split(strings.Trim(u.Path, "/"), "/"); u.Scheme == "azurekeyvault" && (len(segments) != 3 || segments[0] != "keys" || segments[2] == "") {
		return fmt.Errorf("the key's version is missing: azurekeyvault://VAULT.vault.azure.net/keys/KEY/VERSION (without one, Key Vault decrypts with the newest version, and a rotation would leave every record unreadable)")
	}
	return nil
}

func parseStoreURL(raw string, schemes []string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the URL, which may hold what must not be printed.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("is not a URL: %v", err)
	}
	if u.User != nil {
		return nil, errors.New("credentials (user:password@) are not allowed in the URL: they come from the environment")
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return u, nil
		}
	}
	return nil, fmt.Errorf("the scheme %q is not one of %s", u.Scheme, strings.Join(schemes, ", "))
}

// Defaults are the per-tenant settings used when a tenant leaves them empty.
type Defaults struct {
	// Quota is the ResourceQuota hard list; a tenant's spec.quota overrides it key by key.
	Quota corev1.ResourceList `json:"quota,omitempty"`
	// Limits are the LimitRange container values; a tenant's spec.limits overrides them key by key.
	Limits tenancyv1alpha1.Limits `json:"limits,omitempty"`
	// PodSecurity is the enforced Pod Security Standards level.
	PodSecurity tenancyv1alpha1.PodSecurityLevel `json:"podSecurity,omitempty"`
	// PodSecurityVersion pins the Pod Security Standards version ("latest" or "v1.37").
	PodSecurityVersion string `json:"podSecurityVersion,omitempty"`
}

// Client configures the operator's API clients. Each client keeps one token bucket per resource
// kind (controller-runtime builds a REST client per kind), so QPS and Burst bound each kind's
// requests; the API server's priority and fairness bounds the total.
type Client struct {
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// Urgent limits a second client, for the writes a change or a customer is waiting on: the
	// copies one shared-secret change makes in every tenant namespace, and claim binds. With
	// buckets of their own they never queue behind creating tenants or refilling a pool.
	Urgent ClientLimits `json:"urgent,omitempty"`
	// Yield orders the two: while a claim is being bound, the background writes (creating
	// tenants, refilling a pool, status) start only while fewer than inFlight are in flight,
	// each waiting at most maxWait, so the API server has room for the customer's bind.
	Yield Yield `json:"yield,omitempty"`
}

// MaxYieldWait is the longest client.yield.maxWait.
const MaxYieldWait = 10 * time.Second

// Yield is how far background writes give way to a customer's bind.
type Yield struct {
	// InFlight is how many background writes may be in flight while a claim is being bound, at
	// least 1 (0 is the default, 4); -1 turns yielding off.
	InFlight int `json:"inFlight,omitempty"`
	// MaxWait bounds how long one background write waits, so a stream of signups slows tenant
	// creation without stopping it: at most 10s (0 is the default, 1s).
	MaxWait metav1.Duration `json:"maxWait,omitempty"`
}

// ClientLimits are one client's requests per second and burst, per resource kind.
type ClientLimits struct {
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
}

// Overrides are command-line settings that take precedence over the configuration file; zero
// leaves the file's value.
type Overrides struct {
	QPS        float64
	Burst      int
	Concurrent int
}

// Apply returns c with the overrides set.
func (o Overrides) Apply(c Config) Config {
	if o.QPS > 0 {
		c.Client.QPS = float32(o.QPS)
	}
	if o.Burst > 0 {
		c.Client.Burst = o.Burst
	}
	if o.Concurrent > 0 {
		c.Controller.MaxConcurrentReconciles = o.Concurrent
	}
	return c
}

// Controller configures reconcile concurrency.
type Controller struct {
	// MaxConcurrentReconciles bounds how many tenants are reconciled at once, so a global event
	// cannot flood the API server.
	MaxConcurrentReconciles int `json:"maxConcurrentReconciles,omitempty"`
	// CacheSyncTimeout bounds how long start-up waits for the informer caches, and how long a
	// reconcile waits for the informer of a kind a component renders for the first time.
	CacheSyncTimeout metav1.Duration `json:"cacheSyncTimeout,omitempty"`
	// ReconcileTimeout bounds one reconcile of any object: a call that never answers ends it,
	// and it is retried with backoff, rather than holding a worker for ever.
	ReconcileTimeout metav1.Duration `json:"reconcileTimeout,omitempty"`
	// Identity is the username the operator's requests carry (its ServiceAccount, as
	// system:serviceaccount:<namespace>:<name>): the one user Landlord's admission policies let
	// set its labels, bind claims and write outside tenant namespaces. It is configuration, never
	// learned: a process the API server knows by another name refuses to start, so a second
	// process run by someone else cannot rewrite who the policies exempt.
	Identity string `json:"identity,omitempty"`
}

// DefaultIdentity is the operator's identity in the shipped install (config/default and the Helm
// chart): the ServiceAccount landlord-controller-manager in landlord-system.
const DefaultIdentity = "system:serviceaccount:landlord-system:landlord-controller-manager"

// Default returns the built-in configuration.
func Default() Config {
	c := Config{}
	c.applyDefaults()
	return c
}

// Load reads a configuration file; an empty path gives the defaults. Unknown fields are errors,
// so a typo never silently falls back to a default.
func Load(path string) (Config, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading operator config: %w", err)
	}
	return Parse(data)
}

// Parse decodes, defaults and validates a configuration document.
func Parse(data []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Config{}, fmt.Errorf("parsing operator config: %w", err)
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("invalid operator config: %w", err)
	}
	return c, nil
}

func (c *Config) applyDefaults() {
	if c.NamespacePrefix == "" {
		c.NamespacePrefix = "tenant-"
	}
	if c.Defaults.Quota == nil {
		c.Defaults.Quota = corev1.ResourceList{
			corev1.ResourceRequestsCPU:            resource.MustParse("4"),
			corev1.ResourceRequestsMemory:         resource.MustParse("8Gi"),
			corev1.ResourceLimitsCPU:              resource.MustParse("8"),
			corev1.ResourceLimitsMemory:           resource.MustParse("16Gi"),
			corev1.ResourcePods:                   resource.MustParse("50"),
			corev1.ResourceServices:               resource.MustParse("20"),
			corev1.ResourceSecrets:                resource.MustParse("100"),
			corev1.ResourceConfigMaps:             resource.MustParse("100"),
			corev1.ResourcePersistentVolumeClaims: resource.MustParse("10"),
			corev1.ResourceRequestsStorage:        resource.MustParse("100Gi"),
		}
	}
	// One PodDisruptionBudget per tenant namespace, added key by key to a quota of one's own: two
	// budgets over one pod make every eviction of it fail, and with it every drain of its node,
	// and admission cannot see a namespace's other budgets. A platform whose components render
	// more budgets raises it (defaults.quota, or a tenant's spec.quota), each selecting pods of
	// its own.
	if _, ok := c.Defaults.Quota[DisruptionBudgetsQuota]; !ok {
		c.Defaults.Quota[DisruptionBudgetsQuota] = resource.MustParse("1")
	}
	// A tenant's own requests for backups and restores are answered one by one, each refused
	// one read from the API server: a namespace holds a bounded number of them, whatever the
	// platform's daily limits.
	for _, key := range RequestQuotas {
		if _, ok := c.Defaults.Quota[key]; !ok {
			c.Defaults.Quota[key] = resource.MustParse("20")
		}
	}
	if c.Isolation.MaxTerminationGracePeriod.Duration == 0 {
		c.Isolation.MaxTerminationGracePeriod.Duration = DefaultMaxTerminationGracePeriod
	}
	l := &c.Defaults.Limits
	if l.Default == nil {
		l.Default = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("500m"),
			corev1.ResourceMemory: resource.MustParse("512Mi"),
		}
	}
	if l.DefaultRequest == nil {
		l.DefaultRequest = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		}
	}
	if l.Max == nil {
		l.Max = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("8Gi"),
		}
	}
	// Scratch space (emptyDir volumes, logs, writable layers) is bounded key by key, so a
	// configuration that lists cpu and memory only bounds it too: without a limit one tenant's
	// pod can fill a shared node's disk and have every pod on it evicted.
	for list, q := range map[*corev1.ResourceList]string{&l.Default: "2Gi", &l.DefaultRequest: "256Mi", &l.Max: "16Gi"} {
		if _, ok := (*list)[corev1.ResourceEphemeralStorage]; !ok {
			(*list)[corev1.ResourceEphemeralStorage] = resource.MustParse(q)
		}
	}
	if c.Defaults.PodSecurity == "" {
		c.Defaults.PodSecurity = tenancyv1alpha1.PodSecurityRestricted
	}
	if c.Defaults.PodSecurityVersion == "" {
		c.Defaults.PodSecurityVersion = "v1.37"
	}
	if c.Isolation.Audit == "" {
		c.Isolation.Audit = AuditDelete
	}
	if c.Network.PlatformNamespaceSelector == nil {
		// By name, the label Kubernetes sets on every namespace and no one can change: a label
		// anyone who may edit a namespace can add would let that namespace reach every tenant.
		c.Network.PlatformNamespaceSelector = &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: DefaultPlatformNamespaces,
			}},
		}
	}
	if c.Network.DNS.NamespaceSelector == nil {
		c.Network.DNS.NamespaceSelector = &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"},
		}
	}
	if c.Network.DNS.PodSelector == nil {
		c.Network.DNS.PodSelector = &metav1.LabelSelector{
			MatchLabels: map[string]string{"k8s-app": "kube-dns"},
		}
	}
	if c.Network.EgressCIDRs == nil {
		// The internet, but not the private ranges where other tenants' pods and the cluster's
		// own services live; database servers are added here by address.
		c.Network.EgressCIDRs = []EgressCIDR{
			{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"}},
		}
	}
	// Creating tenants writes seven NetworkPolicies each: at 100 per second this kind's bucket,
	// not the API server, bounded a mass create (1,000 tenants in 65 s, against 29 s for a
	// plain client writing the same objects as fast as the server takes them). At 300 the API
	// server bounds it again, and its priority and fairness protects it as from any client.
	if c.Client.QPS == 0 {
		c.Client.QPS = 300
	}
	if c.Client.Burst == 0 {
		c.Client.Burst = 1000
	}
	// High enough that the API server's priority and fairness, not this client, bounds a
	// shared-secret change: one copy per tenant, at most maxConcurrentReconciles in flight.
	if c.Client.Urgent.QPS == 0 {
		c.Client.Urgent.QPS = 1000
	}
	if c.Client.Urgent.Burst == 0 {
		c.Client.Urgent.Burst = 2000
	}
	if c.Client.Yield.InFlight == 0 {
		c.Client.Yield.InFlight = 4
	}
	if c.Client.Yield.MaxWait.Duration == 0 {
		c.Client.Yield.MaxWait.Duration = time.Second
	}
	if c.Controller.MaxConcurrentReconciles == 0 {
		// A reconcile mostly waits on API round trips: creating 1,000 tenants took 60 s at 8
		// workers and 37 s at 32 on the benchmark's 2-core control plane, which 32 keeps busy
		// (a plain client writing the same objects: 29 s). Database servers see at most 4 of
		// Landlord's connections each however many reconciles run.
		c.Controller.MaxConcurrentReconciles = 32
	}
	if c.Databases.CredentialsNamespace == "" {
		c.Databases.CredentialsNamespace = "landlord-system"
	}
	if c.Databases.CheckInterval.Duration == 0 {
		c.Databases.CheckInterval.Duration = time.Minute
	}
	if c.Databases.Timeout.Duration == 0 {
		c.Databases.Timeout.Duration = 30 * time.Second
	}
	if c.Databases.Naming == "" {
		c.Databases.Naming = database.NamingTenant
	}
	if c.Secrets.TemplateNamespace == "" {
		c.Secrets.TemplateNamespace = "landlord-templates"
	}
	if c.Secrets.SharedSource == "" {
		c.Secrets.SharedSource = SharedFromStore
	}
	if c.Secrets.SyncInterval.Duration == 0 {
		c.Secrets.SyncInterval.Duration = time.Minute
	}
	if c.Secrets.Store.Backend == "" {
		c.Secrets.Store.Backend = StoreBackendFile
	}
	if c.Secrets.Store.File.Dir == "" {
		c.Secrets.Store.File.Dir = "/var/lib/landlord/secrets"
	}
	if c.Secrets.Store.File.KeyFile == "" {
		c.Secrets.Store.File.KeyFile = filepath.Join(c.Secrets.Store.File.Dir, "key.json")
	}
	if c.Controller.CacheSyncTimeout.Duration == 0 {
		c.Controller.CacheSyncTimeout.Duration = 2 * time.Minute
	}
	if c.Controller.Identity == "" {
		c.Controller.Identity = DefaultIdentity
	}
	if c.Controller.ReconcileTimeout.Duration == 0 {
		// Long enough for a tenant's every database call (each bounded by databases.timeout) and
		// its writes; a reconcile that takes longer is waiting on something that is not answering.
		c.Controller.ReconcileTimeout.Duration = 5 * time.Minute
	}
	if c.Secrets.MaxDeletionPercent == 0 {
		c.Secrets.MaxDeletionPercent = 25
	}
	c.Components.applyDefaults()
	c.Backups.applyDefaults(c.Databases.CredentialsNamespace)
	c.Usage.applyDefaults()
	if c.Secrets.Store.Timeout.Duration == 0 {
		// A listing reads and decrypts every shared secret: about 10 ms each from Cloud Storage
		// and Cloud KMS, so a minute holds thousands.
		c.Secrets.Store.Timeout.Duration = time.Minute
	}
}

// Validate reports every invalid field, named by its path in the file.
func (c *Config) Validate() error {
	var errs []error
	if len(c.NamespacePrefix) > MaxNamespacePrefix {
		errs = append(errs, fmt.Errorf("namespacePrefix: %q is longer than %d characters", c.NamespacePrefix, MaxNamespacePrefix))
	}
	if msgs := validation.IsDNS1123Label(c.NamespacePrefix + "x"); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespacePrefix: %q does not make valid namespace names: %v", c.NamespacePrefix, msgs))
	}
	switch c.Defaults.PodSecurity {
	case tenancyv1alpha1.PodSecurityBaseline, tenancyv1alpha1.PodSecurityRestricted:
	default:
		errs = append(errs, fmt.Errorf("defaults.podSecurity: %q is not baseline or restricted", c.Defaults.PodSecurity))
	}
	// Pod Security Admission rejects a namespace whose version label it cannot parse, which
	// would stop every tenant namespace from being written.
	if !podSecurityVersion.MatchString(c.Defaults.PodSecurityVersion) {
		errs = append(errs, fmt.Errorf("defaults.podSecurityVersion: %q is not latest or a version such as v1.37", c.Defaults.PodSecurityVersion))
	}
	if d := c.Isolation.BaseDomain; d != "" {
		if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("isolation.baseDomain: %q is not a DNS name: %v", d, msgs))
		} else if len(d) > MaxBaseDomain {
			errs = append(errs, fmt.Errorf("isolation.baseDomain: %q is longer than %d characters", d, MaxBaseDomain))
		}
	}
	if len(c.Isolation.IngressClasses) > MaxIngressClasses {
		errs = append(errs, fmt.Errorf("isolation.ingressClasses: %d classes, more than %d", len(c.Isolation.IngressClasses), MaxIngressClasses))
	}
	seenClasses := map[string]bool{}
	for i, class := range c.Isolation.IngressClasses {
		if msgs := validation.IsDNS1123Subdomain(class); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("isolation.ingressClasses[%d]: %q is not an IngressClass name: %v", i, class, msgs))
		}
		if seenClasses[class] {
			errs = append(errs, fmt.Errorf("isolation.ingressClasses[%d]: %q is listed twice", i, class))
		}
		seenClasses[class] = true
	}
	errs = append(errs, c.Isolation.validateScheduling()...)
	if d := c.Isolation.MaxTerminationGracePeriod.Duration; d < MinTerminationGracePeriodBound || d > MaxTerminationGracePeriodBound || d%time.Second != 0 {
		errs = append(errs, fmt.Errorf("isolation.maxTerminationGracePeriod: %s is not a whole number of seconds between %s and %s", d, MinTerminationGracePeriodBound, MaxTerminationGracePeriodBound))
	}
	errs = append(errs, c.Isolation.validateAudit()...)
	errs = append(errs, c.Isolation.validateTrusted(c.NamespacePrefix)...)
	errs = append(errs, c.Network.validate()...)
	if c.Client.QPS < 0 || c.Client.Burst < 0 {
		errs = append(errs, errors.New("client: qps and burst must not be negative"))
	}
	if c.Client.Urgent.QPS < 0 || c.Client.Urgent.Burst < 0 {
		errs = append(errs, errors.New("client.urgent: qps and burst must not be negative"))
	}
	if c.Client.Yield.InFlight < -1 {
		errs = append(errs, fmt.Errorf("client.yield.inFlight: %d is neither a count nor -1 (off)", c.Client.Yield.InFlight))
	}
	if d := c.Client.Yield.MaxWait.Duration; d < 0 || d > MaxYieldWait {
		// Longer, and a hung bind would hold events, finalizers and status writes back for
		// that long each.
		errs = append(errs, fmt.Errorf("client.yield.maxWait: %s is not between 0 and %s", d, MaxYieldWait))
	}
	if c.Controller.MaxConcurrentReconciles < 0 {
		errs = append(errs, errors.New("controller.maxConcurrentReconciles must not be negative"))
	}
	if msgs := validation.IsDNS1123Label(c.Databases.CredentialsNamespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("databases.credentialsNamespace: %q is not a namespace name: %v", c.Databases.CredentialsNamespace, msgs))
	}
	if c.Databases.CheckInterval.Duration < time.Second {
		errs = append(errs, fmt.Errorf("databases.checkInterval: %s is shorter than 1s", c.Databases.CheckInterval.Duration))
	}
	if c.Databases.Timeout.Duration < time.Second {
		errs = append(errs, fmt.Errorf("databases.timeout: %s is shorter than 1s", c.Databases.Timeout.Duration))
	}
	switch c.Databases.Naming {
	case database.NamingTenant, database.NamingOpaque:
	default:
		errs = append(errs, fmt.Errorf("databases.naming: %q is not %s or %s", c.Databases.Naming, database.NamingTenant, database.NamingOpaque))
	}
	if msgs := validation.IsDNS1123Label(c.Secrets.TemplateNamespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("secrets.templateNamespace: %q is not a namespace name: %v", c.Secrets.TemplateNamespace, msgs))
	}
	errs = append(errs, c.validateSharedSource()...)
	if c.Secrets.SyncInterval.Duration < time.Second {
		errs = append(errs, errors.New("secrets.syncInterval must be at least 1s"))
	}
	if p := c.Secrets.MaxDeletionPercent; p < 1 || p > 100 {
		errs = append(errs, fmt.Errorf("secrets.maxDeletionPercent: %d is not between 1 and 100", p))
	}
	if c.Secrets.Store.Timeout.Duration < time.Second {
		errs = append(errs, fmt.Errorf("secrets.store.timeout: %s is shorter than 1s", c.Secrets.Store.Timeout.Duration))
	}
	if c.Controller.ReconcileTimeout.Duration < 10*time.Second {
		errs = append(errs, fmt.Errorf("controller.reconcileTimeout: %s is shorter than 10s", c.Controller.ReconcileTimeout.Duration))
	}
	errs = append(errs, c.Components.validate()...)
	errs = append(errs, c.Secrets.Store.validate()...)
	errs = append(errs, c.Backups.validate(c.NamespacePrefix, c.Secrets.TemplateNamespace)...)
	errs = append(errs, c.Backups.apartFrom(c.Secrets.Store)...)
	errs = append(errs, c.Usage.validate()...)
	return errors.Join(errs...)
}

func (st SecretStore) validate() []error {
	var errs []error
	switch st.Backend {
	case StoreBackendFile:
	case StoreBackendGCS:
		if st.GCS.Bucket == "" {
			errs = append(errs, errors.New("secrets.store.gcs.bucket is required for the gcs backend"))
		}
		if !kmsKeyName.MatchString(st.GCS.KMSKey) {
			errs = append(errs, fmt.Errorf("secrets.store.gcs.kmsKey: %q is not projects/P/locations/L/keyRings/R/cryptoKeys/K", st.GCS.KMSKey))
		}
	case StoreBackendURL:
		if err := CheckObjectsURL(st.URL.Objects); err != nil {
			errs = append(errs, fmt.Errorf("secrets.store.url.objects: %w", err))
		}
		if err := CheckKeyURL(st.URL.Key); err != nil {
			errs = append(errs, fmt.Errorf("secrets.store.url.key: %w", err))
		}
	default:
		errs = append(errs, fmt.Errorf("secrets.store.backend: %q is not file, gcs or url", st.Backend))
	}
	return errs
}

func (c *Components) applyDefaults() {
	if c.AllowedKinds == nil {
		for _, gk := range component.DefaultAllowedKinds() {
			c.AllowedKinds = append(c.AllowedKinds, metav1.GroupKind{Group: gk.Group, Kind: gk.Kind})
		}
	}
	def := component.DefaultLimits()
	if c.Render.Timeout.Duration == 0 {
		c.Render.Timeout.Duration = def.Timeout
	}
	if c.Render.MaxOutputBytes == 0 {
		c.Render.MaxOutputBytes = def.MaxOutputBytes
	}
	if c.Render.MaxIterations == 0 {
		c.Render.MaxIterations = def.MaxIterations
	}
}

// Bounds of the render limits: below them real templates fail, above them one template can take
// a worker or the operator's memory.
const (
	minRenderTimeout     = 100 * time.Millisecond
	maxRenderTimeout     = time.Minute
	minRenderOutputBytes = 1 << 10
	maxRenderOutputBytes = 64 << 20
	minRenderIterations  = 1_000
)

func (c *Components) validate() []error {
	var errs []error
	for i, gk := range c.AllowedKinds {
		name := gk.Kind
		if gk.Group != "" {
			name += "." + gk.Group
		}
		switch {
		case gk.Kind == "":
			errs = append(errs, fmt.Errorf("components.allowedKinds[%d]: kind is required", i))
		case component.NeverAllowed(schema.GroupKind{Group: gk.Group, Kind: gk.Kind}) != "":
			errs = append(errs, fmt.Errorf("components.allowedKinds[%d]: %s can never be allowed: %s", i, name, component.NeverAllowed(schema.GroupKind{Group: gk.Group, Kind: gk.Kind})))
		}
	}
	if d := c.Render.Timeout.Duration; d < minRenderTimeout || d > maxRenderTimeout {
		errs = append(errs, fmt.Errorf("components.render.timeout: %s is not between %s and %s", d, minRenderTimeout, maxRenderTimeout))
	}
	if n := c.Render.MaxOutputBytes; n < minRenderOutputBytes || n > maxRenderOutputBytes {
		errs = append(errs, fmt.Errorf("components.render.maxOutputBytes: %d is not between %d and %d", n, minRenderOutputBytes, maxRenderOutputBytes))
	}
	if n := c.Render.MaxIterations; n < minRenderIterations {
		errs = append(errs, fmt.Errorf("components.render.maxIterations: %d is less than %d", n, minRenderIterations))
	}
	return errs
}

var podSecurityVersion = regexp.MustCompile(`^(latest|v1\.(0|[1-9][0-9]*))$`)

var kmsKeyName = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$`)

// NamespaceName is the namespace of the named tenant.
func (c *Config) NamespaceName(tenant string) string {
	return c.NamespacePrefix + tenant
}
