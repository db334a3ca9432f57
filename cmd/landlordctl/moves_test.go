package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// movesClient is a fake cluster with tenant acme, DatabaseServer pg-2 and the moves given. A
// wait watches a move by name, a field selector the fake client answers from an index.
func movesClient(moves ...client.Object) client.WithWatch {
	objs := append([]client.Object{
		&tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}},
		&tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: "pg-2"}},
	}, moves...)
	return fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(objs...).
		WithStatusSubresource(&tenancyv1alpha1.DatabaseMove{}).
		WithIndex(&tenancyv1alpha1.DatabaseMove{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		Build()
}

// dbMove is a move of acme's database app to pg-2 in phase.
func dbMove(name string, phase tenancyv1alpha1.DatabaseMovePhase) *tenancyv1alpha1.DatabaseMove {
	return &tenancyv1alpha1.DatabaseMove{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.DatabaseMoveSpec{Tenant: "acme", Database: "app", Server: "pg-2"},
		Status: tenancyv1alpha1.DatabaseMoveStatus{Phase: phase,
			From: &tenancyv1alpha1.DatabaseLocation{Server: "pg-1", Database: "acme_app", Username: "acme_app"}},
	}
}

func TestDBMoveCreatesAMoveOfTheDatabaseToTheServerNamed(t *testing.T) {
	at := time.Unix(1765000000, 0)
	for _, tc := range []struct {
		name, tenant, database string
		o                      dbMoveOptions
		wantName, err          string
		usage                  bool
	}{
		{name: "a move without --name is named after the tenant, the database and the time",
			tenant: "acme", database: "app", o: dbMoveOptions{to: "pg-2"}, wantName: "acme-app-1765000000"},
		{name: "a name given is kept", tenant: "acme", database: "app", o: dbMoveOptions{to: "pg-2", name: "acme-app-to-pg-2"}, wantName: "acme-app-to-pg-2"},
		{name: "a server that does not exist is said so, and nothing is created",
			tenant: "acme", database: "app", o: dbMoveOptions{to: "pg-9"}, err: `database server "pg-9" not found`},
		{name: "a tenant that does not exist is said so, and nothing is created",
			tenant: "globex", database: "app", o: dbMoveOptions{to: "pg-2"}, err: `tenant "globex" not found`},
		{name: "a database name that the API refuses is a usage error",
			tenant: "acme", database: "App_DB", o: dbMoveOptions{to: "pg-2"}, err: `DATABASE "App_DB"`, usage: true},
		{name: "a --name longer than 63 characters is a usage error",
			tenant: "acme", database: "app", o: dbMoveOptions{to: "pg-2", name: strings.Repeat("m", 64)}, err: "--name", usage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := movesClient()
			var out bytes.Buffer
			m, err := tc.o.newMove(tc.tenant, tc.database, at)
			if err == nil {
				err = runDBMove(context.Background(), c, &tc.o, m, &out, io.Discard)
			} else {
				err = asUsage(err)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || errors.As(err, new(usageError)) != tc.usage {
					t.Fatalf("err = %v, want one saying %q (usage error: %t)", err, tc.err, tc.usage)
				}
				list := &tenancyv1alpha1.DatabaseMoveList{}
				if err := c.List(context.Background(), list); err != nil || len(list.Items) != 0 {
					t.Fatalf("moves %v, %v; want none", list.Items, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := &tenancyv1alpha1.DatabaseMove{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: tc.wantName}, got); err != nil {
				t.Fatal(err)
			}
			want := tenancyv1alpha1.DatabaseMoveSpec{Tenant: tc.tenant, Database: tc.database, Server: tc.o.to}
			if got.Spec != want {
				t.Errorf("spec %+v, want %+v", got.Spec, want)
			}
			for _, line := range []string{"databasemove/" + tc.wantName + " created", "landlordctl get moves " + tc.wantName, "landlordctl db confirm " + tc.wantName} {
				if !strings.Contains(out.String(), line) {
					t.Errorf("output does not say %q:\n%s", line, out.String())
				}
			}
		})
	}
}

func TestADefaultMoveNameIsLowercaseAndAtMost63Characters(t *testing.T) {
	at := time.Unix(1765000000, 0)
	for _, tc := range []struct {
		name, tenant, database, want string
	}{
		{name: "short names are kept whole", tenant: "acme", database: "app", want: "acme-app-1765000000"},
		{name: "long names are cut, without a dash before the time",
			tenant: strings.Repeat("t", 50), database: strings.Repeat("d", 30),
			want: strings.Repeat("t", 50) + "-d-1765000000"},
		{name: "a cut that ends on the dash drops it", tenant: strings.Repeat("t", 51), database: "d",
			want: strings.Repeat("t", 51) + "-1765000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := moveName(tc.tenant, tc.database, at)
			if got != tc.want || len(got) > 63 || got != strings.ToLower(got) {
				t.Errorf("moveName = %q (%d characters), want %q", got, len(got), tc.want)
			}
		})
	}
}

func TestDBConfirmConfirmsOnlyASwitchedMove(t *testing.T) {
	for _, tc := range []struct {
		name          string
		phase         tenancyv1alpha1.DatabaseMovePhase
		confirmed     bool
		err, out      string
		wantConfirmed bool
	}{
		{name: "a Copying move is refused with its phase, and left unconfirmed", phase: tenancyv1alpha1.MoveCopying,
			err: "database move acme-app-1 is Copying, not Switched: the tenant does not run on DatabaseServer pg-2 yet"},
		{name: "a Failed move is refused: there is nothing to confirm", phase: tenancyv1alpha1.MoveFailed,
			err: "database move acme-app-1 is Failed, not Switched: it was stopped and rolled back"},
		{name: "a move with no phase yet is refused", phase: "", err: "database move acme-app-1 is <none>, not Switched"},
		{name: "a Switched move is patched to confirmed", phase: tenancyv1alpha1.MoveSwitched, wantConfirmed: true,
			out: "databasemove/acme-app-1 confirmed: the old database \"acme_app\" on DatabaseServer pg-1 and its login are dropped next"},
		{name: "a Succeeded move was confirmed already, and is left as it is", phase: tenancyv1alpha1.MoveSucceeded, confirmed: true, wantConfirmed: true,
			out: "databasemove/acme-app-1 is Succeeded: it was confirmed already; nothing to do"},
		{name: "a Dropping move was confirmed already, and is left as it is", phase: tenancyv1alpha1.MoveDropping, confirmed: true, wantConfirmed: true,
			out: "databasemove/acme-app-1 is Dropping: it was confirmed already; nothing to do"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := dbMove("acme-app-1", tc.phase)
			m.Spec.Confirmed = tc.confirmed
			c := movesClient(m)
			var out bytes.Buffer
			err := confirmMove(context.Background(), c, "acme-app-1", &out)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one starting %q", err, tc.err)
				}
			} else if err != nil || !strings.HasPrefix(out.String(), tc.out) {
				t.Fatalf("err = %v, output %q; want %q", err, out.String(), tc.out)
			}
			got := &tenancyv1alpha1.DatabaseMove{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: "acme-app-1"}, got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.Confirmed != tc.wantConfirmed {
				t.Errorf("spec.confirmed = %t, want %t", got.Spec.Confirmed, tc.wantConfirmed)
			}
		})
	}
	t.Run("a move that does not exist is said so", func(t *testing.T) {
		err := confirmMove(context.Background(), movesClient(), "nobody", io.Discard)
		if err == nil || err.Error() != `database move "nobody" not found` {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestTheMovesTableShowsWhereEachMoveIsAndItsDowntime(t *testing.T) {
	switched := dbMove("acme-app-1", tenancyv1alpha1.MoveSwitched)
	switched.Status.Downtime = &metav1.Duration{Duration: 1234567 * time.Microsecond}
	copying := dbMove("acme-app-2", tenancyv1alpha1.MoveCopying)
	var out bytes.Buffer
	table := moveTable([]tenancyv1alpha1.DatabaseMove{*switched, *copying})
	if err := printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(table, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, want := range []string{
		"NAME TENANT DATABASE FROM TO PHASE DOWNTIME AGE",
		"acme-app-1 acme app pg-1 pg-2 Switched 1.235s",
		"acme-app-2 acme app pg-1 pg-2 Copying <none>",
	} {
		if i >= len(lines) || !strings.HasPrefix(strings.Join(strings.Fields(lines[i]), " "), want) {
			t.Errorf("line %d does not start %q:\n%s", i, want, out.String())
		}
	}
}

func TestDescribeShowsAMovesLocationsAndDowntime(t *testing.T) {
	m := dbMove("acme-app-1", tenancyv1alpha1.MoveSwitched)
	m.Status.To = &tenancyv1alpha1.DatabaseLocation{Server: "pg-2", Database: "acme_app", Username: "acme_app_2"}
	m.Status.Downtime = &metav1.Duration{Duration: 2 * time.Second}
	var out bytes.Buffer
	d := newDescriber(&out)
	describeMove(d, m)
	if err := d.flush(); err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Expect(out.String()).To(And(
		MatchRegexp(`(?m)^To server:\s+pg-2$`),
		MatchRegexp(`(?m)^Phase:\s+Switched$`),
		MatchRegexp(`(?m)^Downtime:\s+2s$`),
		MatchRegexp(`(?m)^  From\s+pg-1\s+acme_app\s+acme_app$`),
		MatchRegexp(`(?m)^  To\s+pg-2\s+acme_app\s+acme_app_2$`),
	))
}

// With --wait, each phase the move reaches is said as it is reached, and the wait ends at
// Switched with the cut-over's downtime; a Failed move ends it with its reason.
func TestWaitingForAMoveSaysEachPhaseAndEndsAtSwitchedOrFailed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := dbMove("acme-app-1", tenancyv1alpha1.MoveCopying)
	m.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue,
		Reason: tenancyv1alpha1.ReasonMoving, Message: "Copying database app of tenant acme to DatabaseServer pg-2", LastTransitionTime: metav1.Now()}}
	c := movesClient(m)
	progress := &syncBuffer{}
	type result struct {
		m   *tenancyv1alpha1.DatabaseMove
		err error
	}
	ended := make(chan result, 1)
	go func() {
		got, err := waitMoved(ctx, c, "acme-app-1", time.Minute, progress)
		ended <- result{got, err}
	}()
	g.Eventually(progress.String).WithTimeout(10 * time.Second).Should(Equal(
		"database move acme-app-1: Copying: Moving: Copying database app of tenant acme to DatabaseServer pg-2\n"))

	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
	m.Status.Phase = tenancyv1alpha1.MoveSwitched
	m.Status.Downtime = &metav1.Duration{Duration: 1500 * time.Millisecond}
	m.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
		Reason: tenancyv1alpha1.ReasonMoveUnconfirmed, Message: "tenant acme runs on DatabaseServer pg-2", LastTransitionTime: metav1.Now()}}
	g.Expect(c.Status().Update(ctx, m)).To(Succeed())
	var r result
	g.Eventually(ended).WithTimeout(10 * time.Second).Should(Receive(&r))
	g.Expect(r.err).NotTo(HaveOccurred())
	g.Expect(moveDowntime(r.m)).To(Equal("1.5s"))
	g.Expect(progress.String()).To(HaveSuffix("database move acme-app-1: Switched: MoveUnconfirmed: tenant acme runs on DatabaseServer pg-2\n"))

	failed := dbMove("acme-app-2", tenancyv1alpha1.MoveFailed)
	failed.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.StalledCondition, Status: metav1.ConditionTrue,
		Reason: tenancyv1alpha1.ReasonMoveRefused, Message: "DatabaseServer pg-2 is mysql", LastTransitionTime: metav1.Now()}}
	_, err := waitMoved(ctx, movesClient(failed), "acme-app-2", time.Minute, io.Discard)
	g.Expect(err).To(MatchError("database move acme-app-2 failed: Failed: MoveRefused: DatabaseServer pg-2 is mysql; the database is where it was"))
}
