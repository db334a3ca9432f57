package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestExpandReadsVariablesAsKubernetesDoes(t *testing.T) {
	vars := map[string]string{"NAME": "web", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for in, want := range map[string]string{
		"hello $(NAME)":       "hello web",
		"$(NAME)-$(NAME)":     "web-web",
		"$(MISSING) stays":    "$(MISSING) stays",
		"$$(NAME) is escaped": "$(NAME) is escaped",
		"[$(EMPTY)]":          "[]",
		"unclosed $(NAME":     "unclosed $(NAME",
		"a lone $ sign":       "a lone $ sign",
		"ends with $":         "ends with $",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAPathUnderAMountMovesToTheDirectoryStandingForIt(t *testing.T) {
	m := pathMap{mounts: []mount{
		{path: "/var/run/landlord", dir: "/pods/1/volumes/run"},
		{path: "/var/run/landlord/plan", dir: "/pods/1/volumes/plan"},
		{path: "/dev/termination-log", dir: "/pods/1/termination-log"},
	}}
	for in, want := range map[string]string{
		"/var/run/landlord/plan/plan.json": "/pods/1/volumes/plan/plan.json",
		"/var/run/landlord/plan":           "/pods/1/volumes/plan",
		"/var/run/landlord/other":          "/pods/1/volumes/run/other",
		"/var/run/landlordish":             "/var/run/landlordish",
		"/dev/termination-log":             "/pods/1/termination-log",
		"relative/var/run/landlord":        "relative/var/run/landlord",
		"--plan=/var/run/landlord/plan":    "--plan=/var/run/landlord/plan",
	} {
		if got := m.mapPath(in); got != want {
			t.Errorf("mapPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTheTerminationMessageIsTheFileOrTheEndOfAFailedContainersOutput(t *testing.T) {
	dir := t.TempDir()
	file, log := filepath.Join(dir, "termination-log"), filepath.Join(dir, "out.log")
	var out strings.Builder
	out.WriteString("an earlier run's output\n")
	offset := int64(out.Len())
	for range 100 {
		out.WriteString(strings.Repeat("x", 30) + "\n")
	}
	if err := os.WriteFile(log, []byte(out.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		written string
		policy  corev1.TerminationMessagePolicy
		code    int32
		want    func(string) bool
	}{
		{"the file's content, when written", "why", corev1.TerminationMessageFallbackToLogsOnError, 1, func(s string) bool { return s == "why" }},
		{"nothing, for a failure under the File policy", "", corev1.TerminationMessageReadFile, 1, func(s string) bool { return s == "" }},
		{"nothing, for a success under FallbackToLogsOnError", "", corev1.TerminationMessageFallbackToLogsOnError, 0, func(s string) bool { return s == "" }},
		{"the last 2,048 bytes of the last 80 lines, for a failure under FallbackToLogsOnError", "", corev1.TerminationMessageFallbackToLogsOnError, 1,
			func(s string) bool { return len(s) == fallbackBytes && !strings.Contains(s, "earlier") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(file, []byte(tc.written), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := terminationMessage(file, log, offset, tc.policy, tc.code); !tc.want(got) {
				t.Errorf("message %q", got)
			}
		})
	}
}

// kwok leaves a known image's Job pods to the runner once Running: it neither completes, fails
// nor removes them; it still makes them Running.
func TestKwokLeavesTheKnownImagesPodsToTheRunner(t *testing.T) {
	stages, err := stagesFor(kwokStages, map[string]Program{"b:1": {}, "a:1": {}})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(stages), "\n---\n") {
		var stage struct {
			Metadata struct{ Name string }
			Spec     struct {
				Selector struct {
					MatchExpressions []struct {
						Key, Operator string
						Values        []string
					}
				}
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &stage); err != nil {
			t.Fatal(err)
		}
		excluded := false
		for _, e := range stage.Spec.Selector.MatchExpressions {
			if e.Key == ".spec.containers.[0].image" && e.Operator == "NotIn" && strings.Join(e.Values, ",") == "a:1,b:1" {
				excluded = true
			}
		}
		want := stage.Metadata.Name == "pod-complete" || stage.Metadata.Name == "pod-fail" || stage.Metadata.Name == "pod-delete"
		if excluded != want {
			t.Errorf("stage %s leaves the known images' pods alone: %v, want %v", stage.Metadata.Name, excluded, want)
		}
	}
	if same, _ := stagesFor(kwokStages, nil); string(same) != string(kwokStages) {
		t.Error("with no known image, the stages are not kwok-stages.yaml as written")
	}
}
