package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DatabaseEngine is a database server's SQL dialect.
// +kubebuilder:validation:Enum=postgres;mysql
type DatabaseEngine string

const (
	EnginePostgres DatabaseEngine = "postgres"
	// EngineMySQL is MySQL or MariaDB.
	EngineMySQL DatabaseEngine = "mysql"
)

// DatabaseTLSMode is how connections to the server are encrypted.
// +kubebuilder:validation:Enum=disable;require;verify-full
type DatabaseTLSMode string

// SecretReference names a Secret in the operator's namespace.
type SecretReference struct {
	// Name of the Secret. It holds the keys "username" and "password".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// DefaultMaxConcurrentJobs is how many migration Jobs run against a server at once when its
// spec.maxConcurrentJobs is unset.
const DefaultMaxConcurrentJobs = 4

// DatabaseServerSpec is a shared database server on which tenant databases are placed.
type DatabaseServerSpec struct {
	// Engine is the server's SQL dialect: postgres, or mysql (MySQL and MariaDB).
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="engine is immutable: the databases on the server were created for it"
	Engine DatabaseEngine `json:"engine"`

	// Host is the server's DNS name or address, as both Landlord and the tenants reach it. It
	// cannot change while tenants have databases on the server (nor can port, tls and
	// adminCredentials): their credentials, and the data itself, belong to this server.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host"`

	// Port is the server's TCP port; 5432 for postgres and 3306 for mysql when unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`

	// TLS is how connections are encrypted: disable, require (encrypt, do not verify the
	// certificate) or verify-full (encrypt and verify the certificate and host name).
	// +kubebuilder:default=verify-full
	// +optional
	TLS DatabaseTLSMode `json:"tls,omitempty"`

	// CABundle holds PEM certificates that verify the server's certificate under tls
	// verify-full, instead of the system roots: the private CA of a managed database service.
	// Tenants find it as ca.crt in their credentials Secrets.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	CABundle string `json:"caBundle,omitempty"`

	// AdminCredentials names the Secret, in the operator's namespace, that holds the login
	// Landlord uses to create and drop tenant databases and logins.
	AdminCredentials SecretReference `json:"adminCredentials"`

	// NamePrefix starts the name of every database and login Landlord creates on the server,
	// so that no tenant and database name can spell a login or database the server already has
	// (tenant "landlord" with database "admin" would otherwise be "landlord_admin"). Choose one
	// that none of the server's own logins starts with. Names recorded for existing databases
	// never change; the prefix cannot change either.
	// +kubebuilder:default="t_"
	// +kubebuilder:validation:MaxLength=10
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z][a-z0-9]*_)?$')",message="must be lowercase letters and digits ending in '_', or empty"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="namePrefix is immutable: existing databases were named with it"
	// +optional
	NamePrefix string `json:"namePrefix,omitempty"`

	// ConnectionLimit caps the concurrent sessions of each tenant login on the server, so one
	// tenant cannot take every connection the server allows; 0 means unlimited. Unset, Landlord
	// derives it from the server at each check (status.connectionLimit): the slots left once the
	// superusers' reserved ones and Landlord's own sessions are set aside, divided by maxTenants
	// when set and by 4 otherwise, and at least 1.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ConnectionLimit *int32 `json:"connectionLimit,omitempty"`

	// MaxTenants caps how many tenants are placed on the server; unlimited when unset. Tenants
	// already placed stay, and a DatabaseMove is not held to it: 0 makes a server that takes
	// tenants by moves alone.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxTenants *int32 `json:"maxTenants,omitempty"`

	// MaxConcurrentJobs caps how many tenants' Jobs run against the server at once, migrations,
	// backups and restores together (a wave of 500 tenants, or a night's backups, on one server
	// runs this many at a time; the others wait their turn; a restore never waits, but counts);
	// 4 when unset. Each operator process (each shard) holds to it on its own.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxConcurrentJobs *int32 `json:"maxConcurrentJobs,omitempty"`

	// Network says where the server's connections come from, as seen by NetworkPolicies:
	// Landlord lets the pods of each tenant with a database on the server reach it, and no other
	// tenant's (the NetworkPolicy landlord-allow-database-egress in the tenant namespace). A host
	// that is an IP address is reached at that address without it; a host that is a DNS name
	// needs cidrs, or a namespaceSelector for a server running in the cluster, or tenants reach
	// it only through the operator configuration's network.egressCIDRs.
	// +optional
	Network *DatabaseServerNetwork `json:"network,omitempty"`
}

// DatabaseServerNetwork is where tenants' pods reach a database server, besides its host when
// that is an IP address; its port is the server's own.
// +kubebuilder:validation:XValidation:rule="!has(self.podSelector) || has(self.namespaceSelector)",message="podSelector needs a namespaceSelector: alone it would select pods of the tenant's own namespace"
type DatabaseServerNetwork struct {
	// CIDRs are the address blocks the server is reached at, such as the private range a
	// managed database service's DNS name resolves to (10.20.0.0/24), or 10.20.0.5/32 for one
	// address. Each tenant on the server may reach them at the server's port only.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=49
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c))",message="every entry must be a CIDR, such as 10.20.0.0/24 or 10.20.0.5/32"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !isCIDR(c) || cidr(c).prefixLength() > 0)",message="a CIDR must not be 0.0.0.0/0 or ::/0: that would open every address at the server's port"
	// +listType=set
	// +optional
	CIDRs []string `json:"cidrs,omitempty"`

	// NamespaceSelector selects the namespaces of a server that runs in the cluster. Select them
	// by name (kubernetes.io/metadata.name, which Kubernetes sets and no one can change): a label
	// anyone who may edit a namespace can add would let that namespace's pods be reached.
	// +kubebuilder:validation:XValidation:rule="size(self.?matchLabels.orValue({})) + size(self.?matchExpressions.orValue([])) > 0",message="an empty namespaceSelector selects every namespace, other tenants' included: name the server's namespace"
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// PodSelector selects the server's pods within the namespaces of namespaceSelector; every
	// pod of those namespaces when unset.
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
}

// DatabaseServerStatus is the observed state of a database server.
type DatabaseServerStatus struct {
	// ObservedGeneration is the generation last checked.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`

	// Reachable is true when Landlord logged in to the server at the last check.
	// +optional
	Reachable bool `json:"reachable,omitempty"`

	// ServerVersion is what the server reported at the last successful check.
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`

	// Tenants is how many tenants have databases placed on the server.
	// +optional
	Tenants int32 `json:"tenants"`

	// ConnectionLimit is what each tenant login on the server is given: spec.connectionLimit, or
	// the limit derived from the server's connection slots at the last check.
	// +optional
	ConnectionLimit int32 `json:"connectionLimit,omitempty"`

	// ConnectionSlots is the server's max_connections at the last check.
	// +optional
	ConnectionSlots int32 `json:"connectionSlots,omitempty"`

	// Conditions: Ready (always) and Reconciling/Stalled only while true.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DatabaseServer is a shared PostgreSQL or MySQL server on which Landlord places tenant
// databases.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=dbs,categories=landlord
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.tenants) || oldSelf.status.tenants == 0 || (self.spec.host == oldSelf.spec.host && (has(self.spec.port) ? self.spec.port : 0) == (has(oldSelf.spec.port) ? oldSelf.spec.port : 0) && (has(self.spec.tls) ? self.spec.tls : 'unset') == (has(oldSelf.spec.tls) ? oldSelf.spec.tls : 'unset') && self.spec.adminCredentials.name == oldSelf.spec.adminCredentials.name)",message="spec.host, spec.port, spec.tls and spec.adminCredentials cannot change while tenants have databases on the server: move them first, or create a new DatabaseServer"
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.engine`
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.host`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Tenants",type=integer,JSONPath=`.status.tenants`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.serverVersion`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DatabaseServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DatabaseServerSpec `json:"spec"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status DatabaseServerStatus `json:"status,omitempty"`
}

// DatabaseServerList is a list of database servers.
// +kubebuilder:object:root=true
type DatabaseServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DatabaseServer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DatabaseServer{}, &DatabaseServerList{})
}
