package component

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// RenderError is every failure to render a component, worded for the tenant's status: it names
// the component and version, and where in the template the problem is when that is known. A
// problem in the YAML the template produced (Document > 0) is located in the rendered output
// instead, which is what the YAML parser saw; the document number and line let an author find
// it by rendering the template by hand.
type RenderError struct {
	Component, Version string
	// Line is the 1-based line of the template, or of the rendered output when Document is set;
	// 0 when unknown.
	Line int
	// Document is the 1-based number of the offending YAML document among those the template
	// rendered, counting only documents with content; 0 for errors in the template itself.
	Document int
	Err      error
}

func (e *RenderError) Error() string {
	var where string
	switch {
	case e.Document > 0:
		where = fmt.Sprintf(", rendered document %d (output line %d)", e.Document, e.Line)
	case e.Line > 0:
		where = fmt.Sprintf(", line %d", e.Line)
	}
	return fmt.Sprintf("component %s version %s%s: %s", e.Component, e.Version, where, causeText(e.Err))
}

func (e *RenderError) Unwrap() error { return e.Err }

// templateLocation matches the "template: NAME:LINE:" or "template: NAME:LINE:COL:" that
// text/template puts before its parse and execution errors.
var templateLocation = regexp.MustCompile(`template: [^:\s]+:(\d+)(?::\d+)?: `)

// causeText drops text/template's leading location, which RenderError already states as a line.
func causeText(err error) string {
	if err == nil {
		return "unknown error"
	}
	msg := err.Error()
	if loc := templateLocation.FindStringIndex(msg); loc != nil && loc[0] == 0 {
		return msg[loc[1]:]
	}
	return msg
}

// templateLine is the line of the location text/template puts before an error, 0 if none.
func templateLine(err error) int {
	m := templateLocation.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	line, _ := strconv.Atoi(m[1])
	return line
}

// data is what a template executes against: Input, plus the values.
type data struct {
	Tenant    Tenant
	Component Info
	Databases map[string]Database
	PgBouncer PgBouncer
	Values    map[string]any
}

// Render executes a component template for one tenant and decodes the YAML documents it
// produces into objects. values are the merged values (template defaults, then the operator's
// defaults, then the tenant's: see MergeValues), already checked with ValidateValues.
//
// The objects come out as they would from the API server (whole numbers are int64), so that the
// caller can compare them with live objects field by field. Render neither sets namespaces nor
// adds labels: it returns what the template says. It renders within DefaultLimits.
func Render(tmpl *tenancyv1alpha1.ComponentTemplate, in Input, values map[string]any) ([]*unstructured.Unstructured, error) {
	return RenderWithin(tmpl, in, values, DefaultLimits())
}

// RenderWithin is Render within the given limits: a template that passes one fails with a
// RenderError naming the limit (and the operator configuration key that sets it).
func RenderWithin(tmpl *tenancyv1alpha1.ComponentTemplate, in Input, values map[string]any, limits Limits) ([]*unstructured.Unstructured, error) {
	fail := func(line, doc int, err error) error {
		return &RenderError{Component: tmpl.Spec.Component, Version: tmpl.Spec.Version, Line: line, Document: doc, Err: err}
	}
	if err := checkPrintable(in.Tenant); err != nil {
		return nil, fail(0, 0, err)
	}
	name := tmpl.Spec.Component
	if name == "" {
		name = "manifests"
	}
	t, err := template.New(name).Funcs(baseFuncs).Parse(tmpl.Spec.Manifests)
	if err != nil {
		return nil, fail(templateLine(err), 0, err)
	}
	for _, sub := range t.Templates() {
		if sub.Tree != nil {
			makeMissingPrintEmpty(sub.Tree.Root)
			countSteps(sub.Tree)
		}
	}
	b := newBudget(limits)
	t.Funcs(boundedFuncs(b))
	bindInclude(t, b)

	// A copy, because sprig's set and unset change maps in place: a template must not be able
	// to alter the caller's values, let alone what the next tenant's render sees.
	values = MergeValues(values)
	if in.Databases == nil {
		in.Databases = map[string]Database{}
	}
	var out strings.Builder
	d := data{Tenant: in.Tenant, Component: in.Component, Databases: in.Databases, PgBouncer: in.PgBouncer, Values: values}
	if err := t.Execute(&limitedWriter{b: b, out: &out}, d); err != nil {
		line := templateLine(err)
		// A failure inside an included template is reported where it happened, not where the
		// include was called.
		if inner, ok := errors.AsType[*includeError](err); ok {
			if l := templateLine(inner.err); l > 0 {
				line = l
			}
			err = inner.err
		}
		// A limit's message says all there is to say; text/template's "error calling" around it
		// would name a function the author never wrote.
		if limit, ok := errors.AsType[*limitError](err); ok {
			err = limit
		}
		return nil, fail(line, 0, err)
	}

	var objs []*unstructured.Unstructured
	seen := map[string]int{}
	for i, doc := range splitDocuments(out.String()) {
		n := i + 1
		obj, err := decodeDocument(doc.text)
		if err != nil {
			return nil, fail(doc.line, n, err)
		}
		if obj == nil {
			continue
		}
		key := InventoryKey(obj)
		if prev, dup := seen[key]; dup {
			return nil, fail(doc.line, n, fmt.Errorf("%s %s is also rendered by document %d", obj.GetKind(), obj.GetName(), prev))
		}
		seen[key] = n
		objs = append(objs, obj)
	}
	return objs, nil
}

// checkPrintable refuses a tenant whose organization or email holds a control character or a line
// break (to YAML, U+0085, U+2028 and U+2029 are line breaks too): templates print them, often
// unquoted, and a line break would add fields of the customer's choosing to a manifest. Admission
// refuses such values; this catches objects stored before it did, and claims' annotations.
func checkPrintable(t Tenant) error {
	for _, f := range []struct{ name, value string }{{"organization", t.Organization}, {"email", t.Email}} {
		if i := strings.IndexFunc(f.value, isControlOrLineBreak); i >= 0 {
			return fmt.Errorf("the tenant's %s holds a control character or line break at byte %d, which templates would print into manifests: correct it on the Tenant (or the TenantClaim it came from)", f.name, i)
		}
	}
	return nil
}

func isControlOrLineBreak(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

// makeMissingPrintEmpty pipes the value of every action that prints into printableFunc, so a
// missing value prints as nothing instead of "<no value>". Rewriting the parsed template touches
// only what is printed; replacing "<no value>" in the output would also change text an author
// wrote on purpose.
func makeMissingPrintEmpty(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			makeMissingPrintEmpty(c)
		}
	case *parse.ActionNode:
		// An action that declares or assigns a variable prints nothing.
		if len(n.Pipe.Decl) == 0 {
			n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{
				NodeType: parse.NodeCommand,
				Pos:      n.Pos,
				Args:     []parse.Node{parse.NewIdentifier(printableFunc).SetPos(n.Pos)},
			})
		}
	case *parse.IfNode:
		makeMissingPrintEmpty(n.List)
		makeMissingPrintEmpty(n.ElseList)
	case *parse.RangeNode:
		makeMissingPrintEmpty(n.List)
		makeMissingPrintEmpty(n.ElseList)
	case *parse.WithNode:
		makeMissingPrintEmpty(n.List)
		makeMissingPrintEmpty(n.ElseList)
	}
}

type document struct {
	text string
	// line is the 1-based line of the rendered output where the document's content starts.
	line int
}

// splitDocuments splits rendered output on "---" lines and drops documents with nothing but
// blank lines and comments, which templates produce whenever a conditional section is off. A
// document's text starts at its first line of content, so the YAML parser's "line N" counts from
// the output line the document reports.
func splitDocuments(out string) []document {
	var docs []document
	var cur []string
	start := 0
	flush := func() {
		if start > 0 {
			docs = append(docs, document{text: strings.Join(cur, "\n"), line: start})
		}
		cur, start = nil, 0
	}
	for i, line := range strings.Split(out, "\n") {
		if rest, ok := separator(line); ok {
			flush()
			// Content after the marker ("--- a: b") belongs to the next document; padding keeps
			// its columns where the YAML parser will report them.
			line = "   " + rest
		}
		if start == 0 {
			if !hasContent(line) {
				continue
			}
			start = i + 1
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

// separator reports whether line starts a new YAML document, and what follows the marker.
func separator(line string) (rest string, ok bool) {
	if !strings.HasPrefix(line, "---") {
		return "", false
	}
	rest = line[3:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\r' {
		return "", false // "----" or "---x" is content, not a marker
	}
	return rest, true
}

func hasContent(line string) bool {
	t := strings.TrimSpace(line)
	return t != "" && !strings.HasPrefix(t, "#")
}

// decodeDocument turns one YAML document into an object; nil for a document that is only null.
func decodeDocument(doc string) (*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, err
	}
	j = bytes.TrimSpace(j)
	if bytes.Equal(j, []byte("null")) {
		return nil, nil
	}
	if len(j) == 0 || j[0] != '{' {
		return nil, fmt.Errorf("a document must be a Kubernetes object, not %s", describeJSON(j))
	}
	// The scheme's own errors for a missing kind quote the whole object; these name the field.
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(j, &head); err != nil {
		return nil, err
	}
	switch {
	case head.APIVersion == "":
		return nil, fmt.Errorf("object has no apiVersion")
	case head.Kind == "":
		return nil, fmt.Errorf("object has no kind")
	case head.Metadata.Name == "":
		return nil, fmt.Errorf("%s has no metadata.name", head.Kind)
	}
	if _, err := schema.ParseGroupVersion(head.APIVersion); err != nil {
		return nil, fmt.Errorf("apiVersion: %w", err)
	}
	// Decoding with the unstructured scheme, as client-go does, gives whole numbers as int64.
	obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, j)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s is a list: write its items as documents of their own", head.Kind)
	}
	return u, nil
}

func describeJSON(j []byte) string {
	switch {
	case len(j) == 0:
		return "nothing"
	case j[0] == '[':
		return "a list"
	case j[0] == '"':
		return "a string"
	case bytes.Equal(j, []byte("true")) || bytes.Equal(j, []byte("false")):
		return "a boolean"
	default:
		return "a number"
	}
}
