package controllertest_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/landlord-dev/landlord/"

// reconcilers are the packages that each hold one reconciler (tenantbackup: those of a backup
// and of a restore, which share the Job they run).
var reconcilers = []string{
	"internal/controller/tenant", "internal/controller/tenantpool", "internal/controller/tenantclaim",
	"internal/controller/databaseserver", "internal/controller/componentrollout",
	"internal/controller/admissionpolicy", "internal/controller/tenantbackup", "internal/controller/templatemirror",
	"internal/controller/databasemove", "internal/controller/classrollout",
}

// shared are the packages the reconcilers share.
var shared = []string{
	"internal/controller/indexes", "internal/controller/conditions", "internal/controller/writes",
	"internal/controller/leadermetrics", "internal/controller/shutdown",
}

// root is the repository's root, two directories up from this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}

// imports are the module's packages the non-test files of dir import, relative to the module.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rel, ok := strings.CutPrefix(path, module); ok && !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	if len(files) == 0 {
		t.Fatalf("%s holds no Go files", dir)
	}
	return out
}

// The package map in internal/controller's doc.go and docs/architecture.md holds: a newcomer may take it
// as the rule, and a change that breaks it fails here rather than in review.
func TestThePackageLayoutHolds(t *testing.T) {
	repo := root(t)
	t.Run("no reconciler imports another", func(t *testing.T) {
		for _, pkg := range reconcilers {
			for _, imp := range imports(t, filepath.Join(repo, pkg)) {
				if imp != pkg && slices.Contains(reconcilers, imp) {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
		}
	})
	t.Run("the shared packages import the API types only", func(t *testing.T) {
		for _, pkg := range shared {
			for _, imp := range imports(t, filepath.Join(repo, pkg)) {
				if imp != "api/v1alpha1" {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
		}
	})
	t.Run("every controller keeps the operator's stop out of its error log", func(t *testing.T) {
		// A reconcile the stop cuts short fails with "context canceled": shutdown.Quiet keeps
		// it from controller-runtime's "Reconciler error" lines and error count.
		for _, pkg := range reconcilers {
			files, _ := filepath.Glob(filepath.Join(repo, pkg, "*.go"))
			built, wrapped := 0, 0
			for _, f := range files {
				if strings.HasSuffix(f, "_test.go") {
					continue
				}
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				built += strings.Count(string(src), "ctrl.NewControllerManagedBy(")
				wrapped += strings.Count(string(src), "shutdown.Quiet(r)")
			}
			if built == 0 || wrapped != built {
				t.Errorf("%s builds %d controllers and wraps %d reconcilers in shutdown.Quiet", pkg, built, wrapped)
			}
		}
	})
	t.Run("no command imports a reconciler", func(t *testing.T) {
		// The CLI reads what a reconciler writes through the packages both share (shard,
		// rollout, config), never through the reconciler itself.
		cmds, err := filepath.Glob(filepath.Join(repo, "cmd", "*"))
		if err != nil || len(cmds) == 0 {
			t.Fatalf("no commands under cmd/: %v", err)
		}
		for _, dir := range cmds {
			for _, imp := range imports(t, dir) {
				if slices.Contains(reconcilers, imp) {
					rel, _ := filepath.Rel(repo, dir)
					t.Errorf("%s imports the reconciler %s", rel, imp)
				}
			}
		}
	})
	t.Run("docs/architecture.md names every package under internal/", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join(repo, "docs/architecture.md"))
		if err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(filepath.Join(repo, "internal"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.Contains(string(doc), "`internal/"+e.Name()) {
				t.Errorf("docs/architecture.md does not name internal/%s", e.Name())
			}
		}
	})
	t.Run("only tests import the test fixtures", func(t *testing.T) {
		dirs := 0
		for _, top := range []string{"cmd", "internal", "test", "hack"} {
			err := filepath.WalkDir(filepath.Join(repo, top), func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return err
				}
				if files, _ := filepath.Glob(filepath.Join(path, "*.go")); len(files) == 0 {
					return nil
				}
				dirs++
				rel, _ := filepath.Rel(repo, path)
				if slices.Contains(imports(t, path), "internal/controller/controllertest") && rel != "internal/controller/controllertest" {
					t.Errorf("%s imports internal/controller/controllertest outside its tests", rel)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if dirs < 20 {
			t.Fatalf("only %d packages found: the walk missed the sources", dirs)
		}
	})
	t.Run("every package under internal/controller is on the map", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join(repo, "internal/controller/doc.go"))
		if err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(filepath.Join(repo, "internal/controller"))
		if err != nil {
			t.Fatal(err)
		}
		listed := 0
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			listed++
			if !strings.Contains(string(doc), "//\t"+e.Name()+" ") {
				t.Errorf("internal/controller/%s is not in the map in internal/controller/doc.go", e.Name())
			}
		}
		if listed != 18 {
			t.Errorf("%d packages under internal/controller, want the 18 on the map", listed)
		}
	})
}
