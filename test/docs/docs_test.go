package docs_test

import (
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/test/docs"
)

// root is the repository, two levels up from this package.
const root = "../.."

// pages are README.md and every Markdown file under docs/.
func pages(t *testing.T) map[string]*docs.Page {
	t.Helper()
	out := map[string]*docs.Page{}
	paths := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		page, err := docs.Read(root, p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = page
	}
	return out
}

// Every relative link in README.md and docs/ names a file of the repository, and every #anchor
// a heading of the page it points into, by GitHub's rules.
func TestEveryLinkAndAnchorResolves(t *testing.T) {
	all := pages(t)
	for _, p := range sortedKeys(all) {
		page := all[p]
		for _, l := range page.Links {
			target := l.Target
			if u, err := url.Parse(target); err != nil || u.Scheme != "" || strings.HasPrefix(target, "//") {
				continue // an absolute URL: not ours to check here
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := p
			if file != "" {
				dest = path.Clean(path.Join(path.Dir(p), file))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s:%d: %s leaves the repository", p, l.Line, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s:%d: %s: no such file %s", p, l.Line, target, dest)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			to, ok := all[dest]
			if !ok {
				var err error
				if to, err = docs.Read(root, dest); err != nil {
					t.Fatal(err)
				}
			}
			if !to.HasAnchor(anchor) {
				t.Errorf("%s:%d: %s: %s has no heading making #%s", p, l.Line, target, dest, anchor)
			}
		}
	}
}

// The alerts' runbook_url annotations, and any other link from a shipped manifest into this
// repository's docs, name a heading that exists.
func TestShippedLinksIntoTheDocsResolve(t *testing.T) {
	const base = "https://github.com/landlord-dev/landlord/blob/main/"
	linkRE := regexp.MustCompile(regexp.QuoteMeta(base) + `([\w./-]+\.md)(?:#([\w-]+))?`)
	found := 0
	for _, dir := range []string{"config", "charts", "hack/chart", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".tpl")) {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range linkRE.FindAllStringSubmatch(string(data), -1) {
				found++
				page, err := docs.Read(root, m[1])
				if err != nil {
					t.Errorf("%s links %s: %v", p, m[0], err)
					continue
				}
				if m[2] != "" && !page.HasAnchor(m[2]) {
					t.Errorf("%s links %s: %s has no heading making #%s", p, m[0], m[1], m[2])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found == 0 {
		t.Fatal("no shipped manifest links into the docs: the runbook_url annotations were expected")
	}
}

// Every page under docs/ is reachable from the index, docs/README.md.
func TestTheIndexLinksEveryPage(t *testing.T) {
	all := pages(t)
	index := all["docs/README.md"]
	if index == nil {
		t.Fatal("docs/README.md, the index, is missing")
	}
	linked := map[string]bool{}
	for _, l := range index.Links {
		file, _, _ := strings.Cut(l.Target, "#")
		linked[path.Clean(path.Join("docs", file))] = true
	}
	for _, p := range sortedKeys(all) {
		if strings.HasPrefix(p, "docs/") && p != "docs/README.md" && !linked[p] {
			t.Errorf("docs/README.md does not link %s", p)
		}
	}
}

// The README says what Landlord is and how to start in one screen, and opens with the two
// commands every contributor needs.
func TestTheREADMEIsShortAndOpensWithRunAndTest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 200 {
		t.Errorf("README.md has %d lines; keep it under 200 and move the rest into docs/", len(lines))
	}
	head := strings.Join(lines[:min(len(lines), 8)], "\n")
	for _, cmd := range []string{"make run", "make test"} {
		if !strings.Contains(head, "\n"+cmd+" ") {
			t.Errorf("README.md's first lines do not show %q", cmd)
		}
	}
	page := docs.Parse("README.md", string(data))
	if len(page.Mermaid) == 0 {
		t.Error("README.md has no Mermaid picture of what a Tenant becomes")
	}
}

// Prose a user reads speaks of behaviour, not of tests: test names live in the promise tables
// of docs/security.md, and in the contributors' page about the tests.
func TestOnlyThePromisePagesNameTests(t *testing.T) {
	allowed := []string{"docs/security.md", "docs/testing.md"}
	testRE := regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	all := pages(t)
	for _, p := range sortedKeys(all) {
		if slices.Contains(allowed, p) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := testRE.FindString(line); m != "" {
				t.Errorf("%s:%d names the test %s: say what it proves, and list it in docs/security.md", p, i+1, m)
			}
		}
	}
	security := string(must(os.ReadFile(filepath.Join(root, "docs", "security.md"))))
	if n := len(testRE.FindAllString(security, -1)); n < 50 {
		t.Errorf("docs/security.md names %d tests; its promise tables were expected to hold the README's", n)
	}
}

// A promise is only as good as the test that proves it: every test docs/security.md and
// docs/testing.md name is a test function of the repository, so that a test removed or renamed
// takes its promise's row with it, or a new test's name.
func TestEveryTestTheDocsNameExists(t *testing.T) {
	defined := map[string]bool{}
	funcRE := regexp.MustCompile(`(?m)^func (Test[A-Z][A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, "_test.go") {
			for _, m := range funcRE.FindAllStringSubmatch(string(must(os.ReadFile(p))), -1) {
				defined[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	testRE := regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	for _, page := range []string{"docs/security.md", "docs/testing.md"} {
		for i, line := range strings.Split(string(must(os.ReadFile(filepath.Join(root, page)))), "\n") {
			for _, name := range testRE.FindAllString(line, -1) {
				if !defined[name] {
					t.Errorf("%s:%d names %s, which no _test.go file defines", page, i+1, name)
				}
			}
		}
	}
}

// Every Mermaid diagram of the docs parses under the subset CheckMermaid knows, with consistent
// node ids.
func TestEveryMermaidDiagramParses(t *testing.T) {
	all := pages(t)
	diagrams := 0
	for _, p := range sortedKeys(all) {
		for _, b := range all[p].Mermaid {
			diagrams++
			for _, problem := range docs.CheckMermaid(b.Lines) {
				t.Errorf("%s: the diagram at line %d: %s", p, b.Line, problem)
			}
		}
	}
	if diagrams < 2 {
		t.Errorf("%d Mermaid diagrams; the README's flow and the lifecycle's states were expected", diagrams)
	}
	lifecycle := all["docs/lifecycle.md"]
	if lifecycle == nil || len(lifecycle.Mermaid) == 0 {
		t.Fatal("docs/lifecycle.md has no state diagram")
	}
	body := strings.Join(lifecycle.Mermaid[0].Lines, "\n")
	for _, state := range []string{"Active", "Frozen", "Archived", "Purged"} {
		if !strings.Contains(body, state) {
			t.Errorf("the lifecycle diagram has no state %s", state)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
