package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// dbDrainOptions are the db drain command's flags.
type dbDrainOptions struct {
	to          string
	concurrency int
	confirm     bool
	timeout     time.Duration
	dryRun      bool
}

func newDBDrainCommand(root *rootOptions) *cobra.Command {
	o := &dbDrainOptions{}
	cmd := &cobra.Command{
		Use:   "drain SERVER --to TARGET",
		Short: "Move every tenant database off a database server, through DatabaseMoves, before it is retired.",
		Long: `Empty the DatabaseServer SERVER, as kubectl drain empties a node: every tenant database on it (each
Tenant's status.databases that names it, of either engine) is moved to the DatabaseServer TARGET
through a DatabaseMove, as db move makes one. The moves of its databases already under way (in
any phase but Succeeded or Failed) come first, then the other databases by tenant, then by name.
At most --concurrency moves are under way at once: each is created, then followed until it is
Switched (its downtime is printed) before the next starts, and each phase a move reaches is
written to stderr.

With --confirm, each move is confirmed once Switched, as db confirm does: the old copies are
dropped as the drain goes. Without it they are kept, and the db confirm commands of the moves
left Switched are printed at the end: check the tenants on TARGET, then run them.

A move that fails, or does not switch within --timeout, stops the drain: no other move starts,
those under way are followed until they end, and the command exits non-zero with the move's name
and why. A move not switched in time carries on. The drain can be run again, and takes up where
it stopped: a database that has a move under way is waited for rather than moved again, a
database no longer on SERVER is left alone, and a move off SERVER left Switched by an earlier run
is confirmed with --confirm, or listed again without.

SERVER and TARGET must differ, and TARGET must exist and be of the engine of every database to
move: otherwise nothing is created. --dry-run prints what would be moved and waited for, and
creates nothing. The DatabaseServer SERVER itself is left as it is.`,
		Example: `  landlordctl db drain pg-1 --to pg-2 --dry-run
  landlordctl db drain pg-1 --to pg-2
  landlordctl db drain pg-1 --to pg-2 --concurrency 3 --confirm --timeout 1h`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("DatabaseServer"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args[0]); err != nil {
				return asUsage(err)
			}
			c, err := root.client()
			if err != nil {
				return err
			}
			return runDBDrain(cmd.Context(), c, args[0], o, root.out, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "The DatabaseServer to move the databases to (required).")
	f.IntVar(&o.concurrency, "concurrency", 1, "How many moves may be under way at once.")
	f.BoolVar(&o.confirm, "confirm", false, "Confirm each move once Switched, so that the database's old copy is dropped.")
	f.DurationVar(&o.timeout, "timeout", 30*time.Minute, "How long each move may take to switch; one that takes longer stops the drain.")
	f.BoolVar(&o.dryRun, "dry-run", false, "Print the databases that would be moved and the moves that would be waited for, and create nothing.")
	_ = cmd.MarkFlagRequired("to")
	_ = cmd.RegisterFlagCompletionFunc("to", completeNamesOf(root, kindOf("DatabaseServer"), 0))
	return cmd
}

// validate refuses a drain that cannot work as typed, before any cluster is contacted.
func (o *dbDrainOptions) validate(server string) error {
	switch {
	case len(validation.IsDNS1123Subdomain(server)) > 0:
		return fmt.Errorf("SERVER %q: want a DatabaseServer's name", server)
	case len(validation.IsDNS1123Subdomain(o.to)) > 0:
		return fmt.Errorf("--to %q: want a DatabaseServer's name", o.to)
	case o.to == server:
		return fmt.Errorf("--to %s is the server drained: name another DatabaseServer to move its databases to", o.to)
	case o.concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1; got %d", o.concurrency)
	case o.timeout <= 0:
		return errors.New("--timeout must be positive")
	}
	return nil
}

// tenantDatabase names one of a tenant's databases, as a DatabaseMove's spec does.
type tenantDatabase struct{ tenant, database string }

// drainItem is one database of a drain: moved, or waited for when a move of it is under way.
type drainItem struct {
	tenantDatabase
	engine tenancyv1alpha1.DatabaseEngine
	// under is the move of the database under way when the drain was planned; nil to create one.
	under *tenancyv1alpha1.DatabaseMove
}

// runDBDrain plans the drain of server and, unless o.dryRun, runs it.
func runDBDrain(ctx context.Context, c client.WithWatch, server string, o *dbDrainOptions, out, progress io.Writer) error {
	plan, err := planDrain(ctx, c, server, o.to)
	if err != nil {
		return err
	}
	if len(plan) == 0 {
		fmt.Fprintf(out, "DatabaseServer %s holds no tenant's database and no move off it is under way: nothing to drain\n", server)
		return nil
	}
	if o.dryRun {
		printDrainPlan(out, server, o.to, plan)
		return nil
	}
	d := &drainer{c: c, server: server, o: o, out: &lockedWriter{w: out}, progress: &lockedWriter{w: progress}, names: map[string]bool{}}
	return d.run(ctx, plan)
}

// planDrain checks both servers exist and lists the databases on server (each to move, or to
// wait for when a move of it is under way) and the moves off server under way although the
// tenant runs elsewhere already (Switched, Dropping): the moves under way first, then the rest,
// each by tenant then database. A database TARGET cannot take, of another engine, refuses the
// whole drain.
func planDrain(ctx context.Context, c client.Client, server, target string) ([]drainItem, error) {
	to := &tenancyv1alpha1.DatabaseServer{}
	if err := c.Get(ctx, client.ObjectKey{Name: target}, to); err != nil {
		return nil, kindOf("DatabaseServer").wrapNotFound("", target, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: server}, &tenancyv1alpha1.DatabaseServer{}); err != nil {
		return nil, kindOf("DatabaseServer").wrapNotFound("", server, err)
	}
	tenants := &tenancyv1alpha1.TenantList{}
	if err := c.List(ctx, tenants); err != nil {
		return nil, fmt.Errorf("listing tenants: %w", err)
	}
	under, err := movesUnderWay(ctx, c)
	if err != nil {
		return nil, err
	}
	planned := map[tenantDatabase]bool{}
	var plan []drainItem
	for _, t := range tenants.Items {
		for _, db := range t.Status.Databases {
			if db.Server != server {
				continue
			}
			key := tenantDatabase{t.Name, db.Name}
			planned[key] = true
			plan = append(plan, drainItem{tenantDatabase: key, engine: db.Engine, under: under[key]})
		}
	}
	for key, m := range under {
		if !planned[key] && m.Status.From != nil && m.Status.From.Server == server {
			plan = append(plan, drainItem{tenantDatabase: key, engine: m.Status.Engine, under: m})
		}
	}
	// The moves under way take their places first: --concurrency bounds them too.
	slices.SortFunc(plan, func(a, b drainItem) int {
		return cmp.Or(cmp.Compare(underWay(b), underWay(a)), cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.database, b.database))
	})
	var misfits []string
	for _, it := range plan {
		if it.under == nil && it.engine != to.Spec.Engine {
			misfits = append(misfits, fmt.Sprintf("%s of tenant %s (%s)", it.database, it.tenant, it.engine))
		}
	}
	if len(misfits) > 0 {
		return nil, fmt.Errorf("DatabaseServer %s is %s: it cannot take database %s; drain to a DatabaseServer of their engine (nothing was created)",
			target, to.Spec.Engine, strings.Join(misfits, ", "))
	}
	return plan, nil
}

func underWay(it drainItem) int {
	if it.under != nil {
		return 1
	}
	return 0
}

// movesUnderWay are the moves that have not ended (any phase but Succeeded or Failed), by the
// database they move; of two, the first by name.
func movesUnderWay(ctx context.Context, c client.Client) (map[tenantDatabase]*tenancyv1alpha1.DatabaseMove, error) {
	moves := &tenancyv1alpha1.DatabaseMoveList{}
	if err := c.List(ctx, moves); err != nil {
		return nil, fmt.Errorf("listing database moves: %w", err)
	}
	slices.SortFunc(moves.Items, func(a, b tenancyv1alpha1.DatabaseMove) int { return cmp.Compare(a.Name, b.Name) })
	under := map[tenantDatabase]*tenancyv1alpha1.DatabaseMove{}
	for i := range moves.Items {
		m := &moves.Items[i]
		key := tenantDatabase{m.Spec.Tenant, m.Spec.Database}
		if _, seen := under[key]; !seen && !m.Terminal() {
			under[key] = m
		}
	}
	return under, nil
}

// printDrainPlan says what a drain would do, for --dry-run.
func printDrainPlan(out io.Writer, server, target string, plan []drainItem) {
	moved, waited := 0, 0
	for _, it := range plan {
		if it.under != nil {
			waited++
			fmt.Fprintf(out, "would wait for databasemove/%s (%s), under way to DatabaseServer %s, of database %s of tenant %s\n",
				it.under.Name, orNone(string(it.under.Status.Phase)), it.under.Spec.Server, it.database, it.tenant)
			continue
		}
		moved++
		fmt.Fprintf(out, "would move database %s (%s) of tenant %s from DatabaseServer %s to %s\n", it.database, it.engine, it.tenant, server, target)
	}
	fmt.Fprintf(out, "DatabaseServer %s would be drained: %s moved to %s, %s under way waited for (dry run: nothing was created)\n",
		server, counted(moved, "database"), target, counted(waited, "move"))
}

// drainer runs a drain's plan, at most o.concurrency databases at a time.
type drainer struct {
	c             client.WithWatch
	server        string
	o             *dbDrainOptions
	out, progress io.Writer

	mu sync.Mutex
	// names are the move names this drain took: two databases may make the same default name
	// (tenant a-b's database c, tenant a's database b-c).
	names   map[string]bool
	results []drainResult
	started int
	failed  bool
}

// drainResult is how one database of the drain ended.
type drainResult struct {
	index int
	item  drainItem
	// move is the move that moved the database, or was waited for; empty when none was.
	move string
	// moved: the move is Switched or Succeeded. Neither moved nor err: the database was left alone.
	moved bool
	// unconfirmed: the move is Switched and not confirmed; its old copy is kept.
	unconfirmed bool
	err         error
}

// run drains the plan's databases in order, and stops starting more once one failed; those under
// way are followed until they end. It prints a summary, and returns the failures.
func (d *drainer) run(ctx context.Context, plan []drainItem) error {
	slots := make(chan struct{}, d.o.concurrency)
	var wg sync.WaitGroup
	for i, it := range plan {
		slots <- struct{}{}
		if ctx.Err() != nil || !d.begin() {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := d.drainDatabase(ctx, it)
			r.index, r.item = i, it
			d.record(r)
			<-slots
		}()
	}
	wg.Wait()
	return d.summarize(len(plan))
}

// begin counts a database started, unless the drain failed.
func (d *drainer) begin() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed {
		return false
	}
	d.started++
	return true
}

// record keeps how a database ended. The first failure stops the drain, and says so at once
// when moves are still under way: they may take long.
func (d *drainer) record(r drainResult) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.results = append(d.results, r)
	if r.err == nil || d.failed {
		return
	}
	d.failed = true
	if underWay := d.started - len(d.results); underWay > 0 {
		fmt.Fprintf(d.out, "drain stopped at database %s of tenant %s: no other move starts; waiting for the %s under way to end\n",
			r.item.database, r.item.tenant, counted(underWay, "move"))
	}
}

// drainDatabase moves one database, or waits for its move under way, until Switched, and
// confirms the move with --confirm.
func (d *drainer) drainDatabase(ctx context.Context, it drainItem) drainResult {
	m := it.under
	if m == nil {
		var err error
		if m, err = d.startMove(ctx, it); err != nil || m == nil {
			return drainResult{err: err}
		}
	} else {
		d.waitingFor(m)
	}
	ended, err := waitMoved(ctx, d.c, m.Name, d.o.timeout, d.progress)
	if err != nil {
		return drainResult{move: m.Name, err: err}
	}
	s := ended.Spec
	if ended.Status.Phase == tenancyv1alpha1.MoveSucceeded {
		fmt.Fprintf(d.out, "databasemove/%s succeeded: database %s of tenant %s is on DatabaseServer %s; the cut-over took %s\n",
			m.Name, s.Database, s.Tenant, s.Server, orNone(moveDowntime(ended)))
		return drainResult{move: m.Name, moved: true}
	}
	fmt.Fprintf(d.out, "databasemove/%s switched: database %s of tenant %s runs on DatabaseServer %s; the cut-over took %s\n",
		m.Name, s.Database, s.Tenant, s.Server, orNone(moveDowntime(ended)))
	switch {
	case s.Confirmed:
		return drainResult{move: m.Name, moved: true}
	case !d.o.confirm:
		return drainResult{move: m.Name, moved: true, unconfirmed: true}
	}
	if err := confirmMove(ctx, d.c, m.Name, d.out); err != nil {
		return drainResult{move: m.Name, moved: true, unconfirmed: true, err: err}
	}
	return drainResult{move: m.Name, moved: true}
}

// waitingFor says the drain follows a move it did not create.
func (d *drainer) waitingFor(m *tenancyv1alpha1.DatabaseMove) {
	fmt.Fprintf(d.out, "databasemove/%s of database %s of tenant %s is under way (%s): waiting for it rather than moving the database again\n",
		m.Name, m.Spec.Database, m.Spec.Tenant, orNone(string(m.Status.Phase)))
}

// startMove creates the move of the database, after reading its tenant again: a database that
// left the server since the drain was planned is left alone (nil), and one whose move started
// meanwhile is waited for.
func (d *drainer) startMove(ctx context.Context, it drainItem) (*tenancyv1alpha1.DatabaseMove, error) {
	t := &tenancyv1alpha1.Tenant{}
	switch err := d.c.Get(ctx, client.ObjectKey{Name: it.tenant}, t); {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(d.out, "tenant %s is gone: its database %s is left alone\n", it.tenant, it.database)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading tenant %s: %w", it.tenant, err)
	}
	onServer := slices.ContainsFunc(t.Status.Databases, func(db tenancyv1alpha1.DatabaseStatus) bool {
		return db.Name == it.database && db.Server == d.server
	})
	if !onServer {
		fmt.Fprintf(d.out, "database %s of tenant %s is no longer on DatabaseServer %s: left alone\n", it.database, it.tenant, d.server)
		return nil, nil
	}
	under, err := movesUnderWay(ctx, d.c)
	if err != nil {
		return nil, err
	}
	if m := under[it.tenantDatabase]; m != nil {
		d.waitingFor(m)
		return m, nil
	}
	move, err := (&dbMoveOptions{to: d.o.to}).newMove(it.tenant, it.database, d.freeNameTime(it))
	if err != nil {
		return nil, err
	}
	if err := d.c.Create(ctx, move, client.FieldOwner(fieldManager)); err != nil {
		return nil, fmt.Errorf("creating DatabaseMove %s: %w", move.Name, err)
	}
	fmt.Fprintf(d.out, "databasemove/%s created: moves database %s (%s) of tenant %s from DatabaseServer %s to %s\n",
		move.Name, it.database, it.engine, it.tenant, d.server, d.o.to)
	return move, nil
}

// freeNameTime is the time that gives the database's move a default name (moveName) no other
// move of this drain took.
func (d *drainer) freeNameTime(it drainItem) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	at := time.Now()
	for d.names[moveName(it.tenant, it.database, at)] {
		at = at.Add(time.Second)
	}
	d.names[moveName(it.tenant, it.database, at)] = true
	return at
}

// summarize prints the drain's outcome, and the db confirm commands of the moves left Switched,
// and returns the failures.
func (d *drainer) summarize(planned int) error {
	slices.SortFunc(d.results, func(a, b drainResult) int { return cmp.Compare(a.index, b.index) })
	moved, alone := 0, 0
	var errs []error
	var unconfirmed []string
	for _, r := range d.results {
		switch {
		case r.err != nil:
			errs = append(errs, r.err)
		case r.moved:
			moved++
		default:
			alone++
		}
		if r.unconfirmed {
			unconfirmed = append(unconfirmed, r.move)
		}
	}
	leftAlone := ""
	if alone > 0 {
		leftAlone = fmt.Sprintf(", %s left alone (no longer on it)", counted(alone, "database"))
	}
	if notStarted := planned - len(d.results); len(errs) > 0 || notStarted > 0 {
		fmt.Fprintf(d.out, "DatabaseServer %s not drained: %s moved off it%s, %d failed, %d not started; run the command again once the failure is dealt with\n",
			d.server, counted(moved, "database"), leftAlone, len(errs), notStarted)
	} else {
		fmt.Fprintf(d.out, "DatabaseServer %s drained: %s moved off it%s\n", d.server, counted(moved, "database"), leftAlone)
	}
	if len(unconfirmed) > 0 {
		fmt.Fprintf(d.out, "The old copies of %s are kept until the moves are confirmed: check the tenants on %s, then run (or run the drain again with --confirm):\n",
			counted(len(unconfirmed), "database"), d.o.to)
		for _, name := range unconfirmed {
			fmt.Fprintf(d.out, "  landlordctl db confirm %s\n", name)
		}
	}
	return errors.Join(errs...)
}

// counted is n databases, or 1 database.
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// lockedWriter lets the moves of a drain under way at once write whole lines, one at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
