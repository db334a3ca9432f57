package database

import (
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	long50 := strings.Repeat("t", 50)
	long30 := strings.Repeat("d", 30)
	tests := []struct {
		name             string
		engine           Engine
		tenant, db       string
		wantDB, wantUser string // "" when the name is shortened; checked by shape instead
	}{
		{name: "short names are kept whole on postgres", engine: Postgres, tenant: "acme", db: "orders", wantDB: "acme_orders", wantUser: "acme_orders"},
		{name: "short names are kept whole on mysql", engine: MySQL, tenant: "acme", db: "orders", wantDB: "acme_orders", wantUser: "acme_orders"},
		{name: "a name exactly at the mysql user limit is kept whole", engine: MySQL, tenant: strings.Repeat("a", 20), db: strings.Repeat("b", 11), wantDB: strings.Repeat("a", 20) + "_" + strings.Repeat("b", 11), wantUser: strings.Repeat("a", 20) + "_" + strings.Repeat("b", 11)},
		{name: "a mysql user one past the limit is shortened while its database is not", engine: MySQL, tenant: strings.Repeat("a", 20), db: strings.Repeat("b", 12), wantDB: strings.Repeat("a", 20) + "_" + strings.Repeat("b", 12)},
		{name: "a name exactly at the postgres limit is kept whole", engine: Postgres, tenant: strings.Repeat("a", 32), db: strings.Repeat("b", 30), wantDB: strings.Repeat("a", 32) + "_" + strings.Repeat("b", 30), wantUser: strings.Repeat("a", 32) + "_" + strings.Repeat("b", 30)},
		{name: "the longest names are shortened on postgres", engine: Postgres, tenant: long50, db: long30},
		{name: "the longest names are shortened on mysql", engine: MySQL, tenant: long50, db: long30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotDB, gotUser := Names(tc.engine, "", tc.tenant, tc.db)
			dbLimit, userLimit := identifierLimits(tc.engine)
			check := func(kind, got, want string, limit int) {
				t.Helper()
				if len(got) > limit {
					t.Errorf("%s name %q is %d bytes, over the limit of %d", kind, got, len(got), limit)
				}
				if want != "" {
					if got != want {
						t.Errorf("%s name = %q, want %q", kind, got, want)
					}
					return
				}
				if len(got) != limit {
					t.Errorf("shortened %s name %q is %d bytes, want exactly %d", kind, got, len(got), limit)
				}
				if !strings.Contains(got, "__") {
					t.Errorf("shortened %s name %q has no \"__\"", kind, got)
				}
				exact := tc.tenant + "_" + tc.db
				if prefix := got[:limit-hashSuffixLen]; !strings.HasPrefix(exact, prefix) {
					t.Errorf("shortened %s name %q does not start with a prefix of %q", kind, got, exact)
				}
			}
			check("database", gotDB, tc.wantDB, dbLimit)
			check("user", gotUser, tc.wantUser, userLimit)

			againDB, againUser := Names(tc.engine, "", tc.tenant, tc.db)
			if againDB != gotDB || againUser != gotUser {
				t.Errorf("second call returned (%q, %q), first (%q, %q)", againDB, againUser, gotDB, gotUser)
			}
		})
	}
}

func TestNamesDoNotCollide(t *testing.T) {
	pairs := [][2]string{
		{"a-b", "c"}, {"a", "b-c"},
		{"ab", "c"}, {"a", "bc"},
		{strings.Repeat("x", 50), strings.Repeat("y", 30)},
		{strings.Repeat("x", 50), strings.Repeat("y", 29) + "z"},
		{strings.Repeat("x", 49), strings.Repeat("x", 1) + strings.Repeat("y", 29)},
		{strings.Repeat("x", 50), strings.Repeat("y", 29)},
		// The exact name of one pair must not equal the shortened name of another.
		{strings.Repeat("x", 20), "y"},
	}
	for _, engine := range []Engine{Postgres, MySQL} {
		t.Run(string(engine), func(t *testing.T) {
			seenDB := map[string][2]string{}
			seenUser := map[string][2]string{}
			for _, p := range pairs {
				db, user := Names(engine, "", p[0], p[1])
				if other, ok := seenDB[db]; ok {
					t.Errorf("%v and %v both get database %q", other, p, db)
				}
				if other, ok := seenUser[user]; ok {
					t.Errorf("%v and %v both get user %q", other, p, user)
				}
				seenDB[db], seenUser[user] = p, p
			}
		})
	}
}

func TestGeneratePassword(t *testing.T) {
	a, err := GeneratePassword()
	if err != nil {
		t.Fatal(err)
	}
	b, err := GeneratePassword()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Errorf("two passwords are both %q", a)
	}
	if len(a) != 43 {
		t.Errorf("password %q is %d characters, want 43 (256 bits in unpadded base64)", a, len(a))
	}
	if strings.ContainsAny(a, "+/=") {
		t.Errorf("password %q needs escaping in a URL", a)
	}
}

func TestOpaqueNames(t *testing.T) {
	const uid = "5f0c2a47-9d1e-4b6a-8c3f-2e7d9a1b4c60"
	cases := []struct {
		name   string
		engine Engine
		prefix string
	}{
		{name: "postgres names without a prefix", engine: Postgres},
		{name: "postgres names with the default prefix", engine: Postgres, prefix: "t_"},
		{name: "mysql names with the longest prefix", engine: MySQL, prefix: "abcdefghi_"},
		{name: "mysql names without a prefix", engine: MySQL},
	}
	for _, tc := range cases {
		t.Run(tc.name+" start with the prefix, fit the engine and have no '_' of their own", func(t *testing.T) {
			db, user := NewNames(NamingOpaque, tc.engine, tc.prefix, strings.Repeat("t", 50), uid, strings.Repeat("d", 30))
			dbLimit, userLimit := identifierLimits(tc.engine)
			for _, n := range []struct {
				kind, got string
				limit     int
			}{{"database", db, dbLimit}, {"login", user, userLimit}} {
				if len(n.got) > n.limit {
					t.Errorf("%s name %q is %d bytes, over the limit of %d", n.kind, n.got, len(n.got), n.limit)
				}
				digest, ok := strings.CutPrefix(n.got, tc.prefix)
				if !ok {
					t.Fatalf("%s name %q does not start with the prefix %q", n.kind, n.got, tc.prefix)
				}
				// A name derived from the tenant's name always has a '_' after the prefix, so an
				// opaque name, which has none, never takes one.
				if len(digest) != opaqueDigestLen || strings.Trim(digest, "abcdefghijklmnopqrstuvwxyz234567") != "" {
					t.Errorf("%s name %q does not end in %d lowercase base32 digits", n.kind, n.got, opaqueDigestLen)
				}
			}
			if db != user {
				t.Errorf("database %q and login %q differ", db, user)
			}
		})
	}

	t.Run("the names contain no part of the tenant's name or the database's", func(t *testing.T) {
		for i, tenant := range []string{"acme", "kolide-inc", "globex-corporation", strings.Repeat("initech", 7)} {
			u := uid[:len(uid)-1] + string(rune('0'+i))
			db, user := NewNames(NamingOpaque, Postgres, "t_", tenant, u, "orders")
			if old, _ := NewNames(NamingTenant, Postgres, "t_", tenant, u, "orders"); !strings.Contains(old, tenant) {
				t.Fatalf("the tenant naming of %s gives %q, which does not spell it: the check below proves nothing", tenant, old)
			}
			for _, got := range []string{db, user} {
				// Any four characters of the tenant's name in a row would start to spell it.
				for j := 0; j+4 <= len(tenant); j++ {
					if part := tenant[j : j+4]; strings.Contains(strings.TrimPrefix(got, "t_"), part) {
						t.Errorf("name %q contains %q of tenant %s", got, part, tenant)
					}
				}
				if strings.Contains(got, "orders") {
					t.Errorf("name %q spells the database's name", got)
				}
			}
		}
	})

	t.Run("the same UID and database give the same names whatever the tenant is called", func(t *testing.T) {
		db1, user1 := NewNames(NamingOpaque, Postgres, "t_", "acme", uid, "orders")
		db2, user2 := NewNames(NamingOpaque, Postgres, "t_", "acme-renamed", uid, "orders")
		if db1 != db2 || user1 != user2 {
			t.Errorf("second call returned (%q, %q), first (%q, %q)", db2, user2, db1, user1)
		}
	})

	t.Run("every UID and database gets names of its own", func(t *testing.T) {
		uids := []string{uid, "5f0c2a47-9d1e-4b6a-8c3f-2e7d9a1b4c61", "0b1e8c55-7a42-4f0e-9d6b-3c8a2f1e7d90"}
		dbs := []string{"orders", "order", "orders-2", "a", strings.Repeat("d", 30)}
		seenDB, seenUser := map[string]string{}, map[string]string{}
		for _, u := range uids {
			for _, d := range dbs {
				db, user := NewNames(NamingOpaque, MySQL, "t_", "acme", u, d)
				key := u + "/" + d
				if other, ok := seenDB[db]; ok {
					t.Errorf("%s and %s both get database %q", other, key, db)
				}
				if other, ok := seenUser[user]; ok {
					t.Errorf("%s and %s both get login %q", other, key, user)
				}
				seenDB[db], seenUser[user] = key, key
			}
		}
		if len(seenDB) != len(uids)*len(dbs) {
			t.Errorf("%d distinct names for %d UID and database pairs", len(seenDB), len(uids)*len(dbs))
		}
	})

	t.Run("tenant naming is the tenant's name, as before", func(t *testing.T) {
		db, user := NewNames(NamingTenant, MySQL, "t_", "acme", uid, "orders")
		if db != "t_acme_orders" || user != "t_acme_orders" {
			t.Errorf("tenant naming gives (%q, %q), want t_acme_orders for both", db, user)
		}
	})
}
