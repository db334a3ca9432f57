package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The API's limits on a DatabaseMove's spec and name.
const (
	maxMoveTenant   = 50
	maxMoveDatabase = 30
	maxMoveName     = 63
)

// moveTable is the database moves as `get moves` shows them.
func moveTable(moves []tenancyv1alpha1.DatabaseMove) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Tenant", Type: "string"},
		{Name: "Database", Type: "string"},
		{Name: "From", Type: "string"},
		{Name: "To", Type: "string"},
		{Name: "Phase", Type: "string"},
		{Name: "Downtime", Type: "string"},
		{Name: "Age", Type: "string"},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, moves, func(m *tenancyv1alpha1.DatabaseMove) []any {
		_, _, message := readyOf(m.Status.Conditions)
		from := ""
		if m.Status.From != nil {
			from = m.Status.From.Server
		}
		return []any{m.Name, m.Spec.Tenant, m.Spec.Database, orNone(from), m.Spec.Server, orNone(string(m.Status.Phase)),
			orNone(moveDowntime(m)), age(m.CreationTimestamp), orNone(message)}
	})
}

// describeMove writes a database move: what moves where, where the database was and goes, the
// cut-over's times and its downtime.
func describeMove(d *describer, m *tenancyv1alpha1.DatabaseMove) {
	d.objectMeta(m, false)
	d.field("Tenant", m.Spec.Tenant)
	d.field("Database", m.Spec.Database)
	d.field("To server", m.Spec.Server)
	d.fieldf("Confirmed", "%t", m.Spec.Confirmed)
	d.field("Phase", string(m.Status.Phase))
	d.verdict(m, "DatabaseMove")
	d.field("Engine", string(m.Status.Engine))
	d.field("Tenant UID", m.Status.TenantUID)
	d.field("Job", m.Status.Job)
	d.field("Fenced", timeOf(m.Status.FencedAt))
	d.field("Switched", timeOf(m.Status.SwitchedAt))
	d.field("Downtime", moveDowntime(m))
	d.field("Completed", timeOf(m.Status.CompletionTime))
	var rows [][]string
	for _, l := range []struct {
		name string
		at   *tenancyv1alpha1.DatabaseLocation
	}{{"From", m.Status.From}, {"To", m.Status.To}} {
		if l.at != nil {
			rows = append(rows, []string{l.name, l.at.Server, l.at.Database, l.at.Username})
		}
	}
	d.section("Locations", []string{"", "SERVER", "DATABASE", "LOGIN"}, rows)
	d.conditions(m.Status.Conditions)
	d.eventsSection()
}

// moveDowntime is the move's measured cut-over, to the millisecond; empty until it switched.
func moveDowntime(m *tenancyv1alpha1.DatabaseMove) string {
	if m.Status.Downtime == nil {
		return ""
	}
	return m.Status.Downtime.Duration.Round(time.Millisecond).String()
}

func newDBCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db",
		Short: "Move tenants' databases between servers: one database, or every one on a server.",
		Long: `Move one of a tenant's databases to another DatabaseServer of its engine through a DatabaseMove,
which the operator runs, and confirm the move once the tenant runs on the new server; or drain a
server of every tenant database on it, one move after another. Follow moves with landlordctl get
moves.`,
		Args: noArgs,
	}
	cmd.AddCommand(newDBMoveCommand(root), newDBConfirmCommand(root), newDBDrainCommand(root))
	return cmd
}

// dbMoveOptions are the db move command's flags.
type dbMoveOptions struct {
	to, name string
	wait     bool
	timeout  time.Duration
}

func newDBMoveCommand(root *rootOptions) *cobra.Command {
	o := &dbMoveOptions{}
	cmd := &cobra.Command{
		Use:   "move TENANT DATABASE --to SERVER",
		Short: "Move one of a tenant's databases to another database server, through a DatabaseMove.",
		Long: `Create a DatabaseMove that moves one of the tenant's databases (its name in spec.databases) to
another DatabaseServer of its engine, running the same version as the one it is on or a newer
one. The operator fences the database's writers (its login's password is replaced and its
sessions ended), copies it to the new server with a Job that compares every table, then switches
the tenant's credentials Secret to the new server. From the fence to the switch the database
takes no session of the tenant's: that is the move's downtime. The move then stops at Switched:
the old database and its login are kept, as they were at the cut-over, until the move is
confirmed (db confirm), when they are dropped. Until the switch, a copy that fails, or deleting
the move, rolls it back: the database stays where it was, unchanged. A move that cannot be made
(no such tenant, database or server, a server of another engine, another move of the database
under way) is refused by the operator with its reason, and changes nothing.

Without --wait, the move's name is printed and the command returns at once; follow it with
landlordctl get moves. With --wait, the move is watched until it is Switched (its downtime is
printed), Succeeded or Failed, and each phase it reaches is written to stderr; a move that
fails, or does not switch within --timeout, makes the command exit non-zero. A move not switched
in time carries on.`,
		Example: `  landlordctl db move acme app --to pg-2
  landlordctl db move acme app --to pg-2 --name acme-app-to-pg-2 --wait --timeout 1h`,
		Args:              exactArgs(2),
		ValidArgsFunction: completeNamesOf(root, kindOf("Tenant"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			move, err := o.newMove(args[0], args[1], time.Now())
			if err != nil {
				return asUsage(err)
			}
			c, err := root.client()
			if err != nil {
				return err
			}
			return runDBMove(cmd.Context(), c, o, move, root.out, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "The DatabaseServer to move the database to (required).")
	f.StringVar(&o.name, "name", "", "The DatabaseMove's name (<tenant>-<database>-<unix time> when empty).")
	f.BoolVar(&o.wait, "wait", false, "Wait until the move is Switched, Succeeded or Failed, printing each phase it reaches.")
	f.DurationVar(&o.timeout, "timeout", 30*time.Minute, "How long --wait waits.")
	_ = cmd.MarkFlagRequired("to")
	_ = cmd.RegisterFlagCompletionFunc("to", completeNamesOf(root, kindOf("DatabaseServer"), 0))
	return cmd
}

// newMove checks the arguments and flags, and builds the move, before any cluster is contacted.
func (o *dbMoveOptions) newMove(tenant, database string, now time.Time) (*tenancyv1alpha1.DatabaseMove, error) {
	switch {
	case len(tenant) > maxMoveTenant || len(validation.IsDNS1123Label(tenant)) > 0:
		return nil, fmt.Errorf("TENANT %q: want a tenant's name (lowercase letters, digits and '-', at most %d characters)", tenant, maxMoveTenant)
	case len(database) > maxMoveDatabase || len(validation.IsDNS1123Label(database)) > 0:
		return nil, fmt.Errorf("DATABASE %q: want a database's name in the tenant's spec (lowercase letters, digits and '-', at most %d characters)", database, maxMoveDatabase)
	case len(validation.IsDNS1123Subdomain(o.to)) > 0:
		return nil, fmt.Errorf("--to %q: want a DatabaseServer's name", o.to)
	case o.name != "" && (len(o.name) > maxMoveName || len(validation.IsDNS1123Subdomain(o.name)) > 0):
		return nil, fmt.Errorf("--name %q: want lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most %d characters", o.name, maxMoveName)
	case o.wait && o.timeout <= 0:
		return nil, errors.New("--timeout must be positive")
	}
	name := o.name
	if name == "" {
		name = moveName(tenant, database, now)
	}
	return &tenancyv1alpha1.DatabaseMove{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.DatabaseMoveSpec{Tenant: tenant, Database: database, Server: o.to},
	}, nil
}

// moveName is a move's default name, <tenant>-<database>-<unix seconds>, with the tenant and
// database cut short to keep it within the API's 63 characters.
func moveName(tenant, database string, now time.Time) string {
	suffix := fmt.Sprintf("-%d", now.Unix())
	prefix := strings.ToLower(tenant + "-" + database)
	if room := maxMoveName - len(suffix); len(prefix) > room {
		prefix = strings.TrimRight(prefix[:room], "-")
	}
	return prefix + suffix
}

// runDBMove creates the move, once its tenant and target server are known to exist, and with
// o.wait follows it until it switched or ended.
func runDBMove(ctx context.Context, c client.WithWatch, o *dbMoveOptions, move *tenancyv1alpha1.DatabaseMove, out, progress io.Writer) error {
	s := move.Spec
	if err := c.Get(ctx, client.ObjectKey{Name: s.Tenant}, &tenancyv1alpha1.Tenant{}); err != nil {
		return kindOf("Tenant").wrapNotFound("", s.Tenant, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: s.Server}, &tenancyv1alpha1.DatabaseServer{}); err != nil {
		return kindOf("DatabaseServer").wrapNotFound("", s.Server, err)
	}
	if err := c.Create(ctx, move, client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("creating DatabaseMove %s: %w", move.Name, err)
	}
	fmt.Fprintf(out, "databasemove/%s created: moves database %s of tenant %s to DatabaseServer %s\n", move.Name, s.Database, s.Tenant, s.Server)
	if !o.wait {
		fmt.Fprintf(out, "Follow it with: landlordctl get moves %s\nOnce it is Switched and the tenant checked on %s, drop the old database with: landlordctl db confirm %s\n",
			move.Name, s.Server, move.Name)
		return nil
	}
	ended, err := waitMoved(ctx, c, move.Name, o.timeout, progress)
	if err != nil {
		return err
	}
	switch ended.Status.Phase {
	case tenancyv1alpha1.MoveSwitched:
		fmt.Fprintf(out, "databasemove/%s switched: tenant %s runs on DatabaseServer %s; the cut-over took %s. %s\n",
			move.Name, s.Tenant, s.Server, orNone(moveDowntime(ended)), keptUntilConfirmed(ended))
	case tenancyv1alpha1.MoveSucceeded:
		fmt.Fprintf(out, "databasemove/%s succeeded: database %s of tenant %s is on DatabaseServer %s; the cut-over took %s\n",
			move.Name, s.Database, s.Tenant, s.Server, orNone(moveDowntime(ended)))
	}
	return nil
}

// keptUntilConfirmed says where the old database is kept, and how to drop it.
func keptUntilConfirmed(m *tenancyv1alpha1.DatabaseMove) string {
	at := ""
	if m.Status.From != nil {
		at = fmt.Sprintf(" %q on DatabaseServer %s", m.Status.From.Database, m.Status.From.Server)
	}
	return fmt.Sprintf("The old database%s is kept until the move is confirmed: check the tenant, then run landlordctl db confirm %s", at, m.Name)
}

// waitMoved watches the move until it is Switched, Succeeded or Failed, gone, or the time is
// up, writing each phase (and each reason within one) it reaches to progress. A Failed move is
// an error saying why.
func waitMoved(parent context.Context, c client.WithWatch, name string, timeout time.Duration, progress io.Writer) (*tenancyv1alpha1.DatabaseMove, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	var last, ended *tenancyv1alpha1.DatabaseMove
	seen := func(obj runtime.Object, deleted bool) (bool, error) {
		m, ok := obj.(*tenancyv1alpha1.DatabaseMove)
		if !ok || m.Name != name {
			return false, nil
		}
		if deleted {
			return false, fmt.Errorf("database move %s was deleted before it switched", name)
		}
		// A failure is said once, as the error.
		changed := last == nil || last.Status.Phase != m.Status.Phase || moveReason(last) != moveReason(m)
		if changed && m.Status.Phase != "" && m.Status.Phase != tenancyv1alpha1.MoveFailed {
			fmt.Fprintf(progress, "database move %s: %s\n", name, moveStatus(m))
		}
		last = m
		switch m.Status.Phase {
		case tenancyv1alpha1.MoveSwitched, tenancyv1alpha1.MoveSucceeded:
			ended = m
			return true, nil
		case tenancyv1alpha1.MoveFailed:
			return false, fmt.Errorf("database move %s failed: %s; the database is where it was", name, moveStatus(m))
		}
		return false, nil
	}
	settle := func(store cache.Store) (bool, error) {
		if last == nil {
			return false, fmt.Errorf("database move %s was deleted before it switched", name)
		}
		return false, nil
	}
	scope := watchScope{list: &tenancyv1alpha1.DatabaseMoveList{}, fields: fields.OneTermEqualSelector("metadata.name", name)}
	err := watchUntil(ctx, c, scope, &tenancyv1alpha1.DatabaseMove{}, seen, settle)
	switch {
	case ended != nil:
		return ended, nil
	case parent.Err() != nil:
		return nil, fmt.Errorf("waiting for database move %s: %w", name, parent.Err())
	case ctx.Err() == nil && err != nil:
		return nil, err
	}
	why := "it has no status yet; is the Landlord operator running?"
	if last != nil && last.Status.Phase != "" {
		why = "it is " + moveStatus(last)
	}
	return nil, fmt.Errorf("database move %s did not switch within %s: %s (the move carries on: follow it with landlordctl get moves %s)", name, timeout, why, name)
}

// moveExplanation is the condition that says best where the move is: Stalled or Reconciling
// while true, else Ready.
func moveExplanation(m *tenancyv1alpha1.DatabaseMove) *metav1.Condition {
	for _, t := range []string{tenancyv1alpha1.StalledCondition, tenancyv1alpha1.ReconcilingCondition} {
		if c := meta.FindStatusCondition(m.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return meta.FindStatusCondition(m.Status.Conditions, tenancyv1alpha1.ReadyCondition)
}

func moveReason(m *tenancyv1alpha1.DatabaseMove) string {
	if c := moveExplanation(m); c != nil {
		return c.Reason
	}
	return ""
}

// moveStatus is the move's phase, and the reason and message of the condition that explains
// it, as one line.
func moveStatus(m *tenancyv1alpha1.DatabaseMove) string {
	parts := []string{string(m.Status.Phase)}
	if parts[0] == "" {
		parts[0] = "no phase"
	}
	if c := moveExplanation(m); c != nil {
		if c.Reason != "" {
			parts = append(parts, c.Reason)
		}
		if c.Message != "" {
			parts = append(parts, oneLine(c.Message))
		}
	}
	return strings.Join(parts, ": ")
}

func newDBConfirmCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "confirm MOVE",
		Short: "Let a switched database move drop the database's old copy.",
		Long: `Set the DatabaseMove's spec.confirmed to true, once the tenant was checked on its new server:
the operator then drops the database's old copy and its login on the server it left, and the
move succeeds. Only a Switched move is confirmed: before the switch the tenant still runs on the
old database, so a move in any other phase is refused (one Dropping or Succeeded is confirmed
already, and left as it is). A confirmation cannot be taken back.`,
		Example:           `  landlordctl db confirm acme-app-1765000000`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("DatabaseMove"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := root.client()
			if err != nil {
				return err
			}
			return confirmMove(cmd.Context(), c, args[0], root.out)
		},
	}
	return cmd
}

// confirmMove sets the move's spec.confirmed, when it is Switched. The merge patch carries the
// resourceVersion read: a move that changed meanwhile is not confirmed unseen.
func confirmMove(ctx context.Context, c client.Client, name string, out io.Writer) error {
	m := &tenancyv1alpha1.DatabaseMove{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
		return kindOf("DatabaseMove").wrapNotFound("", name, err)
	}
	switch phase := m.Status.Phase; {
	case phase == tenancyv1alpha1.MoveDropping || phase == tenancyv1alpha1.MoveSucceeded:
		fmt.Fprintf(out, "databasemove/%s is %s: it was confirmed already; nothing to do\n", name, phase)
		return nil
	case phase != tenancyv1alpha1.MoveSwitched:
		return fmt.Errorf("database move %s is %s, not Switched: %s", name, orNone(string(phase)), notConfirmable(m))
	case m.Spec.Confirmed:
		fmt.Fprintf(out, "databasemove/%s was confirmed already: the operator drops the old database next\n", name)
		return nil
	}
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	m.Spec.Confirmed = true
	switch err := c.Patch(ctx, m, patch, client.FieldOwner(fieldManager), client.FieldValidation("Strict")); {
	case apierrors.IsConflict(err):
		return fmt.Errorf("database move %s changed while it was being confirmed: run the command again", name)
	case err != nil:
		return fmt.Errorf("confirming database move %s: %w", name, err)
	}
	from := "the old database"
	if f := m.Status.From; f != nil {
		from = fmt.Sprintf("the old database %q on DatabaseServer %s", f.Database, f.Server)
	}
	fmt.Fprintf(out, "databasemove/%s confirmed: %s and its login are dropped next; follow it with landlordctl get moves %s\n", name, from, name)
	return nil
}

// notConfirmable says why a move that is not Switched cannot be confirmed.
func notConfirmable(m *tenancyv1alpha1.DatabaseMove) string {
	switch m.Status.Phase {
	case tenancyv1alpha1.MoveFailed, tenancyv1alpha1.MoveRollingBack:
		return "it was stopped and rolled back before the switch, and the database stays where it was; there is nothing to confirm"
	}
	return fmt.Sprintf("the tenant does not run on DatabaseServer %s yet, and its old database is the one it has; confirm the move once it is Switched (landlordctl get moves %s)",
		m.Spec.Server, m.Name)
}
