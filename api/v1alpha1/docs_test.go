package v1alpha1_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every condition type and reason an object can report has an entry in docs/troubleshooting.md,
// so an administrator who reads one in `kubectl get` finds what it means and what to do. The
// constants are read from this package's source: a new one fails here until it is documented.
func TestEveryConditionReasonIsInTheTroubleshootingGuide(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(guide), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			headings[strings.TrimSpace(h)] = true
		}
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Reason") && !strings.HasSuffix(name.Name, "Condition") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					value, _ := strconv.Unquote(lit.Value)
					found++
					t.Run(name.Name+" is explained", func(t *testing.T) {
						if !headings[value] {
							t.Errorf("docs/troubleshooting.md has no '### %s' entry for %s", value, name.Name)
						}
					})
				}
			}
		}
	}
	// The constants this test reads today; far fewer means it stopped finding them.
	if found < 30 {
		t.Fatalf("found %d condition types and reasons in api/v1alpha1, want at least 30", found)
	}
}
