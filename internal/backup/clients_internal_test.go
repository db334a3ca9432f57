package backup

import (
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/internal/database"
)

func TestAClientIsCheckedAgainstTheServerItDumps(t *testing.T) {
	for _, tc := range []struct {
		name, line, server string
		engine             database.Engine
		refused            string
	}{
		{"pg_dump 15 dumps PostgreSQL 15", "pg_dump (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)", "15.18 (Debian 15.18-0+deb12u1)", database.Postgres, ""},
		{"pg_dump 15 dumps PostgreSQL 13", "pg_dump (PostgreSQL) 15.18", "13.4", database.Postgres, ""},
		{"pg_dump 15 refuses PostgreSQL 17, naming both", "pg_dump (PostgreSQL) 15.18", "17.2 (Debian 17.2-1)", database.Postgres, "PostgreSQL 17.2 (Debian 17.2-1), newer than this image's pg_dump (PostgreSQL 15)"},
		{"pg_dump 17 dumps PostgreSQL 16", "pg_dump (PostgreSQL) 17.6 (Debian 17.6-0+deb13u1)", "16.1", database.Postgres, ""},
		{"mariadb-dump 10.11 dumps MariaDB 10.6", "mariadb-dump  Ver 10.19 Distrib 10.11.14-MariaDB, for debian-linux-gnu (x86_64)", "10.6.18-MariaDB-0+deb11u1", database.MySQL, ""},
		{"mariadb-dump 10.11 refuses MariaDB 11.4", "mariadb-dump  Ver 10.19 Distrib 10.11.14-MariaDB, for debian-linux-gnu (x86_64)", "11.4.2-MariaDB", database.MySQL, "MariaDB 11.4.2-MariaDB, newer than this image's mariadb-dump (MariaDB 10.11)"},
		{"mariadb-dump 11.8 dumps MariaDB 11.4", "mariadb-dump from 11.8.3-MariaDB, client 10.19 for debian-linux-gnu (x86_64)", "11.4.2-MariaDB", database.MySQL, ""},
		{"a MySQL server is not refused by MariaDB's client", "mariadb-dump  Ver 10.19 Distrib 10.11.14-MariaDB, for debian-linux-gnu (x86_64)", "8.4.2", database.MySQL, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := parseClientVersion(tc.engine, tc.line)
			if err != nil {
				t.Fatal(err)
			}
			tool := "/usr/bin/pg_dump"
			if tc.engine == database.MySQL {
				tool = "/usr/bin/mariadb-dump"
			}
			err = checkClient(tc.engine, tool, client, tc.server)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("got %v, want a refusal saying %q", err, tc.refused)
			}
		})
	}
	if _, err := parseClientVersion(database.Postgres, "psql, the PostgreSQL interactive terminal"); err == nil {
		t.Error("a line with no version was read as one")
	}
}
