package docs_test

import (
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/test/docs"
)

func TestSlugFollowsGitHub(t *testing.T) {
	cases := map[string]string{
		"Pause and reconcile now":                                   "pause-and-reconcile-now",
		"Shards: more than one operator in a cluster":               "shards-more-than-one-operator-in-a-cluster",
		"With the release manifest (`kubectl apply --server-side`)": "with-the-release-manifest-kubectl-apply---server-side",
		"The operator's permissions":                                "the-operators-permissions",
		"LandlordTenantsStalled":                                    "landlordtenantsstalled",
		"From a chart whose CRDs sat in `crds/`":                    "from-a-chart-whose-crds-sat-in-crds",
		"snake_case stays":                                          "snake_case-stays",
		"[Linked](x.md) heading":                                    "linked-heading",
	}
	for in, want := range cases {
		if got := docs.Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseNumbersDuplicateHeadingsAndSkipsCode(t *testing.T) {
	page := docs.Parse("x.md", strings.Join([]string{
		"# Notes",
		"## Notes",
		"## Notes",
		"```sh",
		"# not a heading [nor](a-link.md)",
		"```",
		"See [here](#notes-2) and `[not](code.md)`.",
	}, "\n"))
	var anchors []string
	for _, h := range page.Headings {
		anchors = append(anchors, h.Anchor)
	}
	if strings.Join(anchors, " ") != "notes notes-1 notes-2" {
		t.Errorf("anchors %v, want notes notes-1 notes-2", anchors)
	}
	if len(page.Links) != 1 || page.Links[0].Target != "#notes-2" {
		t.Errorf("links %v, want only #notes-2", page.Links)
	}
}

func TestCheckMermaid(t *testing.T) {
	cases := map[string]struct {
		diagram string
		problem string // a substring of the first problem; empty for none
	}{
		"a flowchart with labels":         {"flowchart LR\n  a[A] -->|x| b[B]\n  b --> c\n  %% note", ""},
		"a state diagram":                 {"stateDiagram-v2\n  [*] --> Active\n  Active --> Frozen : freeze\n  Frozen --> [*]", ""},
		"a balanced subgraph":             {"flowchart TD\n  subgraph s [Group]\n    a --> b\n  end", ""},
		"an unknown type":                 {"sequenceDiagram\n  a->>b: hi", "not a diagram type"},
		"a flowchart without a direction": {"flowchart\n  a --> b", "not a diagram type"},
		"an unbalanced subgraph":          {"flowchart LR\n  subgraph s\n  a --> b", "without an end"},
		"an end too many":                 {"flowchart LR\n  a --> b\n  end", "end without a subgraph"},
		"a node labelled twice":           {"flowchart LR\n  a[One] --> b\n  a[Two] --> c", "labelled"},
		"a node on no edge":               {"flowchart LR\n  a[A] --> b\n  lonely[Lonely]", "on no edge"},
		"an unparsable line":              {"flowchart LR\n  a --- b ---> ", "not a node"},
		"a colon label in a flowchart":    {"flowchart LR\n  a --> b : x", "belongs to state diagrams"},
		"a pipe label in a state diagram": {"stateDiagram-v2\n  A -->|x| B", "not -->|label|"},
		"a start in a flowchart":          {"flowchart LR\n  [*] --> a", "state diagram"},
		"a subgraph named like a node":    {"flowchart LR\n  subgraph a\n  a --> b\n  end", "id of a node"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			problems := docs.CheckMermaid(strings.Split(c.diagram, "\n"))
			switch {
			case c.problem == "" && len(problems) > 0:
				t.Errorf("problems %v, want none", problems)
			case c.problem != "" && (len(problems) == 0 || !strings.Contains(problems[0], c.problem)):
				t.Errorf("problems %v, want one saying %q", problems, c.problem)
			}
		})
	}
}
