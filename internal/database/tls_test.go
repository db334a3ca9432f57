package database_test

import (
	"testing"

	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// The test servers present a certificate from a CA of their own, as a managed database service
// with a private CA does.
func TestVerifyFullWithACABundle(t *testing.T) {
	if testing.Short() {
		t.Skip("no test servers in -short mode")
	}
	// A second server, for a CA that is not the first one's.
	other, err := dbtest.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })

	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			inst := instance(t, engine)
			verified := inst.Server
			verified.TLS = database.TLSVerifyFull
			verified.CABundle = inst.CA

			t.Run("the server's own CA verifies it, and provisioning works over TLS", func(t *testing.T) {
				ctx := testContext(t)
				p := open(t, verified)
				if _, err := p.Check(ctx); err != nil {
					t.Fatal(err)
				}
				acct := newAccount(t, engine, p, "tls")
				ensure(t, ctx, p, acct)
			})
			t.Run("another CA does not verify it", func(t *testing.T) {
				wrong := verified
				wrong.CABundle = other.CA
				if _, err := open(t, wrong).Check(testContext(t)); err == nil {
					t.Fatal("a server certificate from another CA was accepted")
				}
			})
			t.Run("without the bundle the system roots do not verify it", func(t *testing.T) {
				system := verified
				system.CABundle = nil
				if _, err := open(t, system).Check(testContext(t)); err == nil {
					t.Fatal("a certificate from a private CA was accepted by the system roots")
				}
			})
			t.Run("a bundle without a certificate is refused", func(t *testing.T) {
				broken := verified
				broken.CABundle = []byte("not PEM")
				if _, err := database.Open(broken); err == nil {
					t.Fatal("Open accepted a CA bundle without a certificate")
				}
			})
		})
	}
}
