package main

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// resourceKind is one of Landlord's kinds as get, describe and completion know it: the names its
// CRD declares, which kubectl takes too, the CLI's own shorter words, and how it is shown.
type resourceKind struct {
	kind     string
	plural   string
	singular string
	// shortNames are the CRD's (kubectl get tnt); words are the CLI's own (get claims), the
	// first of them the one messages use. A test holds the CRD's names to these.
	shortNames []string
	words      []string
	// noun is what messages call one object: tenant "acme" not found.
	noun       string
	namespaced bool
	newList    func() client.ObjectList
	// table is a list as `get` shows it; describe writes one object as `describe` shows it.
	table    func(client.ObjectList) *metav1.Table
	describe func(d *describer, obj client.Object)
}

// kinds are Landlord's kinds in the order help lists them.
var kinds = []*resourceKind{
	{
		kind: "Tenant", plural: "tenants", singular: "tenant", shortNames: []string{"tnt"}, noun: "tenant",
		newList:  func() client.ObjectList { return &tenancyv1alpha1.TenantList{} },
		table:    func(l client.ObjectList) *metav1.Table { return tenantTable(l.(*tenancyv1alpha1.TenantList).Items) },
		describe: func(d *describer, obj client.Object) { describeTenant(d, obj.(*tenancyv1alpha1.Tenant), nil) },
	},
	{
		kind: "TenantClaim", plural: "tenantclaims", singular: "tenantclaim", shortNames: []string{"tc"},
		words: []string{"claims", "claim"}, noun: "claim", namespaced: true,
		newList:  func() client.ObjectList { return &tenancyv1alpha1.TenantClaimList{} },
		table:    func(l client.ObjectList) *metav1.Table { return claimTable(l.(*tenancyv1alpha1.TenantClaimList).Items) },
		describe: func(d *describer, obj client.Object) { describeClaim(d, obj.(*tenancyv1alpha1.TenantClaim)) },
	},
	{
		kind: "TenantPool", plural: "tenantpools", singular: "tenantpool", shortNames: []string{"tp"},
		words: []string{"pools", "pool"}, noun: "pool",
		newList:  func() client.ObjectList { return &tenancyv1alpha1.TenantPoolList{} },
		table:    func(l client.ObjectList) *metav1.Table { return poolTable(l.(*tenancyv1alpha1.TenantPoolList).Items) },
		describe: func(d *describer, obj client.Object) { describePool(d, obj.(*tenancyv1alpha1.TenantPool)) },
	},
	{
		kind: "ComponentRollout", plural: "componentrollouts", singular: "componentrollout", shortNames: []string{"cro"},
		words: []string{"rollouts", "rollout"}, noun: "rollout",
		newList: func() client.ObjectList { return &tenancyv1alpha1.ComponentRolloutList{} },
		table: func(l client.ObjectList) *metav1.Table {
			return rolloutTable(l.(*tenancyv1alpha1.ComponentRolloutList).Items)
		},
		describe: func(d *describer, obj client.Object) { describeRollout(d, obj.(*tenancyv1alpha1.ComponentRollout)) },
	},
	{
		kind: "DatabaseServer", plural: "databaseservers", singular: "databaseserver", shortNames: []string{"dbs"},
		noun:    "database server",
		newList: func() client.ObjectList { return &tenancyv1alpha1.DatabaseServerList{} },
		table: func(l client.ObjectList) *metav1.Table {
			return databaseServerTable(l.(*tenancyv1alpha1.DatabaseServerList).Items)
		},
		describe: func(d *describer, obj client.Object) {
			describeDatabaseServer(d, obj.(*tenancyv1alpha1.DatabaseServer))
		},
	},
	{
		kind: "ComponentTemplate", plural: "componenttemplates", singular: "componenttemplate", shortNames: []string{"ct"},
		words: []string{"templates", "template"}, noun: "template",
		newList: func() client.ObjectList { return &tenancyv1alpha1.ComponentTemplateList{} },
		table: func(l client.ObjectList) *metav1.Table {
			return templateTable(l.(*tenancyv1alpha1.ComponentTemplateList).Items)
		},
		describe: func(d *describer, obj client.Object) { describeTemplate(d, obj.(*tenancyv1alpha1.ComponentTemplate)) },
	},
	{
		kind: "TenantBackup", plural: "tenantbackups", singular: "tenantbackup", shortNames: []string{"tbk"},
		words: []string{"backups", "backup"}, noun: "backup",
		newList: func() client.ObjectList { return &tenancyv1alpha1.TenantBackupList{} },
		table: func(l client.ObjectList) *metav1.Table {
			return backupTable(l.(*tenancyv1alpha1.TenantBackupList).Items)
		},
		describe: func(d *describer, obj client.Object) { describeBackup(d, obj.(*tenancyv1alpha1.TenantBackup)) },
	},
	{
		kind: "TenantBackupSchedule", plural: "tenantbackupschedules", singular: "tenantbackupschedule", shortNames: []string{"tbs"},
		words: []string{"backupschedules", "backupschedule"}, noun: "backup schedule",
		newList: func() client.ObjectList { return &tenancyv1alpha1.TenantBackupScheduleList{} },
		table: func(l client.ObjectList) *metav1.Table {
			return scheduleTable(l.(*tenancyv1alpha1.TenantBackupScheduleList).Items)
		},
		describe: func(d *describer, obj client.Object) {
			describeSchedule(d, obj.(*tenancyv1alpha1.TenantBackupSchedule))
		},
	},
	{
		kind: "TenantRestore", plural: "tenantrestores", singular: "tenantrestore", shortNames: []string{"trs"},
		words: []string{"restores", "restore"}, noun: "restore",
		newList: func() client.ObjectList { return &tenancyv1alpha1.TenantRestoreList{} },
		table: func(l client.ObjectList) *metav1.Table {
			return restoreTable(l.(*tenancyv1alpha1.TenantRestoreList).Items)
		},
		describe: func(d *describer, obj client.Object) { describeRestore(d, obj.(*tenancyv1alpha1.TenantRestore)) },
	},
	{
		kind: "BackupRequest", plural: "backuprequests", singular: "backuprequest", shortNames: []string{"bkr"},
		noun: "backup request", namespaced: true,
		newList: func() client.ObjectList { return &tenancyv1alpha1.BackupRequestList{} },
		table: func(l client.ObjectList) *metav1.Table {
			return backupRequestTable(l.(*tenancyv1alpha1.BackupRequestList).Items)
		},
		describe: func(d *describer, obj client.Object) { describeBackupRequest(d, obj.(*tenancyv1alpha1.BackupRequest)) },
	},
	{
		kind: "RestoreRequest", plural: "restorerequests", singular: "restorerequest", shortNames: []string{"rsr"},
		noun: "restore request", namespaced: true,
		newList: func() client.ObjectList { return &tenancyv1alpha1.RestoreRequestList{} },
		table: func(l client.ObjectList) *metav1.Table {
			return restoreRequestTable(l.(*tenancyv1alpha1.RestoreRequestList).Items)
		},
		describe: func(d *describer, obj client.Object) {
			describeRestoreRequest(d, obj.(*tenancyv1alpha1.RestoreRequest))
		},
	},
	{
		kind: "TenantClass", plural: "tenantclasses", singular: "tenantclass", shortNames: []string{"tcl"},
		words: []string{"classes", "class"}, noun: "class",
		newList:  func() client.ObjectList { return &tenancyv1alpha1.TenantClassList{} },
		table:    func(l client.ObjectList) *metav1.Table { return classTable(l.(*tenancyv1alpha1.TenantClassList).Items) },
		describe: func(d *describer, obj client.Object) { describeClass(d, obj.(*tenancyv1alpha1.TenantClass)) },
	},
	{
		kind: "DatabaseMove", plural: "databasemoves", singular: "databasemove", shortNames: []string{"dbmove"},
		words: []string{"moves", "move", "databasemoves"}, noun: "database move",
		newList: func() client.ObjectList { return &tenancyv1alpha1.DatabaseMoveList{} },
		table: func(l client.ObjectList) *metav1.Table {
			return moveTable(l.(*tenancyv1alpha1.DatabaseMoveList).Items)
		},
		describe: func(d *describer, obj client.Object) { describeMove(d, obj.(*tenancyv1alpha1.DatabaseMove)) },
	},
}

// kindByName is the kind a word names, as kubectl resolves a resource: its plural, singular or
// short name, any case, optionally followed by the API group (tenants.tenancy.landlord.dev) or
// version and group; or one of the CLI's own words (claims, pools, rollouts, templates).
func kindByName(word string) (*resourceKind, bool) {
	w := strings.ToLower(word)
	for _, suffix := range []string{"." + tenancyv1alpha1.GroupVersion.Version + "." + tenancyv1alpha1.GroupVersion.Group, "." + tenancyv1alpha1.GroupVersion.Group} {
		if trimmed, ok := strings.CutSuffix(w, suffix); ok {
			w = trimmed
			break
		}
	}
	for _, k := range kinds {
		if w == k.plural || w == k.singular || w == strings.ToLower(k.kind) || slices.Contains(k.shortNames, w) || slices.Contains(k.words, w) {
			return k, true
		}
	}
	return nil, false
}

// name is the word help and messages use for the kind's objects: claims, rather than
// tenantclaims.
func (k *resourceKind) name() string {
	if len(k.words) > 0 {
		return k.words[0]
	}
	return k.plural
}

// aliases are the kind's other names for help: its plural when the CLI says it otherwise, and
// the CRD's short names. Singular forms are taken too, and go without saying.
func (k *resourceKind) aliases() []string {
	var out []string
	if k.plural != k.name() {
		out = append(out, k.plural)
	}
	return append(out, k.shortNames...)
}

// kindsHelp lists the kinds and their other names, one a line, for help.
func kindsHelp() string {
	var b strings.Builder
	for _, k := range kinds {
		scope := ""
		if k.namespaced {
			scope = "  (namespaced: -n, -A)"
		}
		fmt.Fprintf(&b, "  %-16s %s%s\n", k.name(), strings.Join(k.aliases(), ", "), scope)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// kindNames are the kinds' names for completion and errors.
func kindNames() []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k.name())
	}
	return out
}

// unknownKind is the usage error for a word that names no kind.
func unknownKind(word string) error {
	return usageErrorf("unknown kind %q: want one of %s", word, strings.Join(kindNames(), ", "))
}

// notFound says an object does not exist, the same way for every command.
func (k *resourceKind) notFound(namespace, name string) error {
	return notFoundError{kind: k, namespace: namespace, name: name}
}

// wrapNotFound is err, the outcome of reading the named object, said as notFound when the API
// server found no such object.
func (k *resourceKind) wrapNotFound(namespace, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return notFoundError{kind: k, namespace: namespace, name: name, err: err}
	}
	return err
}

// notFoundError reads the same for every kind and command; it wraps the API server's NotFound,
// when there is one, for callers that ask apierrors.IsNotFound.
type notFoundError struct {
	kind            *resourceKind
	namespace, name string
	err             error
}

func (e notFoundError) Unwrap() error { return e.err }

func (e notFoundError) Error() string {
	if e.kind.namespaced && e.namespace != "" {
		return fmt.Sprintf("%s %q not found in namespace %q", e.kind.noun, e.name, e.namespace)
	}
	return fmt.Sprintf("%s %q not found", e.kind.noun, e.name)
}

// kindScheme makes empty objects of Landlord's kinds.
var kindScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(tenancyv1alpha1.AddToScheme(s))
	return s
}()

// newObject is an empty object of the kind, to read one into.
func (k *resourceKind) newObject() client.Object {
	obj, err := kindScheme.New(k.gvk())
	utilruntime.Must(err)
	return obj.(client.Object)
}

// kindOf is the kind of that Kind (Tenant, ComponentRollout); it panics on one the CLI does not
// know, a programming error.
func kindOf(kind string) *resourceKind {
	for _, k := range kinds {
		if k.kind == kind {
			return k
		}
	}
	panic("landlordctl knows no kind " + kind)
}

// gvk is the kind's group, version and kind, which the API server leaves out of typed objects
// and the printers need.
func (k *resourceKind) gvk() schema.GroupVersionKind {
	return tenancyv1alpha1.GroupVersion.WithKind(k.kind)
}
