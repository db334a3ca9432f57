package component_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/landlord-dev/landlord/internal/component"
)

// renderWithin renders manifests with the default limits, failing the test if the render has
// not returned by the deadline: without limits, a hostile template never returns.
func renderWithin(t *testing.T, deadline time.Duration, manifests string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := render(t, manifests, nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(deadline):
		t.Fatalf("the render had not returned after %s", deadline)
		return nil
	}
}

const configMapHead = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: "

// A template that runs away (until, seq, repeat, range, recursion) would hold a worker and the
// operator's memory for as long as it ran. Each way of running away ends the render with an
// error naming the limit it crossed.
func TestATemplateThatRunsAwayIsStopped(t *testing.T) {
	for _, tc := range []struct {
		name, manifests string
		want            []string
	}{
		{
			name:      "output past the byte limit",
			manifests: configMapHead + "'{{ range 60000 }}xxxxxxxxxxxxxxxxxxxx{{ end }}'\n",
			want:      []string{"rendered output is larger than 1048576 bytes", "components.render.maxOutputBytes"},
		},
		{
			name:      "a range over a large integer",
			manifests: configMapHead + "'{{ range 2000000 }}{{ end }}'\n",
			want:      []string{"more than 100000 range iterations and template calls", "components.render.maxIterations"},
		},
		{
			name:      "nested ranges that multiply",
			manifests: configMapHead + "'{{ range 1500 }}{{ range 1500 }}{{ end }}{{ end }}'\n",
			want:      []string{"more than 100000 range iterations"},
		},
		{
			name:      "a template that calls itself twice per call",
			manifests: `{{ define "fork" }}{{ if lt (len .) 60 }}{{ template "fork" (append . 1) }}{{ template "fork" (append . 1) }}{{ end }}{{ end }}` + configMapHead + `'{{ template "fork" list }}'` + "\n",
			// Whichever comes first: the iteration budget, the deadline, or what the appended
			// lists add up to.
			want: []string{"the template", "components.render."},
		},
		{
			// Each value within the limit, held together by the frames of nested calls: without
			// a bound on everything built, 400 levels held 390 MB within a fraction of a second.
			name:      "values within the limit held by nested template calls",
			manifests: `{{ define "hold" }}{{ $a := repeat 1000000 "x" }}{{ if lt (len .) 400 }}{{ template "hold" (append . 1) }}{{ end }}{{ end }}` + configMapHead + `'{{ template "hold" list }}'` + "\n",
			want:      []string{"functions returned more than 8388608 bytes in all", "components.render.maxOutputBytes"},
		},
		{
			name:      "until with a large count",
			manifests: configMapHead + "'{{ $x := until 20000 }}'\n",
			want:      []string{"until", "20000 numbers", "at most 10000"},
		},
		{
			name:      "untilStep with a large span",
			manifests: configMapHead + "'{{ $x := untilStep 0 2000000000 1 }}'\n",
			want:      []string{"untilStep", "at most 10000"},
		},
		{
			name:      "seq with a large span",
			manifests: configMapHead + "'{{ $x := seq 1 20000 }}'\n",
			want:      []string{"seq", "at most 10000"},
		},
		{
			name:      "repeat with a large count",
			manifests: configMapHead + "'{{ $x := repeat 2000000 \"x\" }}'\n",
			want:      []string{"repeat", "larger than 1048576 bytes"},
		},
		{
			name:      "indent by a large width",
			manifests: configMapHead + "'{{ $x := indent 1000000 \"a\\nb\" }}'\n",
			want:      []string{"indent", "larger than 1048576 bytes"},
		},
		{
			name:      "replace that inserts between every character",
			manifests: configMapHead + "'{{ $x := replace \"\" (repeat 2000 \"y\") (repeat 2000 \"x\") }}'\n",
			want:      []string{"replace", "larger than 1048576 bytes"},
		},
		{
			name:      "regexReplaceAll that inserts between every character",
			manifests: configMapHead + "'{{ $x := regexReplaceAll \"\" (repeat 2000 \"x\") (repeat 2000 \"y\") }}'\n",
			want:      []string{"regexReplaceAll", "larger than 1048576 bytes"},
		},
		{
			name:      "printf with a large width",
			manifests: configMapHead + "'{{ $x := printf \"%1000000d%1000000d\" 1 2 }}'\n",
			want:      []string{"printf", "larger than 1048576 bytes"},
		},
		{
			name:      "a string that doubles in a loop",
			manifests: configMapHead + "'{{ $s := \"x\" }}{{ range 25 }}{{ $s = cat $s $s }}{{ end }}'\n",
			want:      []string{"cat", "larger than 1048576 bytes"},
		},
		{
			name:      "a list built of one large string many times over",
			manifests: configMapHead + "'{{ $s := repeat 100000 \"x\" }}{{ $l := list }}{{ range 100 }}{{ $l = append $l $s }}{{ end }}{{ $j := join \"\" $l }}'\n",
			want:      []string{"append: the result is larger than 1048576 bytes"},
		},
		{
			name:      "a map that contains itself, printed",
			manifests: configMapHead + "'{{ $d := dict }}{{ $_ := set $d \"self\" $d }}{{ $d }}'\n",
			want:      []string{"set: the result is larger than 1048576 bytes"},
		},
		{
			name:      "a value nested so deep that printing it indented is large",
			manifests: configMapHead + "'{{ $d := list }}{{ range 20000 }}{{ $d = list $d }}{{ end }}{{ $x := toPrettyJson $d }}'\n",
			// The lists built on the way add up before any one of them is too large.
			want: []string{"components.render.maxOutputBytes"},
		},
	} {
		t.Run(tc.name+" stops the render with an error naming the limit", func(t *testing.T) {
			err := renderWithin(t, 20*time.Second, tc.manifests)
			var re *component.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("want a RenderError, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// The limits must not get in the way of templates that use the same functions sensibly.
func TestTemplatesWithinTheLimitsRenderAsBefore(t *testing.T) {
	for _, tc := range []struct{ name, expr, want string }{
		{"until makes a short list", `until 3 | toJson`, "[0,1,2]"},
		{"seq counts", `seq 1 3`, "1 2 3"},
		{"repeat repeats", `repeat 3 "ab"`, "ababab"},
		{"printf formats", `printf "%03d-%s" 7 "x"`, "007-x"},
		{"replace replaces", `replace "a" "b" "aaa"`, "bbb"},
		{"regexReplaceAll expands groups", `regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W"`, "-W-xxW-"},
		{"a range over a list", `range $i, $v := list "a" "b" }}{{ $i }}{{ $v }}{{ end`, "0a1b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderValue(t, "{{ "+tc.expr+" }}", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Admission refuses control characters in organization and email, but a tenant stored before it
// did, or a claim's annotations, can still carry them; the render refuses them rather than print
// a line break into a manifest, where it would add fields.
func TestATenantWhoseOrganizationHoldsALineBreakDoesNotRender(t *testing.T) {
	for _, tc := range []struct{ name, org, email string }{
		{name: "a newline in the organization", org: "Acme\nkind: Role"},
		{name: "a Unicode line separator in the organization", org: "Acme\u2028kind: Role"},
		{name: "a next-line character in the email", email: "ops@example.com\u0085x: y"},
		{name: "a tab in the email", email: "ops@example.com\t"},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			tmpl := testTemplate(configMapHead + "{{ .Tenant.Organization }}{{ .Tenant.Email }}\n")
			in := component.NewInput(testTenant(), "tenant-acme", tmpl)
			in.Tenant.Organization, in.Tenant.Email = tc.org, tc.email
			_, err := component.Render(tmpl, in, nil)
			if err == nil || !strings.Contains(err.Error(), "holds a control character or line break") {
				t.Fatalf("want the value refused, got %v", err)
			}
		})
	}
}
