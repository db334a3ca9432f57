package backup_test

import (
	"testing"

	"github.com/landlord-dev/landlord/internal/backup"
)

// A database move tells a fence that did not hold (the old login's password changed under the
// copy) from a server that does not answer: only the first stops the move.
func TestALoginRefusedIsToldFromAServerThatDoesNotAnswer(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			tn := newTenant(t, engine)
			if err := backup.CanLogin(testContext(t), tn.target()); err != nil {
				t.Fatalf("the login's own password: %v", err)
			}
			wrong := tn.target()
			wrong.Password = "not-the-password"
			if err := backup.CanLogin(testContext(t), wrong); !backup.LoginRefused(err) {
				t.Fatalf("a wrong password: got %v, want a refused login", err)
			}
			closed := tn.target()
			closed.Port = 1
			if err := backup.CanLogin(testContext(t), closed); err == nil || backup.LoginRefused(err) {
				t.Fatalf("a port no server listens on: got %v, want an error that is not a refused login", err)
			}
		})
	}
}
