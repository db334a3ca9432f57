package backup

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/database"
)

func TestMajorVersion(t *testing.T) {
	for name, tc := range map[string]struct {
		engine  database.Engine
		version string
		want    string
	}{
		"PostgreSQL from 10 is its first number":        {database.Postgres, "15.18 (Debian 15.18-0+deb12u1)", "15"},
		"PostgreSQL before 10 is its first two":         {database.Postgres, "9.6.24", "9.6"},
		"a PostgreSQL beta is its first number":         {database.Postgres, "17beta2", "17"},
		"MariaDB is its first two, and says it":         {database.MySQL, "10.11.19-MariaDB-0+deb12u1", "MariaDB 10.11"},
		"MySQL is its first two, and says it":           {database.MySQL, "8.0.36", "MySQL 8.0"},
		"a MySQL with a suffix is its first two too":    {database.MySQL, "8.4.2-log", "MySQL 8.4"},
		"MariaDB 11 is not MariaDB 10":                  {database.MySQL, "11.4.2-MariaDB", "MariaDB 11.4"},
		"MySQL 5.7 is not MySQL 8":                      {database.MySQL, "5.7.44-log", "MySQL 5.7"},
		"a PostgreSQL 9 version without a minor fails":  {database.Postgres, "9", ""},
		"a version that starts with no number fails":    {database.MySQL, "MariaDB", ""},
		"a MySQL version without a second number fails": {database.MySQL, "8-log", ""},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := majorVersion(tc.engine, tc.version)
			if tc.want == "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.version)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestRewriteDefiners(t *testing.T) {
	long := "INSERT INTO `t` VALUES ('" + strings.Repeat("DEFINER=`a`@`%` ", 20000) + "');\n"
	for name, tc := range map[string]struct{ in, want string }{
		"a view's definer becomes the restoring login": {
			"/*!50013 DEFINER=`t_acme_app`@`%` SQL SECURITY DEFINER */\n",
			"/*!50013 DEFINER=CURRENT_USER SQL SECURITY DEFINER */\n",
		},
		"a trigger's": {
			"/*!50003 CREATE*/ /*!50017 DEFINER=`t_acme_app`@`%`*/ /*!50003 TRIGGER `x` BEFORE INSERT ON `orders` FOR EACH ROW SET NEW.total = 0 */;;\n",
			"/*!50003 CREATE*/ /*!50017 DEFINER=CURRENT_USER*/ /*!50003 TRIGGER `x` BEFORE INSERT ON `orders` FOR EACH ROW SET NEW.total = 0 */;;\n",
		},
		"a routine's": {
			"CREATE DEFINER=`t_acme_app`@`localhost` FUNCTION `order_count`() RETURNS int(11)\n",
			"CREATE DEFINER=CURRENT_USER FUNCTION `order_count`() RETURNS int(11)\n",
		},
		"an event's": {
			"/*!50106 CREATE*/ /*!50117 DEFINER=`t_acme_app`@`%`*/ /*!50106 EVENT `tidy` ON SCHEDULE EVERY 1 DAY */ ;;\n",
			"/*!50106 CREATE*/ /*!50117 DEFINER=CURRENT_USER*/ /*!50106 EVENT `tidy` ON SCHEDULE EVERY 1 DAY */ ;;\n",
		},
		"a role's, which has no host": {
			"CREATE DEFINER=`app_role` PROCEDURE `p`()\n",
			"CREATE DEFINER=CURRENT_USER PROCEDURE `p`()\n",
		},
		"a name with a backquote in it": {
			"CREATE DEFINER=`we``ird`@`%` PROCEDURE `p`()\n",
			"CREATE DEFINER=CURRENT_USER PROCEDURE `p`()\n",
		},
		"rows on the line of their INSERT are never rewritten": {
			"INSERT INTO `customers` VALUES (3,'DEFINER=`root`@`%` in a row');\nCREATE DEFINER=`a`@`%` VIEW v\n",
			"INSERT INTO `customers` VALUES (3,'DEFINER=`root`@`%` in a row');\nCREATE DEFINER=CURRENT_USER VIEW v\n",
		},
		"rows on lines of their own are never rewritten, to the statement's end": {
			"INSERT INTO `customers` VALUES\n(1,'DEFINER=`a`@`%`;'),\n(3,'DEFINER=`root`@`%` in a row');\nCREATE DEFINER=`a`@`%` VIEW v\n",
			"INSERT INTO `customers` VALUES\n(1,'DEFINER=`a`@`%`;'),\n(3,'DEFINER=`root`@`%` in a row');\nCREATE DEFINER=CURRENT_USER VIEW v\n",
		},
		"a table whose name holds a ';' and a line break keeps its rows as they are": {
			"INSERT INTO `q;\nr` VALUES (1,'DEFINER=`root`@`%`');\nCREATE DEFINER=`a`@`%` VIEW v\n",
			"INSERT INTO `q;\nr` VALUES (1,'DEFINER=`root`@`%`');\nCREATE DEFINER=CURRENT_USER VIEW v\n",
		},
		"quotes doubled and escaped inside values are followed to the statement's end": {
			"INSERT INTO `t` VALUES (1,'it''s `odd`'),\n(2,'a \\' quote;'),\n(3,'DEFINER=`root`@`%`');\nCREATE DEFINER=`a`@`%` VIEW v\n",
			"INSERT INTO `t` VALUES (1,'it''s `odd`'),\n(2,'a \\' quote;'),\n(3,'DEFINER=`root`@`%`');\nCREATE DEFINER=CURRENT_USER VIEW v\n",
		},
		"rows longer than any buffer are copied whole": {long, long},
		"a last line without a newline is kept": {
			"SET x = 1;\nCREATE DEFINER=`a`@`%` VIEW v",
			"SET x = 1;\nCREATE DEFINER=CURRENT_USER VIEW v",
		},
		"a short last line is kept": {"INSERT\n;", "INSERT\n;"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var out bytes.Buffer
			g.Expect(rewriteDefiners(&out, strings.NewReader(tc.in), false)).To(Succeed())
			g.Expect(out.String()).To(Equal(tc.want))
		})
	}
}

func TestPlanCheck(t *testing.T) {
	target := Target{Engine: database.Postgres, Host: "db", Port: 5432, Database: "d", Username: "u"}
	ok := Plan{Location: "tenant/backup/", Databases: []Database{{Name: "app", Target: target}}}
	for name, tc := range map[string]struct {
		edit func(*Plan)
		want string
	}{
		"a plan with a folder and a database passes":               {func(*Plan) {}, ""},
		"an empty location, which is the whole bucket, is refused": {func(p *Plan) { p.Location = "" }, "must be a folder"},
		"a location that is not a folder is refused":               {func(p *Plan) { p.Location = "tenant/backup" }, "must be a folder"},
		"an absolute location is refused":                          {func(p *Plan) { p.Location = "/tenant/" }, "relative"},
		"a location that climbs is refused":                        {func(p *Plan) { p.Location = "tenant/../other/" }, ".."},
		"a location with an empty part is refused":                 {func(p *Plan) { p.Location = "tenant//" }, "empty"},
		"a plan of no database is refused":                         {func(p *Plan) { p.Databases = nil }, "no database"},
		"a database name with a slash is refused":                  {func(p *Plan) { p.Databases[0].Name = "a/b" }, "slash"},
		"a database named twice is refused": {func(p *Plan) {
			p.Databases = append(p.Databases, p.Databases[0])
		}, "twice"},
		"an unknown engine is refused":   {func(p *Plan) { p.Databases[0].Target.Engine = "oracle" }, "oracle"},
		"an unknown TLS mode is refused": {func(p *Plan) { p.Databases[0].Target.TLS = "prefer" }, "prefer"},
		"a target without a login is refused": {func(p *Plan) {
			p.Databases[0].Target.Username = ""
		}, "login"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := ok
			p.Databases = append([]Database(nil), ok.Databases...)
			tc.edit(&p)
			err := p.check()
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestACopysEventsAreMadeDisabled(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"an event enabled is made disabled": {
			"/*!50106 CREATE*/ /*!50117 DEFINER=CURRENT_USER*/ /*!50106 EVENT `tidy` ON SCHEDULE EVERY 1 DAY STARTS '2026-11-27 03:00:00' ON COMPLETION NOT PRESERVE ENABLE DO DELETE FROM orders */ ;;\n",
			"/*!50106 CREATE*/ /*!50117 DEFINER=CURRENT_USER*/ /*!50106 EVENT `tidy` ON SCHEDULE EVERY 1 DAY STARTS '2026-11-27 03:00:00' ON COMPLETION NOT PRESERVE DISABLE DO DELETE FROM orders */ ;;\n",
		},
		"one with a comment": {
			"/*!50106 CREATE*/ /*!50117 DEFINER=CURRENT_USER*/ /*!50106 EVENT `tidy` ON SCHEDULE EVERY 1 DAY STARTS '2026-11-27 03:00:00' ON COMPLETION PRESERVE ENABLE COMMENT 'nightly' DO DELETE FROM orders */ ;;\n",
			"/*!50106 CREATE*/ /*!50117 DEFINER=CURRENT_USER*/ /*!50106 EVENT `tidy` ON SCHEDULE EVERY 1 DAY STARTS '2026-11-27 03:00:00' ON COMPLETION PRESERVE DISABLE COMMENT 'nightly' DO DELETE FROM orders */ ;;\n",
		},
		"one whose name spells the rest keeps its name, and is disabled": {
			"/*!50106 CREATE*/ /*!50117 DEFINER=CURRENT_USER*/ /*!50106 EVENT `x ON SCHEDULE EVERY 1 DAY ON COMPLETION NOT PRESERVE ENABLE DO ` ON SCHEDULE EVERY 1 SECOND ON COMPLETION NOT PRESERVE ENABLE DO SET @a = 1 */ ;;\n",
			"/*!50106 CREATE*/ /*!50117 DEFINER=CURRENT_USER*/ /*!50106 EVENT `x ON SCHEDULE EVERY 1 DAY ON COMPLETION NOT PRESERVE ENABLE DO ` ON SCHEDULE EVERY 1 SECOND ON COMPLETION NOT PRESERVE DISABLE DO SET @a = 1 */ ;;\n",
		},
		"a line that is no event stays as it is": {
			"INSERT INTO `t` VALUES ('ON COMPLETION NOT PRESERVE ENABLE DO');\n",
			"INSERT INTO `t` VALUES ('ON COMPLETION NOT PRESERVE ENABLE DO');\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := rewriteDefiners(&out, strings.NewReader(tc.in), true); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}

// pg_restore 17's script for a server before 17 loses its SET transaction_timeout, and nothing
// else: the same words in the tenant's own data, after the preamble, are copied as they are.
func TestTheTransactionTimeoutLeavesOnlyThePreamble(t *testing.T) {
	g := NewWithT(t)
	preamble := "--\n-- PostgreSQL database dump\n--\n\n-- Dumped from database version 15.18\n-- Dumped by pg_dump version 17.12\n\n" +
		"BEGIN;\nSET statement_timeout = 0;\nSET lock_timeout = 0;\nSET idle_in_transaction_session_timeout = 0;\nSET transaction_timeout = 0;\nSET client_encoding = 'UTF8';\n\n"
	body := "--\n-- Name: notes; Type: TABLE; Schema: public; Owner: -\n--\n\nCREATE TABLE public.notes (note text);\n\n" +
		"COPY public.notes (note) FROM stdin;\nSET transaction_timeout = 0;\n\\.\n\nCOMMIT;\n"
	var out bytes.Buffer
	g.Expect(dropTransactionTimeout(&out, strings.NewReader(preamble+body))).To(Succeed())
	g.Expect(out.String()).To(Equal(strings.Replace(preamble, "SET transaction_timeout = 0;\n", "", 1) + body))

	out.Reset()
	g.Expect(dropTransactionTimeout(&out, strings.NewReader("BEGIN;\nSET transaction_timeout = 0;"))).To(Succeed(), "a script cut short is copied to its end")
	g.Expect(out.String()).To(Equal("BEGIN;\n"))
}
