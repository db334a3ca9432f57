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
