package component

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"

	sprig "github.com/go-task/slim-sprig/v3"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// unavailable are the library functions a template must not call: they read the environment,
// the network or the clock, or return something different on every call. A tenant's objects
// must be a function of the tenant and the template alone, or every reconcile would see a
// change and rewrite them, and the operator's own environment (its credentials included) would
// be readable by whoever writes templates.
var unavailable = []string{
	// The process environment and the network.
	"env", "expandenv", "getHostByName",
	// Randomness.
	"randInt", "randAlpha", "randAlphaNum", "randAscii", "randNumeric", "randBytes", "uuidv4",
	"shuffle",
	// Key and certificate generation (not in slim-sprig today; removed in case it comes back).
	"genPrivateKey", "derivePassword", "buildCustomCert", "genCA", "genCAWithKey",
	"genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
	"encryptAES", "decryptAES", "bcrypt", "htpasswd",
	// The clock, and the local time zone that parsing and formatting dates depend on.
	"now", "ago", "date", "dateInZone", "date_in_zone", "dateModify", "date_modify",
	"mustDateModify", "must_date_modify", "htmlDate", "htmlDateInZone", "toDate", "mustToDate",
	"durationRound", "unixEpoch",
}

// printableFunc is appended to every action that prints, see makeMissingPrintEmpty.
const printableFunc = "_printable"

// maxIncludeDepth stops a template that includes itself before it exhausts the operator's stack,
// which Go cannot recover from. Real helpers nest a few levels at most.
const maxIncludeDepth = 100

// baseFuncs is the function library, built once: it does not depend on the template.
//
// The library is github.com/go-task/slim-sprig rather than Masterminds/sprig: the same
// functions Helm chart authors know, without the key, certificate, password and UUID generators
// that would have to be removed anyway, and without their dependencies in the operator binary.
var baseFuncs = func() template.FuncMap {
	f := sprig.TxtFuncMap()
	for _, name := range unavailable {
		delete(f, name)
	}
	// Go ranges over maps in random order; sprig's keys and values follow it, so a list built
	// from them would change between reconciles.
	f["keys"] = sortedKeys
	f["values"] = valuesByKey
	// Helm's additions, so that chart snippets work unchanged.
	f["toYaml"] = toYAML
	f["fromYaml"] = fromYAML
	f["fromYamlArray"] = fromYAMLArray
	f["required"] = required
	// include needs the template being executed; Render binds the real one.
	f["include"] = func(string, any) (string, error) { return "", errors.New("include is not bound") }
	f[printableFunc] = printable
	return f
}()

func sortedKeys(dicts ...map[string]any) []string {
	var k []string
	for _, d := range dicts {
		for key := range d {
			k = append(k, key)
		}
	}
	slices.Sort(k)
	return k
}

func valuesByKey(dict map[string]any) []any {
	out := make([]any, 0, len(dict))
	for _, k := range sortedKeys(dict) {
		out = append(out, dict[k])
	}
	return out
}

// toYAML fails the render on a value YAML cannot hold, where Helm's renders an empty string and
// leaves the author to wonder where the field went.
func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

func fromYAML(s string) (map[string]any, error) {
	var m map[string]any
	if err := decodeYAML(s, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func fromYAMLArray(s string) ([]any, error) {
	var a []any
	if err := decodeYAML(s, &a); err != nil {
		return nil, err
	}
	if a == nil {
		a = []any{}
	}
	return a, nil
}

// decodeYAML reads whole numbers as int64, like values and objects from the API server.
func decodeYAML(s string, into any) error {
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(j, into)
}

// required fails the render with the template author's message when a value is missing or
// empty; zero and false are values a tenant may mean, so they pass.
func required(msg string, v any) (any, error) {
	if v == nil {
		return nil, errors.New(msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return nil, errors.New(msg)
	}
	return v, nil
}

// printable makes a missing value print as nothing. text/template prints "<no value>" for a
// missing map key whatever its missingkey option, and a manifest with "<no value>" in an image
// name or an environment variable would be applied as such.
func printable(v any) any {
	if v == nil {
		return ""
	}
	return v
}

// includeError carries the innermost failure of nested includes up unchanged, so that Render can
// report it at its own line, and its message appears once rather than once per level of nesting.
type includeError struct{ err error }

func (e *includeError) Error() string { return e.err.Error() }
func (e *includeError) Unwrap() error { return e.err }

// bindInclude gives t Helm's include, which, unlike the template action, yields a string that
// can be piped to nindent.
func bindInclude(t *template.Template, b *budget) {
	depth := 0
	t.Funcs(template.FuncMap{"include": func(name string, data any) (string, error) {
		if depth >= maxIncludeDepth {
			return "", &includeError{fmt.Errorf("include %q: nested more than %d deep", name, maxIncludeDepth)}
		}
		depth++
		defer func() { depth-- }()
		var out strings.Builder
		if err := t.ExecuteTemplate(&limitedWriter{b: b, out: &out}, name, data); err != nil {
			if inner, ok := errors.AsType[*includeError](err); ok {
				return "", inner
			}
			return "", &includeError{err}
		}
		return out.String(), nil
	}})
}
