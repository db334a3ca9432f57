package faults_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// defaultSeed makes a run reproducible by default; LANDLORD_FAULT_SEED picks another.
const defaultSeed = 1

// defaultRounds of kill and restart, as `go test` and `make test` run them; LANDLORD_FAULT_ROUNDS
// picks another number, and `make test-faults-long` runs 30. A round takes about two seconds,
// so the default keeps the suite short, and the long run meets three times as many kills and
// their timings. With the same seed, a shorter run is the first rounds of a longer one.
const defaultRounds = 10

// maxKillDelay bounds how long an operator runs after its round's operations before it is
// killed: long enough to be anywhere in a reconcile, short enough for 30 rounds.
const maxKillDelay = 3 * time.Second

func TestSIGKILLAtRandomPointsLosesNoTenantData(t *testing.T) {
	const scenario = "sigkill"
	seed := envInt(t, "LANDLORD_FAULT_SEED", defaultSeed)
	rounds := envInt(t, "LANDLORD_FAULT_ROUNDS", defaultRounds)
	t.Logf("seed %d, %d rounds (LANDLORD_FAULT_SEED and LANDLORD_FAULT_ROUNDS reproduce or change them); leases of %s, renewed within %s, tried every %s",
		seed, rounds, leaseDuration, renewDeadline, retryPeriod)
	ctx := context.Background()
	deleteLease(t)

	f := &fleet{
		t: t, scenario: scenario, rng: rand.New(rand.NewPCG(uint64(seed), 0)),
		tenants: map[string]*modelTenant{}, pool: scenario + "-pool",
	}
	NewWithT(t).Expect(env.AdminClient.Create(ctx, newPool(scenario, f.pool, 2))).To(Succeed())

	var procs []*operatorProcess
	for round := 1; round <= rounds && !t.Failed(); round++ {
		f.refreshClaims()
		ops := f.plan(1 + f.rng.IntN(3))
		// Some operations land while no operator runs, to be found by the next one's start-up
		// sync; the rest while it runs, to be cut short by the kill.
		// They keep their order (a purge before the delete of the same tenant).
		cut := 0
		for cut < len(ops) && f.rng.IntN(4) == 0 {
			cut++
		}
		whileDown, whileUp := ops[:cut], ops[cut:]
		delay := time.Duration(f.rng.Int64N(int64(maxKillDelay)))
		// Most kills land once the operator leads, somewhere in its reconciles; some while it
		// starts up (reads its configuration, syncs its caches, takes the lease).
		elected := f.rng.IntN(5) != 0
		when := "after them, once elected"
		if !elected {
			when = "after them, right from start-up"
		}
		t.Logf("round %d: while down [%s]; while up [%s]; kill %s %s", round, describe(whileDown), describe(whileUp), delay.Round(time.Millisecond), when)

		f.apply(whileDown)
		p := startOperator(t, fmt.Sprintf("%s-%02d", scenario, round))
		procs = append(procs, p)
		if elected {
			waitLeader(t, p)
		}
		f.apply(whileUp)
		// The fault's timing is what is being varied here, not a wait for a state.
		time.Sleep(delay)
		p.kill(t)
		deleteLease(t)
	}
	if t.Failed() {
		return
	}

	last := startOperator(t, scenario+"-final")
	procs = append(procs, last)
	waitLeader(t, last)
	checkInvariants(t, scenario, f.kept...)
	logOperatorErrors(t, procs...)
	t.Logf("final model: %s", f)
	if t.Failed() {
		t.Logf("tenants:\n%s", describeTenants(scenario))
	}
	last.stop(t)
	deleteLease(t)
}

// fleet is the scenario's model of its tenants: what it asked for, from which the random
// operations are drawn. The cluster's own state is what the invariants check.
type fleet struct {
	t        *testing.T
	scenario string
	rng      *rand.Rand
	pool     string

	tenants map[string]*modelTenant // by name, those not deleted
	// reusable are names of tenants Purged and deleted: a new tenant may take one, and must
	// not find anything of the earlier one.
	reusable []string
	next     int
	// claims not yet seen Bound; their tenants join the model once they are.
	pendingClaims []string
	claims        int
	kept          []keptData
}

type modelTenant struct {
	name    string
	state   tenancyv1alpha1.TenantState
	engine  tenancyv1alpha1.DatabaseEngine
	claimed bool
}

// operation is one change to the fleet, made as an administrator would.
type operation struct {
	kind   string
	tenant string
	engine tenancyv1alpha1.DatabaseEngine
}

func (o operation) String() string {
	if o.kind == "create" {
		return fmt.Sprintf("create %s (%s)", o.tenant, o.engine)
	}
	return o.kind + " " + o.tenant
}

func describe(ops []operation) string {
	var s []string
	for _, o := range ops {
		s = append(s, o.String())
	}
	return strings.Join(s, "; ")
}

// opKinds are the operations drawn, as often as they appear: mostly ones that leave data to
// check (creates, archives and restores), some that remove it.
var opKinds = []string{"create", "create", "create", "create", "archive", "archive", "restore", "restore", "restore", "purge", "delete", "claim", "claim"}

const (
	maxNamedTenants = 5
	maxClaims       = 4
)

// plan draws n operations that are valid for the model, and updates the model as if they
// were applied.
func (f *fleet) plan(n int) []operation {
	var ops []operation
	for len(ops) < n {
		var live []*modelTenant
		named := 0
		for _, m := range f.tenants {
			live = append(live, m)
			if !m.claimed {
				named++
			}
		}
		slices.SortFunc(live, func(a, b *modelTenant) int { return strings.Compare(a.name, b.name) })
		withState := func(states ...tenancyv1alpha1.TenantState) []*modelTenant {
			var out []*modelTenant
			for _, m := range live {
				if slices.Contains(states, m.state) {
					out = append(out, m)
				}
			}
			return out
		}
		pick := func(ms []*modelTenant) *modelTenant { return ms[f.rng.IntN(len(ms))] }

		switch kind := opKinds[f.rng.IntN(len(opKinds))]; kind {
		case "create":
			if named >= maxNamedTenants {
				continue
			}
			name := ""
			if len(f.reusable) > 0 && f.rng.IntN(2) == 0 && f.gone(f.reusable[0]) {
				name, f.reusable = f.reusable[0], f.reusable[1:]
			} else {
				f.next++
				name = fmt.Sprintf("%s-%d", f.scenario, f.next)
			}
			engine := []tenancyv1alpha1.DatabaseEngine{tenancyv1alpha1.EnginePostgres, tenancyv1alpha1.EngineMySQL}[f.rng.IntN(2)]
			f.tenants[name] = &modelTenant{name: name, state: tenancyv1alpha1.StateActive, engine: engine}
			ops = append(ops, operation{kind: kind, tenant: name, engine: engine})
		case "archive":
			if ms := withState(tenancyv1alpha1.StateActive); len(ms) > 0 {
				m := pick(ms)
				m.state = tenancyv1alpha1.StateArchived
				ops = append(ops, operation{kind: kind, tenant: m.name})
			}
		case "restore":
			if ms := withState(tenancyv1alpha1.StateArchived); len(ms) > 0 {
				m := pick(ms)
				m.state = tenancyv1alpha1.StateActive
				ops = append(ops, operation{kind: kind, tenant: m.name})
			}
		case "purge":
			if ms := withState(tenancyv1alpha1.StateActive, tenancyv1alpha1.StateArchived); len(ms) > 0 {
				m := pick(ms)
				m.state = tenancyv1alpha1.StatePurged
				ops = append(ops, operation{kind: kind, tenant: m.name})
			}
		case "delete":
			if len(live) > 0 {
				m := pick(live)
				delete(f.tenants, m.name)
				ops = append(ops, operation{kind: kind, tenant: m.name})
			}
		case "claim":
			if f.claims < maxClaims {
				f.claims++
				name := fmt.Sprintf("%s-claim-%d", f.scenario, f.claims)
				f.pendingClaims = append(f.pendingClaims, name)
				ops = append(ops, operation{kind: kind, tenant: name})
			}
		}
	}
	return ops
}

// apply makes the operations through the API server as the administrator.
func (f *fleet) apply(ops []operation) {
	t := f.t
	t.Helper()
	ctx := context.Background()
	for _, op := range ops {
		var err error
		switch op.kind {
		case "create":
			err = env.AdminClient.Create(ctx, newTenant(f.scenario, op.tenant, op.engine))
		case "archive":
			err = setState(ctx, op.tenant, tenancyv1alpha1.StateArchived)
		case "restore":
			err = setState(ctx, op.tenant, tenancyv1alpha1.StateActive)
		case "purge":
			err = setState(ctx, op.tenant, tenancyv1alpha1.StatePurged)
		case "claim":
			err = env.AdminClient.Create(ctx, newClaim(f.scenario, op.tenant, f.pool))
		case "delete":
			err = f.delete(ctx, op.tenant)
		}
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
}

// delete deletes a tenant. A Purged tenant's name may be taken again once it is gone; any other
// tenant's data is kept, and the invariants check it still is.
func (f *fleet) delete(ctx context.Context, name string) error {
	tenant := &tenancyv1alpha1.Tenant{}
	if err := env.AdminClient.Get(ctx, client.ObjectKey{Name: name}, tenant); err != nil {
		return err
	}
	if err := confirmedDelete(ctx, name); err != nil {
		return err
	}
	if tenant.Spec.State == tenancyv1alpha1.StatePurged {
		// The name is free once the operator has finished the purge and the tenant is gone.
		f.reusable = append(f.reusable, name)
		return nil
	}
	f.kept = append(f.kept, keptData{tenant: name, uid: tenant.UID, databases: tenant.Status.Databases})
	return nil
}

// gone is whether a deleted tenant no longer exists, so that its name may be taken again.
func (f *fleet) gone(name string) bool {
	err := env.AdminClient.Get(context.Background(), client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatalf("reading tenant %s: %v", name, err)
	}
	return apierrors.IsNotFound(err)
}

// refreshClaims adds the tenants of claims now Bound to the model, so later rounds archive,
// restore, purge and delete them like any other.
func (f *fleet) refreshClaims() {
	var pending []string
	for _, name := range f.pendingClaims {
		claim := &tenancyv1alpha1.TenantClaim{}
		err := env.AdminClient.Get(context.Background(), client.ObjectKey{Namespace: claimNamespace, Name: name}, claim)
		if err != nil && !apierrors.IsNotFound(err) {
			f.t.Fatalf("reading claim %s: %v", name, err)
		}
		if claim.Status.Phase != tenancyv1alpha1.ClaimBound {
			pending = append(pending, name)
			continue
		}
		f.tenants[claim.Status.Tenant] = &modelTenant{name: claim.Status.Tenant, state: tenancyv1alpha1.StateActive, claimed: true}
	}
	f.pendingClaims = pending
}

func (f *fleet) String() string {
	var s []string
	for _, m := range f.tenants {
		s = append(s, m.name+"="+string(m.state))
	}
	slices.Sort(s)
	return strings.Join(s, " ") + fmt.Sprintf("; %d kept after deletion; %d claims pending", len(f.kept), len(f.pendingClaims))
}

func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, v, err)
	}
	return n
}
