package install_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// buildContext is what `docker build .` sends: the repository less what .dockerignore excludes,
// with Docker's own matcher.
type buildContext struct {
	matcher *patternmatcher.PatternMatcher
}

func readBuildContext(t *testing.T) buildContext {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	matcher, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return buildContext{matcher}
}

// holds says whether the build context holds a file (a slash-separated path from the root).
func (c buildContext) holds(t *testing.T, path string) bool {
	t.Helper()
	excluded, err := c.matcher.MatchesOrParentMatches(path)
	if err != nil {
		t.Fatal(err)
	}
	return !excluded
}

// copySources are the build-context sources of the Dockerfile's COPY instructions (not those
// copying from another stage).
func copySources(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sources []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 3 || !strings.EqualFold(fields[0], "COPY") {
			continue
		}
		args, fromStage := []string{}, false
		for _, a := range fields[1:] {
			if strings.HasPrefix(a, "--from=") {
				fromStage = true
			}
			if !strings.HasPrefix(a, "--") {
				args = append(args, a)
			}
		}
		if !fromStage {
			sources = append(sources, args[:len(args)-1]...)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return sources
}

func TestTheImageBuildContext(t *testing.T) {
	context := readBuildContext(t)
	sources := copySources(t)
	if len(sources) == 0 {
		t.Fatal("the Dockerfile copies nothing from the build context")
	}

	t.Run("every source the Dockerfile copies exists and is in the build context", func(t *testing.T) {
		for _, source := range sources {
			path := strings.TrimSuffix(source, "/")
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("COPY %s: %v", source, err)
			}
			if !context.holds(t, path) {
				t.Errorf("COPY %s: .dockerignore leaves it out of the build context", source)
			}
		}
	})

	t.Run("every file the binary is built from is copied into the builder", func(t *testing.T) {
		// The main module's packages cmd/landlord links, with their Go and embedded files.
		out := run(t, nil, "go", "list", "-deps", "-f",
			`{{if .Module}}{{if .Module.Main}}{{$dir := .Dir}}{{range .GoFiles}}{{$dir}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$dir}}/{{.}}
{{end}}{{end}}{{end}}`, "./cmd/landlord")
		files := append(strings.Fields(out), filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
		if len(files) < 20 {
			t.Fatalf("go list found %d files; expected the operator's sources", len(files))
		}
		for _, file := range files {
			rel, err := filepath.Rel(root, file)
			if err != nil {
				t.Fatal(err)
			}
			rel = filepath.ToSlash(rel)
			if !context.holds(t, rel) {
				t.Errorf("%s is built into the binary but .dockerignore leaves it out", rel)
			}
			copied := false
			for _, source := range sources {
				if rel == source || strings.HasPrefix(rel, strings.TrimSuffix(source, "/")+"/") {
					copied = true
				}
			}
			if !copied {
				t.Errorf("%s is built into the binary but no COPY brings it into the builder", rel)
			}
		}
	})

	t.Run("bin, dist, git history and test data stay out of the build context", func(t *testing.T) {
		for _, path := range []string{
			"bin/k8s/1.37.2/etcd", "bin/embedded/etcd/member/snap/db", "bin/landlord",
			"dist/install.yaml", ".git/HEAD", "test/e2e/e2e_test.go", "docs/benchmarks.md",
			"internal/resources/testdata/tenant.golden.yaml", "internal/controller/tenant_lifecycle_test.go",
		} {
			if context.holds(t, path) {
				t.Errorf("%s is in the build context", path)
			}
		}
	})

	t.Run("the builder cross-compiles from the build platform with the version stamped in", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		dockerfile := string(data)
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^FROM --platform=\$BUILDPLATFORM golang:\S+ AS build$`),
			regexp.MustCompile(`(?m)^ARG GOPROXY`),
			regexp.MustCompile(`(?m)^ENV GOPROXY=\$GOPROXY .*GOTOOLCHAIN=local`),
			regexp.MustCompile(`(?m)^ARG TARGETARCH$`),
			regexp.MustCompile(`GOOS=\$TARGETOS GOARCH=\$TARGETARCH go build -trimpath`),
			regexp.MustCompile(`-X github.com/landlord-dev/landlord/internal/version.version=\$\{VERSION\}`),
			regexp.MustCompile(`-X github.com/landlord-dev/landlord/internal/version.commit=\$\{COMMIT\}`),
			regexp.MustCompile(`(?m)^FROM gcr.io/distroless/static:nonroot$`),
			regexp.MustCompile(`(?m)^USER 65532:65532$`),
		} {
			if !want.MatchString(dockerfile) {
				t.Errorf("the Dockerfile has no line matching %s", want)
			}
		}
		// -X sets string variables only, and silently does nothing for a name that does not exist.
		vars := packageStringVars(t, filepath.Join(root, "internal", "version", "version.go"))
		for _, name := range []string{"version", "commit"} {
			if !vars[name] {
				t.Errorf("internal/version has no string variable %q for -X to set", name)
			}
		}
	})
}

// packageStringVars are the package-level variables of a Go file initialised with a string.
func packageStringVars(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.VAR {
			continue
		}
		for _, spec := range gen.Specs {
			value := spec.(*ast.ValueSpec)
			for i, name := range value.Names {
				if i < len(value.Values) {
					if lit, ok := value.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						vars[name.Name] = true
					}
				}
			}
		}
	}
	return vars
}
