package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// drainClient is a fake cluster with the PostgreSQL DatabaseServers pg-1 and pg-2, the MySQL
// one my-1, and the objects given. A move is waited for by name, a field selector the fake
// client answers from an index.
func drainClient(objs ...client.Object) client.WithWatch {
	server := func(name string, engine tenancyv1alpha1.DatabaseEngine) client.Object {
		return &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: tenancyv1alpha1.DatabaseServerSpec{Engine: engine, Host: name + ".db"}}
	}
	objs = append([]client.Object{
		server("pg-1", tenancyv1alpha1.EnginePostgres), server("pg-2", tenancyv1alpha1.EnginePostgres),
		server("my-1", tenancyv1alpha1.EngineMySQL),
	}, objs...)
	return fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(objs...).
		WithStatusSubresource(&tenancyv1alpha1.DatabaseMove{}, &tenancyv1alpha1.Tenant{}).
		WithIndex(&tenancyv1alpha1.DatabaseMove{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		WithInterceptorFuncs(interceptor.Funcs{Watch: watchFromTheList}).
		Build()
}

// watchFromTheList makes up for the fake client's watch, which starts when it is called rather
// than at the resourceVersion listed, as an API server's does: a change made between a wait's
// list and its watch (a move that fails at once) would be lost. Once the watch started, the
// objects are sent as they are then, as Modified events, and then the watch's own.
func watchFromTheList(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	w, err := c.Watch(ctx, list, opts...)
	if err != nil {
		return nil, err
	}
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	now := list.DeepCopyObject().(client.ObjectList)
	if err := c.List(ctx, now, &client.ListOptions{Namespace: o.Namespace, FieldSelector: o.FieldSelector, LabelSelector: o.LabelSelector}); err != nil {
		w.Stop()
		return nil, err
	}
	objs, err := meta.ExtractList(now)
	if err != nil {
		w.Stop()
		return nil, err
	}
	events := make(chan watch.Event)
	proxy := watch.NewProxyWatcher(events)
	go func() {
		defer close(events)
		defer w.Stop()
		send := func(ev watch.Event) bool {
			select {
			case events <- ev:
				return true
			case <-proxy.StopChan():
				return false
			}
		}
		for _, obj := range objs {
			if !send(watch.Event{Type: watch.Modified, Object: obj}) {
				return
			}
		}
		for ev := range w.ResultChan() {
			if !send(ev) {
				return
			}
		}
	}()
	return proxy, nil
}

// tenantWith is a tenant whose status places its PostgreSQL databases, each given as
// database=server.
func tenantWith(name string, databases ...string) *tenancyv1alpha1.Tenant {
	t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, d := range databases {
		db, server, _ := strings.Cut(d, "=")
		t.Status.Databases = append(t.Status.Databases, tenancyv1alpha1.DatabaseStatus{
			Engine: tenancyv1alpha1.EnginePostgres, Name: db, Server: server,
			Database: name + "_" + db, Username: name + "_" + db, SecretName: "db-" + db})
	}
	return t
}

// drainTenants are acme (app on pg-1, logs on pg-3), globex (app on pg-1) and initech (crm and
// app on pg-1): four databases to drain off pg-1, in the order acme/app, globex/app, initech/app,
// initech/crm.
func drainTenants() []client.Object {
	return []client.Object{
		tenantWith("initech", "crm=pg-1", "app=pg-1"),
		tenantWith("acme", "app=pg-1", "logs=pg-3"),
		tenantWith("globex", "app=pg-1"),
	}
}

// movedOff is a move of the tenant's database from pg-1 to pg-2, in phase.
func movedOff(name, tenant, database string, phase tenancyv1alpha1.DatabaseMovePhase) *tenancyv1alpha1.DatabaseMove {
	return &tenancyv1alpha1.DatabaseMove{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.DatabaseMoveSpec{Tenant: tenant, Database: database, Server: "pg-2"},
		Status: tenancyv1alpha1.DatabaseMoveStatus{Phase: phase, Engine: tenancyv1alpha1.EnginePostgres,
			From: &tenancyv1alpha1.DatabaseLocation{Server: "pg-1", Database: tenant + "_" + database, Username: tenant + "_" + database}},
	}
}

// fakeOperator stands in for the operator's move controller: every tick it advances each move
// one phase (Pending, Copying, Switching, Switched; once confirmed Dropping, then Succeeded),
// and rewrites the tenant's status.databases to the new server at the switch. It refuses the
// moves of the databases in fail, with their message, and keeps those in pendingUntil Pending
// until the drain's output says their text. It records the most moves it saw under way, before
// their switch, at once.
type fakeOperator struct {
	c            client.WithWatch
	fail         map[tenantDatabase]string
	pendingUntil map[tenantDatabase]string
	out          *syncBuffer

	mu           sync.Mutex
	mostUnderWay int
	errs         []error
}

// start runs the operator until the returned stop is called.
func (f *fakeOperator) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				f.step(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (f *fakeOperator) step(ctx context.Context) {
	moves := &tenancyv1alpha1.DatabaseMoveList{}
	if err := f.c.List(ctx, moves); err != nil {
		f.fault(err)
		return
	}
	underWay := 0
	for _, m := range moves.Items {
		switch m.Status.Phase {
		case "", tenancyv1alpha1.MovePending, tenancyv1alpha1.MoveCopying, tenancyv1alpha1.MoveSwitching, tenancyv1alpha1.MoveRollingBack:
			underWay++
		}
	}
	f.mu.Lock()
	f.mostUnderWay = max(f.mostUnderWay, underWay)
	f.mu.Unlock()
	for i := range moves.Items {
		f.fault(f.advance(ctx, &moves.Items[i]))
	}
}

func (f *fakeOperator) advance(ctx context.Context, m *tenancyv1alpha1.DatabaseMove) error {
	key := tenantDatabase{m.Spec.Tenant, m.Spec.Database}
	st := &m.Status
	switch st.Phase {
	case "":
		if message, ok := f.fail[key]; ok {
			st.Phase = tenancyv1alpha1.MoveFailed
			st.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue,
				Reason: tenancyv1alpha1.ReasonMoveRefused, Message: message, LastTransitionTime: metav1.Now()}}
			break
		}
		t, db, err := f.database(ctx, key)
		if err != nil {
			return err
		}
		st.Phase, st.Engine = tenancyv1alpha1.MovePending, db.Engine
		st.From = &tenancyv1alpha1.DatabaseLocation{Server: db.Server, Database: db.Database, Username: db.Username}
		st.TenantUID = string(t.UID)
	case tenancyv1alpha1.MovePending:
		if text, ok := f.pendingUntil[key]; ok && !strings.Contains(f.out.String(), text) {
			return nil
		}
		st.Phase = tenancyv1alpha1.MoveCopying
	case tenancyv1alpha1.MoveCopying:
		st.Phase = tenancyv1alpha1.MoveSwitching
	case tenancyv1alpha1.MoveSwitching:
		t, db, err := f.database(ctx, key)
		if err != nil {
			return err
		}
		db.Server = m.Spec.Server
		if err := f.c.Status().Update(ctx, t); err != nil {
			return err
		}
		st.Phase, st.Downtime = tenancyv1alpha1.MoveSwitched, &metav1.Duration{Duration: 1500 * time.Millisecond}
	case tenancyv1alpha1.MoveSwitched:
		if !m.Spec.Confirmed {
			return nil
		}
		st.Phase = tenancyv1alpha1.MoveDropping
	case tenancyv1alpha1.MoveDropping:
		st.Phase = tenancyv1alpha1.MoveSucceeded
	default:
		return nil
	}
	return f.c.Status().Update(ctx, m)
}

// database is the tenant and its database's status, to change in place.
func (f *fakeOperator) database(ctx context.Context, key tenantDatabase) (*tenancyv1alpha1.Tenant, *tenancyv1alpha1.DatabaseStatus, error) {
	t := &tenancyv1alpha1.Tenant{}
	if err := f.c.Get(ctx, client.ObjectKey{Name: key.tenant}, t); err != nil {
		return nil, nil, err
	}
	for i := range t.Status.Databases {
		if t.Status.Databases[i].Name == key.database {
			return t, &t.Status.Databases[i], nil
		}
	}
	return nil, nil, errors.New("tenant " + key.tenant + " has no database " + key.database)
}

// fault records an error of the operator's; a write that lost a race with the drain's own is
// tried again on the next tick.
func (f *fakeOperator) fault(err error) {
	if err == nil || apierrors.IsConflict(err) || errors.Is(err, context.Canceled) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, err)
}

func TestDBDrainMovesEveryDatabaseOffTheServer(t *testing.T) {
	pg2 := func(o dbDrainOptions) dbDrainOptions {
		o.to = "pg-2"
		o.concurrency = max(o.concurrency, 1)
		o.timeout = cmp.Or(o.timeout, 10*time.Second)
		return o
	}
	for _, tc := range []struct {
		name    string
		server  string // pg-1 unless set
		o       dbDrainOptions
		tenants []client.Object // drainTenants() unless set
		moves   []client.Object
		fail    map[tenantDatabase]string
		// pendingUntil keeps a database's move Pending until the output says the text.
		pendingUntil map[tenantDatabase]string

		// err is what the error says, when the drain fails; usage, whether it is a usage error.
		err   string
		usage bool
		// lines are regular expressions the output matches, one after the other; absent, text
		// it does not hold.
		lines  []string
		absent []string
		// movesAfter is how many moves there are at the end.
		movesAfter int
		// mostUnderWay is the most moves the operator may have seen under way at once (0: not checked).
		mostUnderWay int
		// emptied: no tenant's database is on pg-1 at the end. confirmed: every move is confirmed.
		emptied, confirmed bool
	}{
		{name: "every database on the server is moved, one at a time, and the server ends with none",
			o: pg2(dbDrainOptions{}), movesAfter: 4, mostUnderWay: 1, emptied: true,
			lines: []string{
				`databasemove/acme-app-\d+ created: moves database app \(postgres\) of tenant acme from DatabaseServer pg-1 to pg-2\n`,
				`databasemove/acme-app-\d+ switched: database app of tenant acme runs on DatabaseServer pg-2; the cut-over took 1.5s\n`,
				`databasemove/globex-app-\d+ created`, `databasemove/globex-app-\d+ switched`,
				`databasemove/initech-app-\d+ created`, `databasemove/initech-app-\d+ switched`,
				`databasemove/initech-crm-\d+ created`, `databasemove/initech-crm-\d+ switched`,
				`DatabaseServer pg-1 drained: 4 databases moved off it\n`,
				`The old copies of 4 databases are kept until the moves are confirmed: check the tenants on pg-2`,
				`\n  landlordctl db confirm acme-app-\d+\n  landlordctl db confirm globex-app-\d+\n  landlordctl db confirm initech-app-\d+\n  landlordctl db confirm initech-crm-\d+\n$`,
			},
			absent: []string{"logs"}},
		{name: "with --concurrency 2 no more than two moves are under way at once",
			o: pg2(dbDrainOptions{concurrency: 2}), movesAfter: 4, mostUnderWay: 2, emptied: true,
			lines: []string{`DatabaseServer pg-1 drained: 4 databases moved off it\n`}},
		{name: "a move already under way for a database is waited for, not duplicated",
			o: pg2(dbDrainOptions{}), moves: []client.Object{movedOff("globex-app-1", "globex", "app", tenancyv1alpha1.MoveCopying)},
			movesAfter: 4, mostUnderWay: 1, emptied: true,
			lines: []string{
				`^databasemove/globex-app-1 of database app of tenant globex is under way \(Copying\): waiting for it rather than moving the database again\n`,
				`databasemove/globex-app-1 switched`,
				`databasemove/acme-app-\d+ created`, `databasemove/acme-app-\d+ switched`,
				`databasemove/initech-app-\d+ created`,
				`DatabaseServer pg-1 drained: 4 databases moved off it\n`,
			},
			absent: []string{"databasemove/globex-app-1 created"}},
		{name: "with --confirm each move is confirmed once switched, and no confirm command is left to run",
			o: pg2(dbDrainOptions{confirm: true}), movesAfter: 4, mostUnderWay: 1, emptied: true, confirmed: true,
			lines: []string{
				`databasemove/acme-app-\d+ switched`,
				`databasemove/acme-app-\d+ confirmed: the old database "acme_app" on DatabaseServer pg-1 and its login are dropped next`,
				`databasemove/globex-app-\d+ created`,
				`databasemove/initech-crm-\d+ confirmed`,
				`DatabaseServer pg-1 drained: 4 databases moved off it\n$`,
			},
			absent: []string{"landlordctl db confirm"}},
		{name: "a move an earlier drain left switched is confirmed with --confirm",
			o:          pg2(dbDrainOptions{confirm: true}),
			tenants:    []client.Object{tenantWith("globex", "app=pg-2")},
			moves:      []client.Object{movedOff("globex-app-1", "globex", "app", tenancyv1alpha1.MoveSwitched)},
			movesAfter: 1, emptied: true, confirmed: true,
			lines: []string{
				`databasemove/globex-app-1 of database app of tenant globex is under way \(Switched\)`,
				`databasemove/globex-app-1 confirmed`,
				`DatabaseServer pg-1 drained: 1 database moved off it\n$`,
			}},
		{name: "a failed move stops the drain with its message, and no other move starts",
			o:          pg2(dbDrainOptions{}),
			fail:       map[tenantDatabase]string{{"globex", "app"}: "DatabaseServer pg-2 runs PostgreSQL 15, older than pg-1's 16"},
			err:        `database move globex-app-\d+ failed: Failed: MoveRefused: DatabaseServer pg-2 runs PostgreSQL 15, older than pg-1's 16; the database is where it was`,
			movesAfter: 2, mostUnderWay: 1,
			lines: []string{
				`databasemove/acme-app-\d+ switched`, `databasemove/globex-app-\d+ created`,
				`DatabaseServer pg-1 not drained: 1 database moved off it, 1 failed, 2 not started; run the command again once the failure is dealt with\n`,
				`\n  landlordctl db confirm acme-app-\d+\n$`,
			},
			absent: []string{"initech"}},
		{name: "a failed move stops the drain once the moves in flight end",
			o:            pg2(dbDrainOptions{concurrency: 2}),
			fail:         map[tenantDatabase]string{{"acme", "app"}: "DatabaseServer pg-2 is not Ready"},
			pendingUntil: map[tenantDatabase]string{{"globex", "app"}: "drain stopped"},
			err:          `database move acme-app-\d+ failed: Failed: MoveRefused: DatabaseServer pg-2 is not Ready`,
			movesAfter:   2, mostUnderWay: 2,
			lines: []string{
				`drain stopped at database app of tenant acme: no other move starts; waiting for the 1 move under way to end\n`,
				`databasemove/globex-app-\d+ switched`,
				`DatabaseServer pg-1 not drained: 1 database moved off it, 1 failed, 2 not started`,
			},
			absent: []string{"initech"}},
		{name: "a move that does not switch within --timeout stops the drain",
			o:            pg2(dbDrainOptions{timeout: 300 * time.Millisecond}),
			pendingUntil: map[tenantDatabase]string{{"acme", "app"}: "never"},
			err:          `database move acme-app-\d+ did not switch within 300ms: it is Pending`,
			movesAfter:   1,
			lines:        []string{`DatabaseServer pg-1 not drained: 0 databases moved off it, 1 failed, 3 not started`}},
		{name: "--dry-run prints what it would move and wait for, and creates nothing",
			o:          pg2(dbDrainOptions{dryRun: true}),
			moves:      []client.Object{movedOff("globex-app-1", "globex", "app", tenancyv1alpha1.MoveCopying)},
			movesAfter: 1,
			lines: []string{
				`^would wait for databasemove/globex-app-1 \(Copying\), under way to DatabaseServer pg-2, of database app of tenant globex\n`,
				`would move database app \(postgres\) of tenant acme from DatabaseServer pg-1 to pg-2\n`,
				`would move database app \(postgres\) of tenant initech from DatabaseServer pg-1 to pg-2\n`,
				`would move database crm \(postgres\) of tenant initech from DatabaseServer pg-1 to pg-2\n`,
				`DatabaseServer pg-1 would be drained: 3 databases moved to pg-2, 1 move under way waited for \(dry run: nothing was created\)\n$`,
			}},
		{name: "a server that holds no database has nothing to drain", server: "pg-2",
			o:     dbDrainOptions{to: "pg-1", concurrency: 1, timeout: time.Second},
			lines: []string{`^DatabaseServer pg-2 holds no tenant's database and no move off it is under way: nothing to drain\n$`}},
		{name: "draining a server to itself is a usage error, and nothing is created",
			o: dbDrainOptions{to: "pg-1", concurrency: 1, timeout: time.Second}, usage: true,
			err: `--to pg-1 is the server drained: name another DatabaseServer to move its databases to`},
		{name: "a target that does not exist is said so, and nothing is created",
			o:   dbDrainOptions{to: "pg-9", concurrency: 1, timeout: time.Second},
			err: `database server "pg-9" not found`},
		{name: "a target of another engine is refused, and nothing is created",
			o:   dbDrainOptions{to: "my-1", concurrency: 1, timeout: time.Second},
			err: `DatabaseServer my-1 is mysql: it cannot take database app of tenant acme \(postgres\), app of tenant globex \(postgres\), .*\(nothing was created\)`},
		{name: "a concurrency below 1 is a usage error", o: dbDrainOptions{to: "pg-2", timeout: time.Second}, usage: true,
			err: `--concurrency must be at least 1; got 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := cmp.Or(tc.server, "pg-1")
			tenants := tc.tenants
			if tenants == nil {
				tenants = drainTenants()
			}
			c := drainClient(append(tenants, tc.moves...)...)
			out := &syncBuffer{}
			op := &fakeOperator{c: c, fail: tc.fail, pendingUntil: tc.pendingUntil, out: out}
			stop := op.start()
			err := asUsage(tc.o.validate(server))
			if err == nil {
				err = runDBDrain(context.Background(), c, server, &tc.o, out, io.Discard)
			}
			stop()
			for _, e := range op.errs {
				t.Errorf("the fake operator: %v", e)
			}

			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("err = %v; output:\n%s", err, out.String())
			case tc.err != "" && (err == nil || !regexp.MustCompile(tc.err).MatchString(err.Error())):
				t.Fatalf("err = %v, want one matching %q; output:\n%s", err, tc.err, out.String())
			case err != nil && errors.As(err, new(usageError)) != tc.usage:
				t.Fatalf("err = %v is a usage error: %t, want %t", err, !tc.usage, tc.usage)
			}
			rest := out.String()
			for _, line := range tc.lines {
				loc := regexp.MustCompile(line).FindStringIndex(rest)
				if loc == nil {
					t.Fatalf("output does not go on with %q; output:\n%s", line, out.String())
				}
				rest = rest[loc[1]:]
			}
			for _, text := range tc.absent {
				if strings.Contains(out.String(), text) {
					t.Errorf("output says %q:\n%s", text, out.String())
				}
			}

			moves := &tenancyv1alpha1.DatabaseMoveList{}
			if err := c.List(context.Background(), moves); err != nil {
				t.Fatal(err)
			}
			if len(moves.Items) != tc.movesAfter {
				t.Errorf("%d moves at the end, want %d", len(moves.Items), tc.movesAfter)
			}
			moved := map[tenantDatabase]string{}
			for _, m := range moves.Items {
				key := tenantDatabase{m.Spec.Tenant, m.Spec.Database}
				if other, ok := moved[key]; ok {
					t.Errorf("database %s of tenant %s has two moves, %s and %s", key.database, key.tenant, other, m.Name)
				}
				moved[key] = m.Name
				if m.Spec.Server != "pg-2" {
					t.Errorf("move %s goes to %s, want pg-2", m.Name, m.Spec.Server)
				}
				if tc.confirmed && !m.Spec.Confirmed {
					t.Errorf("move %s is not confirmed", m.Name)
				}
				if !tc.confirmed && m.Spec.Confirmed {
					t.Errorf("move %s is confirmed without --confirm", m.Name)
				}
			}
			if tc.mostUnderWay > 0 && (op.mostUnderWay < 1 || op.mostUnderWay > tc.mostUnderWay) {
				t.Errorf("the operator saw %d moves under way at once, want between 1 and %d", op.mostUnderWay, tc.mostUnderWay)
			}
			if tc.emptied {
				list := &tenancyv1alpha1.TenantList{}
				if err := c.List(context.Background(), list); err != nil {
					t.Fatal(err)
				}
				for _, tenant := range list.Items {
					for _, db := range tenant.Status.Databases {
						if db.Server == "pg-1" {
							t.Errorf("database %s of tenant %s is still on pg-1", db.Name, tenant.Name)
						}
					}
				}
			}
		})
	}
}
