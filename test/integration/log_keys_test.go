package integration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/test/shipped"
)

// reservedLogKeys are the keys controller-runtime's reconcile logger gives the reconciled object.
// A log line that gives them again, for another object, leaves two values under one key, and a
// log query on either finds lines about the wrong object.
var reservedLogKeys = map[string]bool{"namespace": true, "name": true}

// keyArgs is where a logr method's keys start: Info(msg, k, v, ...), Error(err, msg, k, v, ...),
// WithValues(k, v, ...).
var keyArgs = map[string]int{"Info": 1, "Error": 2, "WithValues": 0}

// reservedKeysLogged lists the calls in a Go file that log a reserved key as a literal.
func reservedKeysLogged(fset *token.FileSet, file *ast.File) []string {
	var found []string
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		first, ok := keyArgs[sel.Sel.Name]
		if !ok {
			return true
		}
		for i := first; i < len(call.Args); i += 2 {
			lit, ok := call.Args[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			if key, err := strconv.Unquote(lit.Value); err == nil && reservedLogKeys[key] {
				found = append(found, fset.Position(lit.Pos()).String()+": "+key)
			}
		}
		return true
	})
	return found
}

func TestLogLinesNeverReuseControllerRuntimesObjectKeys(t *testing.T) {
	t.Run("the check finds a reserved key in each logr method", func(t *testing.T) {
		src := `package x
func f() {
	log.Info("deleted", "namespace", ns)
	log.Error(err, "failed", "kind", k, "name", n)
	log.WithValues("tenant", t).Info("fine", "objectNamespace", ns, "objectName", n)
}`
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, "x.go", src, 0)
		g := NewWithT(t)
		g.Expect(err).NotTo(HaveOccurred())
		found := reservedKeysLogged(fset, file)
		g.Expect(found).To(HaveLen(2))
		g.Expect(found[0]).To(HaveSuffix(": namespace"))
		g.Expect(found[1]).To(HaveSuffix(": name"))
	})
	t.Run("no log line of the operator or the CLI gives them for another object", func(t *testing.T) {
		g := NewWithT(t)
		fset := token.NewFileSet()
		files := 0
		var found []string
		for _, dir := range []string{"internal", "cmd"} {
			err := filepath.WalkDir(shipped.Path(dir), func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
					return err
				}
				file, err := parser.ParseFile(fset, path, nil, 0)
				if err != nil {
					return err
				}
				files++
				found = append(found, reservedKeysLogged(fset, file)...)
				return nil
			})
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Expect(files).To(BeNumerically(">", 50), "the sources were not found")
		g.Expect(found).To(BeEmpty())
	})
}
