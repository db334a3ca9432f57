package database_test

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/landlord-dev/landlord/internal/database"
)

// A login's share of a server is derived from the server, so that no one tenant can take every
// connection: PostgreSQL's default max_connections (100) was also the limit Landlord gave each
// login before. Without maxTenants, the share follows the logins placed, by powers of two, so
// that they never hold every slot together (a quarter each used to let four logins take them
// all), down to five sessions, below which the server is reported overcommitted instead.
func TestTheConnectionLimitIsAShareOfTheServer(t *testing.T) {
	postgres := database.ServerInfo{MaxConnections: 100, Reserved: 3}
	for _, tc := range []struct {
		name       string
		info       database.ServerInfo
		maxTenants *int32
		logins     int
		want       int32
	}{
		{"a server without maxTenants and up to three logins gives each a quarter of what it leaves tenants", postgres, nil, 3, 22},
		{"four logins get an eighth each, so that they leave slots to the rest", postgres, nil, 4, 11},
		{"thirty logins get a 32nd each, never fewer than five sessions", postgres, nil, 30, 5},
		{"a server for 10 tenants gives each a tenth, however many are placed", postgres, ptr.To[int32](10), 9, 9},
		{"a server for more tenants than slots still gives each login five", postgres, ptr.To[int32](1000), 0, 5},
		{"MariaDB reserves nothing of max_connections", database.ServerInfo{MaxConnections: 151}, nil, 0, 36},
		{"a server with fewer slots than Landlord's own sessions still gives one", database.ServerInfo{MaxConnections: 4}, nil, 0, 1},
		{"a server with three slots for tenants gives each login three", database.ServerInfo{MaxConnections: 9}, nil, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := database.DerivedConnectionLimit(tc.info, tc.maxTenants, tc.logins)
			if got != tc.want {
				t.Errorf("derived limit %d, want %d", got, tc.want)
			}
			if _, over := database.Overcommitted(tc.info, got, tc.logins, tc.maxTenants); over && got > 5 {
				t.Errorf("%d logins at the derived limit %d overcommit the server", tc.logins, got)
			}
		})
	}
}

func TestAnOvercommittedServerSaysByHowMuch(t *testing.T) {
	postgres := database.ServerInfo{MaxConnections: 100, Reserved: 3}
	for _, tc := range []struct {
		name       string
		limit      int32
		logins     int
		maxTenants *int32
		want       string
	}{
		{"one login that may take every slot", 100, 1, nil, "1 tenant logins at 100 sessions each may hold 100 sessions, and the server leaves tenants 91 slots"},
		{"unlimited logins", 0, 3, nil, "any one of the 3 tenant logins can take all 91"},
		{"a server that may take more tenants counts them", 10, 1, ptr.To[int32](20), "20 tenant logins at 10 sessions each may hold 200 sessions"},
		{"logins whose limits fit", 22, 4, nil, ""},
		{"no login yet, and no maxTenants", 100, 0, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			message, over := database.Overcommitted(postgres, tc.limit, tc.logins, tc.maxTenants)
			if over != (tc.want != "") || !strings.Contains(message, tc.want) {
				t.Errorf("overcommitted %v: %q, want %q", over, message, tc.want)
			}
		})
	}
}
