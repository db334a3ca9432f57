package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// A Job's pod carries out its plan in two steps, each a container holding only what it needs.
// The step that talks to the tenant's databases, whose client tools run what the tenant's
// databases and dumps hold, has the databases' logins and nothing of the store: neither the
// store's credentials nor the tenant's key. The step that talks to the store has those, and no
// login. They meet in the pod's scratch volume, where the first leaves the dumps in the clear
// and, last, a record of them (RecordName).
const (
	// OpDump and OpSeal are a backup's steps: dump the databases, then seal and store the dumps.
	OpDump Operation = "dump"
	OpSeal Operation = "seal"
	// OpFetch and OpLoad are a restore's: fetch, open and check the dumps, then load them.
	OpFetch Operation = "fetch"
	OpLoad  Operation = "load"
	// OpCopy copies each database to another server (Copy): one step, holding the source's and
	// the target's logins, of the same tenant, and nothing of the store.
	OpCopy Operation = "copy"
)

// RecordName is the file, in the steps' directory, in which the first step says what it left.
const RecordName = "dumps.json"

// record is what the first step of a Job leaves the second: each database's dump, as the
// manifest describes it, in the file named by its object.
type record struct {
	Started   time.Time   `json:"started"`
	Databases []DumpEntry `json:"databases"`
}

// Steps splits a backup's or a restore's plan into its two steps' plans, in the order they
// run: the databases' step gets the databases' targets and no store, key or location; the
// store's step gets the store, the key and the location, and of each database its name and
// engine only.
func (p Plan) Steps() (first, second Plan, err error) {
	names := make([]Database, len(p.Databases))
	for i, db := range p.Databases {
		names[i] = Database{Name: db.Name, Target: Target{Engine: db.Target.Engine}}
	}
	store := Plan{Objects: p.Objects, TenantKey: p.TenantKey, Key: p.Key, Location: p.Location,
		Tenant: p.Tenant, TenantUID: p.TenantUID, Backup: p.Backup, Databases: names, MaxBytes: p.MaxBytes, Clone: p.Clone}
	data := Plan{Databases: slices.Clone(p.Databases), MaxBytes: p.MaxBytes, Clone: p.Clone}
	switch p.Operation {
	case OpBackup:
		data.Operation, store.Operation = OpDump, OpSeal
		return data, store, nil
	case OpRestore:
		store.Operation, data.Operation = OpFetch, OpLoad
		return store, data, nil
	}
	return Plan{}, Plan{}, fmt.Errorf("plan operation %q has no steps: it is neither %s nor %s", p.Operation, OpBackup, OpRestore)
}

// checkStep refuses a step's plan that could not be carried out, or that holds what its step
// must not: a login in the store's step, a store or key in the databases' step.
func (p Plan) checkStep(op Operation) error {
	if p.Operation != op {
		return fmt.Errorf("plan operation %q is not %s", p.Operation, op)
	}
	if op != OpCopy && len(p.CopyTo) > 0 {
		return fmt.Errorf("the %s step's plan names databases to copy to", op)
	}
	switch op {
	case OpDump, OpLoad, OpCopy:
		if p.Objects != "" || len(p.TenantKey) > 0 || p.Key != "" {
			return fmt.Errorf("the %s step's plan names a store or a key, which this step must not hold", op)
		}
		if err := p.checkDatabases(true); err != nil {
			return err
		}
		if op != OpCopy {
			return nil
		}
		if len(p.CopyTo) != len(p.Databases) {
			return fmt.Errorf("the copy's plan names %d databases and %d to copy them to", len(p.Databases), len(p.CopyTo))
		}
		for i, to := range p.CopyTo {
			if to.Name != p.Databases[i].Name {
				return fmt.Errorf("the copy's plan copies database %s to %s's place", p.Databases[i].Name, to.Name)
			}
		}
		return Plan{Databases: p.CopyTo}.checkDatabases(true)
	case OpSeal, OpFetch:
		for _, db := range p.Databases {
			if db.Target.Password != "" || db.Target.Username != "" || db.Target.Host != "" {
				return fmt.Errorf("the %s step's plan names database %s's login, which this step must not hold", op, db.Name)
			}
		}
		if err := checkLocation(p.Location); err != nil {
			return err
		}
		return p.checkDatabases(false)
	}
	return fmt.Errorf("plan operation %q is no step", op)
}

func (r record) write(dir string) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// Written whole, then renamed: a step that died half-way leaves no record.
	tmp := filepath.Join(dir, "."+RecordName)
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing the steps' record: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, RecordName))
}

// readRecord reads the first step's record, which must name the plan's databases, in its
// order, each in the file of its object.
func readRecord(dir string, plan Plan) (record, error) {
	var rec record
	b, err := os.ReadFile(filepath.Join(dir, RecordName))
	if errors.Is(err, os.ErrNotExist) {
		return rec, fmt.Errorf("%s has no %s: the step before this one did not finish", dir, RecordName)
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("reading %s: %w", RecordName, err)
	}
	if len(rec.Databases) != len(plan.Databases) {
		return rec, fmt.Errorf("%s names %d databases, and the plan %d", RecordName, len(rec.Databases), len(plan.Databases))
	}
	for i, db := range plan.Databases {
		e := rec.Databases[i]
		if e.Name != db.Name || e.Object != db.Name+dumpSuffix || e.Engine != db.Target.Engine {
			return rec, fmt.Errorf("%s's database %d is %s (%s, %s), and the plan's %s (%s)", RecordName, i, e.Name, e.Object, e.Engine, db.Name, db.Target.Engine)
		}
		// The record is the first step's word, and the store's step trusts none of it: a dump
		// over the limit is refused whatever the record says (the upload reads no more than
		// the recorded size, and checks its digest).
		if plan.MaxBytes > 0 && e.Size > plan.MaxBytes {
			return rec, fmt.Errorf("database %s: %s says its dump holds %d bytes, over the limit of %d (maxBytes): not stored", e.Name, RecordName, e.Size, plan.MaxBytes)
		}
	}
	return rec, nil
}

// openDump opens a dump the first step left in dir: a regular file, never a link (to a file of
// this step's, say) nor a pipe, which the step that made it could have put in its place. The
// first step has ended before the second starts, so nothing changes it in between.
func openDump(dir, object string) (*os.File, error) {
	path := filepath.Join(dir, object)
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s in the steps' directory is not a regular file (%s): not read", object, st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if opened, err := f.Stat(); err != nil || !os.SameFile(st, opened) {
		_ = f.Close()
		return nil, fmt.Errorf("%s in the steps' directory changed while it was opened: not read", object)
	}
	return f, nil
}
