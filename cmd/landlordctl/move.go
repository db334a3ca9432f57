package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

type moveOptions struct {
	from, to     string
	timeout      time.Duration
	leaveVolumes bool
	keepAccess   bool
}

// moveStep, when set, hears of each step of a move as it is done (tests stop a move there, as a
// person pressing Ctrl-C would).
var moveStep func(step string)

func newMoveCommand(root *rootOptions) *cobra.Command {
	o := &moveOptions{}
	cmd := &cobra.Command{
		Use:   "move TENANT --from CONTEXT --to CONTEXT",
		Short: "Move a tenant to another cluster, with its data.",
		Long: `Move an Active tenant from one cluster to another that share its database servers and
secret store:

  1. at the source, the tenant is marked as moved (tenancy.landlord.dev/moved-to, after which
     Landlord's admission policy refuses to make it Active there again), set Frozen, then
     Archived: its namespace goes, its databases, stored credentials and data stay;
  2. at the destination, a tenant of the same name and spec is created, annotated to adopt the
     source tenant's data by its UID (tenancy.landlord.dev/adopt-data-from): its databases keep
     their passwords and their data; a component that followed rollouts is pinned at the
     version it ran;
  3. the command waits until the destination tenant is Ready with the source's databases. The
     source stays Archived. Purging it drops nothing and forgets nothing the destination has not
     taken over: until then the purge waits (MovedAway).

Every step looks at where things stand first, so a move that was interrupted is finished by
running the same command again; nothing is done twice. A move is refused, before anything
changes, when it cannot work: the tenant is not Active or is suspended; a GitOps controller
applies its spec.state; the destination lacks a DatabaseServer the tenant's databases are on
(or names another server by it); the two clusters' template namespaces were not synced from the
same secret store; the tenant has persistent volumes (they cannot follow it; --leave-volumes
leaves them at the source, kept); its namespace is not the one --config's namespacePrefix
names, or either cluster's operator (its ConfigMap landlord-config in landlord-system) runs with
another namespacePrefix or template namespace than --config; its access names ServiceAccounts
of other namespaces (--keep-access); or the destination already has another tenant of that
name.`,
		Example: `  landlordctl move acme --from eu-1 --to eu-2
  landlordctl move acme --from eu-1 --to eu-2 --timeout 30m`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeTenantIn(root, "from"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMove(cmd.Context(), root, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "Kubeconfig context of the cluster the tenant is in (required).")
	f.StringVar(&o.to, "to", "", "Kubeconfig context of the cluster to move it to (required).")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "How long each wait (source Archived, destination Ready) may take.")
	f.BoolVar(&o.leaveVolumes, "leave-volumes", false, "Move a tenant that has persistent volumes: they stay at the source, kept, and the destination starts without them.")
	f.BoolVar(&o.keepAccess, "keep-access", false, "Move a tenant whose spec.access names ServiceAccounts of other namespaces: those names may be other customers' at the destination.")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
	_ = cmd.RegisterFlagCompletionFunc("from", completeContexts(root))
	_ = cmd.RegisterFlagCompletionFunc("to", completeContexts(root))
	return cmd
}

// move is one run of the command.
type move struct {
	o        *moveOptions
	out      io.Writer
	cfg      config.Config
	name     string
	src, dst cluster
}

func runMove(ctx context.Context, root *rootOptions, o *moveOptions, name string) error {
	switch {
	case o.from == o.to:
		return usageErrorf("--from and --to name the same context")
	case o.timeout <= 0:
		return usageErrorf("--timeout must be positive")
	}
	cfg, err := config.Load(root.configPath)
	if err != nil {
		return err
	}
	targets, err := clusters(root, []string{o.from, o.to})
	if err != nil {
		return err
	}
	m := &move{o: o, out: root.out, cfg: cfg, name: name, src: targets[0], dst: targets[1]}
	return m.run(ctx)
}

func (m *move) say(format string, args ...any) {
	fmt.Fprintf(m.out, "move %s: "+format+"\n", append([]any{m.name}, args...)...)
}

func (m *move) done(step string) {
	if moveStep != nil {
		moveStep(step)
	}
}

func (m *move) run(ctx context.Context) error {
	src, err := m.get(ctx, m.src)
	if err != nil {
		return err
	}
	dst, err := m.get(ctx, m.dst)
	if err != nil {
		return err
	}
	switch {
	case src == nil && dst == nil:
		return fmt.Errorf("tenant %s is in neither context %s nor %s", m.name, m.src.name, m.dst.name)
	case src == nil:
		return fmt.Errorf("tenant %s is not in context %s; context %s has one, which this command cannot tell it moved", m.name, m.src.name, m.dst.name)
	case dst != nil && dst.Annotations[tenancyv1alpha1.AdoptDataAnnotation] != string(src.UID):
		return fmt.Errorf("context %s already has a tenant %s of its own (UID %s), not one moved from context %s: move it out of the way, or give this tenant another name",
			m.dst.name, m.name, dst.UID, m.src.name)
	case src.Spec.State == tenancyv1alpha1.StatePurged:
		return fmt.Errorf("tenant %s is Purged in context %s: its data is gone, there is nothing to move", m.name, m.src.name)
	}
	movedTo, marked := src.Annotations[tenancyv1alpha1.MovedToAnnotation]
	switch {
	case !marked && dst != nil:
		// A move creates the destination tenant only once the source is marked: this one was
		// made some other way, and is not handed the source's data by this command.
		return fmt.Errorf("context %s already has a tenant %s annotated to adopt this one's data, which no move of this command created: remove it, or finish what it was made for by hand",
			m.dst.name, m.name)
	case marked && movedTo != m.dst.host:
		return fmt.Errorf("tenant %s in context %s was moved to %s already (annotation %s): its data is that cluster's tenant's now, and it is not moved again",
			m.name, m.src.name, movedTo, tenancyv1alpha1.MovedToAnnotation)
	}
	if !marked {
		// Refused before anything changes. Once the source is marked the move is under way, and
		// a rerun finishes it rather than asking again.
		if err := m.check(ctx, src); err != nil {
			return err
		}
		// The mark first: from here the admission policy keeps the source Archived, so that it
		// can never use the data again alongside the moved tenant.
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, tenancyv1alpha1.MovedToAnnotation, m.dst.host)
		if src, err = patchTenant(ctx, m.src.client, m.name, patch); err != nil {
			return fmt.Errorf("context %s: %w", m.src.name, err)
		}
		m.say("marked in context %s as moving to %s", m.src.name, m.dst.host)
	}
	if src, err = m.archive(ctx, src); err != nil {
		return err
	}
	if dst == nil {
		if _, err = m.create(ctx, src); err != nil {
			return err
		}
	}
	m.say("waiting for it to be Ready in context %s", m.dst.name)
	ready, err := waitTenant(ctx, m.dst.client, m.name, m.o.timeout, func(t *tenancyv1alpha1.Tenant) bool { return true })
	if err != nil {
		return fmt.Errorf("context %s: %w (do not make the tenant Active in context %s again: the data may be the moved tenant's already)", m.dst.name, err, m.src.name)
	}
	if err := sameData(src, ready); err != nil {
		return fmt.Errorf("tenant %s is Ready in context %s, but %w", m.name, m.dst.name, err)
	}
	m.done("ready")
	m.say("done: Ready in context %s (namespace %s); Archived in context %s, its data now the moved tenant's", m.dst.name, ready.Status.Namespace, m.src.name)
	return nil
}

func (m *move) get(ctx context.Context, cl cluster) (*tenancyv1alpha1.Tenant, error) {
	t := &tenancyv1alpha1.Tenant{}
	switch err := cl.client.Get(ctx, client.ObjectKey{Name: m.name}, t); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("context %s: reading tenant %s: %w", cl.name, m.name, err)
	}
	return t, nil
}

// check refuses a move that cannot work, naming why, before anything changes.
func (m *move) check(ctx context.Context, src *tenancyv1alpha1.Tenant) error {
	var problems []string
	if state := src.Spec.State; state != "" && state != tenancyv1alpha1.StateActive {
		problems = append(problems, fmt.Sprintf("it is %s: a move starts from an Active tenant, and would bring it back Active (make it Active first, if it should be)", state))
	}
	if src.Spec.Suspend {
		problems = append(problems, fmt.Sprintf("it is suspended, and Landlord would not archive it (landlordctl resume %s --context %s)", m.name, m.src.name))
	}
	if owners := stateOwners(src); len(owners) > 0 {
		problems = append(problems, fmt.Sprintf("its spec.state is managed by %s, which would make it Active again at the source: move it in Git", strings.Join(owners, ", ")))
	}
	if foreign := foreignServiceAccounts(src, m.cfg.NamespaceName(m.name)); len(foreign) > 0 && !m.o.keepAccess {
		problems = append(problems, fmt.Sprintf("its spec.access names ServiceAccounts of other namespaces (%s), which may be other customers' at the destination (--keep-access keeps them)", strings.Join(foreign, ", ")))
	}
	if want := m.cfg.NamespaceName(m.name); src.Status.Namespace != want {
		problems = append(problems, fmt.Sprintf("its namespace in context %s is %q, not %s as --config's namespacePrefix makes it: the destination would look for its stored credentials under another name",
			m.src.name, src.Status.Namespace, want))
	}
	if len(src.Status.Volumes) > 0 && !m.o.leaveVolumes {
		problems = append(problems, fmt.Sprintf("it has %d persistent volumes, which cannot follow it to another cluster (--leave-volumes leaves them at the source, kept)", len(src.Status.Volumes)))
	}
	if !m.o.leaveVolumes && src.Status.Namespace != "" {
		claims := &corev1.PersistentVolumeClaimList{}
		if err := m.src.client.List(ctx, claims, client.InNamespace(src.Status.Namespace)); err != nil {
			return fmt.Errorf("context %s: listing the tenant's volume claims: %w", m.src.name, err)
		}
		if len(claims.Items) > 0 && len(src.Status.Volumes) == 0 {
			problems = append(problems, fmt.Sprintf("it has %d persistent volume claims, whose volumes cannot follow it to another cluster (--leave-volumes leaves them at the source, kept)", len(claims.Items)))
		}
	}
	for _, db := range src.Status.Databases {
		have := &tenancyv1alpha1.DatabaseServer{}
		if err := m.src.client.Get(ctx, client.ObjectKey{Name: db.Server}, have); err != nil {
			return fmt.Errorf("context %s: reading DatabaseServer %s: %w", m.src.name, db.Server, err)
		}
		there := &tenancyv1alpha1.DatabaseServer{}
		switch err := m.dst.client.Get(ctx, client.ObjectKey{Name: db.Server}, there); {
		case apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("its database %s is on DatabaseServer %s, which context %s does not have", db.Name, db.Server, m.dst.name))
		case err != nil:
			return fmt.Errorf("context %s: reading DatabaseServer %s: %w", m.dst.name, db.Server, err)
		case there.Spec.Engine != have.Spec.Engine || there.Spec.Host != have.Spec.Host || there.Spec.Port != have.Spec.Port:
			problems = append(problems, fmt.Sprintf("DatabaseServer %s is %s at %s:%d in context %s but %s at %s:%d in context %s: not the same server",
				db.Server, have.Spec.Engine, have.Spec.Host, have.Spec.Port, m.src.name, there.Spec.Engine, there.Spec.Host, there.Spec.Port, m.dst.name))
		}
	}
	naming, err := m.namingProblems(ctx)
	if err != nil {
		return err
	}
	problems = append(problems, naming...)
	from, err := m.storeOf(ctx, m.src)
	if err != nil {
		return err
	}
	to, err := m.storeOf(ctx, m.dst)
	if err != nil {
		return err
	}
	if from == "" || from != to {
		problems = append(problems, fmt.Sprintf("the template namespace %s of context %s is synced from secret store %q and that of context %s from %q: the destination must read the same store for the tenant's stored credentials",
			m.cfg.Secrets.TemplateNamespace, m.src.name, from, m.dst.name, to))
	}
	if len(problems) > 0 {
		return fmt.Errorf("tenant %s cannot move from context %s to %s; nothing was changed:\n  - %s", m.name, m.src.name, m.dst.name, strings.Join(problems, "\n  - "))
	}
	return nil
}

// storeOf is the identity of the secret store a cluster's template namespace is synced from,
// "" when it records none.
func (m *move) storeOf(ctx context.Context, cl cluster) (string, error) {
	ns := &corev1.Namespace{}
	switch err := cl.client.Get(ctx, client.ObjectKey{Name: m.cfg.Secrets.TemplateNamespace}, ns); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("context %s: reading the template namespace: %w", cl.name, err)
	}
	return ns.Annotations[tenancyv1alpha1.SecretStoreAnnotation], nil
}

// archive makes the source tenant Archived and waits until it is: its namespace is gone and its
// data kept. An Active tenant is Frozen first, so its workloads stop before the namespace goes.
func (m *move) archive(ctx context.Context, src *tenancyv1alpha1.Tenant) (*tenancyv1alpha1.Tenant, error) {
	if src.Spec.Suspend {
		return nil, fmt.Errorf("tenant %s is suspended in context %s, and Landlord changes nothing of it while it is: resume it there (landlordctl resume %s --context %s) and run the move again",
			m.name, m.src.name, m.name, m.src.name)
	}
	order := map[tenancyv1alpha1.TenantState]int{"": 0, tenancyv1alpha1.StateActive: 0, tenancyv1alpha1.StateFrozen: 1, tenancyv1alpha1.StateArchived: 2}
	for _, state := range []tenancyv1alpha1.TenantState{tenancyv1alpha1.StateFrozen, tenancyv1alpha1.StateArchived} {
		if order[src.Spec.State] < order[state] {
			m.say("setting it %s in context %s", state, m.src.name)
			patch := fmt.Sprintf(`{"spec":{"state":%q}}`, state)
			if _, err := patchTenant(ctx, m.src.client, m.name, patch); err != nil {
				return nil, fmt.Errorf("context %s: %w", m.src.name, err)
			}
		}
		var err error
		if src, err = waitTenant(ctx, m.src.client, m.name, m.o.timeout, func(t *tenancyv1alpha1.Tenant) bool {
			return order[t.Spec.State] >= order[state]
		}); err != nil {
			return nil, fmt.Errorf("context %s: %w", m.src.name, err)
		}
		m.done(string(state))
	}
	m.say("Archived in context %s: its namespace is gone, its data kept", m.src.name)
	return src, nil
}

// create makes the destination tenant: the source's spec, Active, and its labels and
// annotations but those that tie a tenant to a pool or a cluster's history, adopting the
// source tenant's data by its UID. The shard label is the source cluster's: the destination's
// default shard takes the tenant (a shard of that name may not run there).
func (m *move) create(ctx context.Context, src *tenancyv1alpha1.Tenant) (*tenancyv1alpha1.Tenant, error) {
	dst := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: m.name, Labels: maps.Clone(src.Labels), Annotations: maps.Clone(src.Annotations)},
		Spec:       *src.Spec.DeepCopy(),
	}
	for _, k := range []string{tenancyv1alpha1.PoolLabel, tenancyv1alpha1.AllocatedLabel, tenancyv1alpha1.ClaimUIDLabel, tenancyv1alpha1.ShardLabel} {
		delete(dst.Labels, k)
	}
	for _, k := range []string{tenancyv1alpha1.ClaimAnnotation, tenancyv1alpha1.DeletionConfirmationAnnotation, tenancyv1alpha1.AbandonDataAnnotation,
		tenancyv1alpha1.ReconcileRequestAnnotation, tenancyv1alpha1.MovedToAnnotation, "kubectl.kubernetes.io/last-applied-configuration"} {
		delete(dst.Annotations, k)
	}
	if dst.Annotations == nil {
		dst.Annotations = map[string]string{}
	}
	dst.Annotations[tenancyv1alpha1.AdoptDataAnnotation] = string(src.UID)
	// A component that follows rollouts is pinned, at the version the source ran (its status)
	// when a rollout moved it: the destination's rollouts know nothing of the source's, and the
	// newest of them may be older, against data the newer version migrated. Set followRollouts
	// again once the destination's rollouts have caught up.
	for i, c := range dst.Spec.Components {
		if !c.FollowRollouts {
			continue
		}
		for _, st := range src.Status.Components {
			if st.Name == c.Name && st.Rollout != "" && st.Version != "" {
				dst.Spec.Components[i].Version = st.Version
			}
		}
		dst.Spec.Components[i].FollowRollouts = false
		m.say("component %s is pinned at %s in context %s (it followed rollouts in context %s)", c.Name, dst.Spec.Components[i].Version, m.dst.name, m.src.name)
	}
	dst.Spec.State = tenancyv1alpha1.StateActive
	dst.Spec.Suspend = false
	dst.Spec.PurgeConfirmation = ""
	if err := m.dst.client.Create(ctx, dst, client.FieldOwner(fieldManager)); err != nil {
		return nil, fmt.Errorf("context %s: creating tenant %s: %w", m.dst.name, m.name, err)
	}
	m.done("created")
	m.say("created in context %s, adopting the data of UID %s", m.dst.name, src.UID)
	return dst, nil
}

// waitTenant watches a tenant until kstatus says it is Current (Ready, for its generation) and
// want holds, and returns it; at the timeout it says what the tenant last reported.
func waitTenant(parent context.Context, c client.WithWatch, name string, timeout time.Duration, want func(*tenancyv1alpha1.Tenant) bool) (*tenancyv1alpha1.Tenant, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	var last, done *tenancyv1alpha1.Tenant
	seen := func(obj runtime.Object, deleted bool) (bool, error) {
		t, ok := obj.(*tenancyv1alpha1.Tenant)
		if !ok || t.Name != name {
			return false, nil
		}
		if deleted {
			return false, fmt.Errorf("tenant %s was deleted", name)
		}
		last = t
		res, err := kstatusOf(t, "Tenant")
		if err != nil || res.Status != kstatus.CurrentStatus || !want(t) {
			return false, nil
		}
		done = t
		return true, nil
	}
	scope := watchScope{list: &tenancyv1alpha1.TenantList{}, fields: fields.OneTermEqualSelector("metadata.name", name)}
	err := watchUntil(ctx, c, scope, &tenancyv1alpha1.Tenant{}, seen, func(cache.Store) (bool, error) { return false, nil })
	switch {
	case done != nil:
		return done, nil
	case parent.Err() != nil:
		return nil, fmt.Errorf("waiting for tenant %s: %w", name, parent.Err())
	case ctx.Err() != nil:
		why := "it reports nothing yet: is the Landlord operator running?"
		if last != nil {
			if ready := meta.FindStatusCondition(last.Status.Conditions, tenancyv1alpha1.ReadyCondition); ready != nil {
				why = fmt.Sprintf("Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
			}
		}
		return nil, fmt.Errorf("tenant %s not Ready within %s: %s (run the move again to go on waiting)", name, timeout, why)
	}
	return nil, err
}

// stateOwners are the field managers that apply the tenant's spec.state with server-side apply,
// as a GitOps controller (Flux's kustomize-controller) does at every sync: such a one would set
// the source Active again. Whoever merely created or edited the tenant is not among them.
func stateOwners(t *tenancyv1alpha1.Tenant) []string {
	return fieldOwners(t, fieldpath.MakePathOrDie("spec", "state"), func(mf metav1.ManagedFieldsEntry) bool {
		return mf.Manager != fieldManager && mf.Operation == metav1.ManagedFieldsOperationApply
	})
}

// fieldOwners are the field managers of the tenant's spec (not of a subresource) that own the
// field at path and that count says count, sorted.
func fieldOwners(t *tenancyv1alpha1.Tenant, path fieldpath.Path, count func(metav1.ManagedFieldsEntry) bool) []string {
	var owners []string
	for _, mf := range t.ManagedFields {
		if mf.Subresource != "" || mf.FieldsV1 == nil || !count(mf) || slices.Contains(owners, mf.Manager) {
			continue
		}
		var owned fieldpath.Set
		if owned.FromJSON(bytes.NewReader(mf.FieldsV1.GetRawBytes())) == nil && owned.Has(path) {
			owners = append(owners, mf.Manager)
		}
	}
	slices.Sort(owners)
	return owners
}

// foreignServiceAccounts are the ServiceAccount subjects of the tenant's access outside its own
// namespace, as namespace/name.
func foreignServiceAccounts(t *tenancyv1alpha1.Tenant, namespace string) []string {
	var out []string
	all := append(append(slices.Clone(t.Spec.Access.Admins), t.Spec.Access.Operators...), t.Spec.Access.Viewers...)
	for _, s := range all {
		if s.Kind == rbacv1.ServiceAccountKind && s.Namespace != namespace {
			out = append(out, s.Namespace+"/"+s.Name)
		}
	}
	return out
}

// sameData checks that the moved tenant has the source's databases, where the source had them:
// the same servers, databases and logins.
func sameData(src, dst *tenancyv1alpha1.Tenant) error {
	key := func(d tenancyv1alpha1.DatabaseStatus) string {
		return fmt.Sprintf("%s database %s on %s (%s, login %s)", d.Engine, d.Name, d.Server, d.Database, d.Username)
	}
	have := map[string]bool{}
	for _, d := range dst.Status.Databases {
		have[key(d)] = true
	}
	var missing []string
	for _, d := range src.Status.Databases {
		if !have[key(d)] {
			missing = append(missing, key(d))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("it does not report the source's %s", strings.Join(missing, "; "))
	}
	return nil
}
