package database

import (
	"errors"
	"fmt"
	"strings"
)

// markerPrefix starts the marker Landlord leaves on every database and login it creates: on
// PostgreSQL as the object's comment, on MySQL as a row of ownersTable. What follows is the
// UID of the tenant the object belongs to.
const markerPrefix = "landlord:tenant="

func marker(owner string) string { return markerPrefix + owner }

// ownerOf reads a marker: the owner's UID, and whether the text is a Landlord marker at all.
func ownerOf(text string) (string, bool) {
	owner, ok := strings.CutPrefix(text, markerPrefix)
	return owner, ok && owner != ""
}

// ForeignError is a database or login that exists on the server but is not the account's: it
// carries another tenant's marker, or none (Landlord did not create it). It is never used,
// changed or dropped.
type ForeignError struct {
	// Object is "database" or "login".
	Object string
	Name   string
	// Owner is the UID of the tenant the object belongs to; empty when Landlord did not create it.
	Owner string
}

func (e *ForeignError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("%s %q exists and was not created by Landlord; it is never used, changed or dropped", e.Object, e.Name)
	}
	return fmt.Sprintf("%s %q belongs to the tenant with UID %s", e.Object, e.Name, e.Owner)
}

// MissingError is a database or login to adopt (Account.MustExist) that the server does not
// hold.
type MissingError struct {
	Object, Name string
	// Adopt is the UID of the tenant whose data it is.
	Adopt string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s %q of the tenant with UID %s, whose data this tenant adopts, is not on this server: nothing is created in its place; "+
		"the DatabaseServer of this name must be the server that holds it", e.Object, e.Name, e.Adopt)
}

// found is what the server holds of one object of an account: whether it exists and whom its
// marker names.
type found struct {
	object, name string
	exists       bool
	marked       bool
	owner        string
	// commented: a Landlord marker is the object's comment (PostgreSQL), where releases before
	// the owners table kept it.
	commented bool
}

// claim decides whether an account may use an existing object: its own (marked with the
// account's owner), an adopted one (marked with acct.Adopt), an unmarked one of an earlier
// release (acct.AdoptUnmarked), or one the engine knows to be the account's whatever its marker
// says (owned, for: see the PostgreSQL provisioner). remark says the marker must be (re)written
// to the account's owner.
func (f found) claim(acct Account, owned bool) (remark bool, err error) {
	switch {
	case !f.exists && acct.MustExist:
		return false, &MissingError{Object: f.object, Name: f.name, Adopt: acct.Adopt}
	case !f.exists:
		return true, nil
	case f.marked && f.owner == acct.Owner:
		return false, nil
	case owned:
		return true, nil
	case f.marked && acct.Adopt != "" && f.owner == acct.Adopt:
		return true, nil
	case !f.marked && acct.AdoptUnmarked:
		return true, nil
	}
	owner := ""
	if f.marked {
		owner = f.owner
	}
	return false, &ForeignError{Object: f.object, Name: f.name, Owner: owner}
}

// checkOwner refuses an account without an owner: nothing could be marked as its.
func checkOwner(acct Account) error {
	if acct.Owner == "" {
		return errors.New("the account names no owner")
	}
	return nil
}

// redact replaces every occurrence of the secrets in an error's text. Drivers quote statements
// and their arguments in some errors (a MySQL syntax error quotes the text near the fault), and
// an account statement carries a password; the error text reaches status, events and logs.
func redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			msg, changed = strings.ReplaceAll(msg, s, "[redacted]"), true
		}
	}
	if !changed {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError keeps the original for errors.Is and errors.As; its own text is redacted, and
// it is the text that callers format.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// limitable refuses a connection limit on a login that is missing, or marked as another tenant's
// than the account's (or the one it adopts). An unmarked login, of an earlier release, is the
// account's as the tenant's status records it.
func (f found) limitable(acct Account) error {
	switch {
	case !f.exists:
		return &MissingError{Object: f.object, Name: f.name, Adopt: acct.Adopt}
	case f.marked && f.owner != acct.Owner && (acct.Adopt == "" || f.owner != acct.Adopt):
		return &ForeignError{Object: f.object, Name: f.name, Owner: f.owner}
	}
	return nil
}
