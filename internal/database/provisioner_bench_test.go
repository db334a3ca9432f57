package database_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/landlord-dev/landlord/internal/database"
)

// BenchmarkEnsure measures provisioning's slow path, which runs for a new database, a rotation,
// or a credentials Secret that needs rewriting: creating an account, and converging one that
// exists. (An unchanged tenant never logs in to its server.)
func BenchmarkEnsure(b *testing.B) {
	for _, engine := range engines {
		inst := instances[engine]
		if inst == nil {
			b.Skip("no test servers in -short mode")
		}
		p, err := database.Open(inst.Server)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		var made []database.Account
		account := func() database.Account {
			name, user := database.Names(engine, "t_", fmt.Sprintf("bench%d", len(made)), "app")
			return database.Account{Database: name, Username: user, Password: "bench-password-0123456789", Owner: "0a1b2c3d-bench"}
		}
		b.Run(string(engine)+"/new account", func(b *testing.B) {
			for range b.N {
				acct := account()
				if err := p.Ensure(ctx, acct); err != nil {
					b.Fatal(err)
				}
				made = append(made, acct)
			}
		})
		b.Run(string(engine)+"/existing account", func(b *testing.B) {
			acct := made[0]
			for range b.N {
				if err := p.Ensure(ctx, acct); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, acct := range made {
			if err := p.Drop(ctx, acct); err != nil {
				b.Error(err)
			}
		}
		_ = p.Close()
	}
}
