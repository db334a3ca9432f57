package docs

import (
	"fmt"
	"regexp"
	"strings"
)

// CheckMermaid parses a Mermaid diagram in the small subset the docs use, and returns every
// problem found. The subset:
//
//   - the first line is the diagram type: `flowchart` or `graph` with a direction (LR, RL, TB,
//     TD, BT), or `stateDiagram-v2`;
//   - every other line is blank, a comment (`%% ...`), a node (`id`, `id[label]`, `id(label)`,
//     `id{label}`, `id((label))`), an edge (`A --> B`, `A -->|label| B`, and in a state diagram
//     `A --> B : label`, with `[*]` for the start and end), `direction XX`, or a
//     `subgraph id [title]` ... `end` pair, balanced;
//
// and its ids are consistent: each is a plain identifier, a node is given at most one label, a
// subgraph id names no node, and every node declared with a label is on some edge.
func CheckMermaid(lines []string) []string {
	var problems []string
	bad := func(n int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("line %d: ", n)+fmt.Sprintf(format, args...))
	}
	first := -1
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			first = i
			break
		}
	}
	if first < 0 {
		return []string{"empty diagram"}
	}
	kind := strings.Fields(lines[first])
	var state bool
	switch {
	case len(kind) == 2 && (kind[0] == "flowchart" || kind[0] == "graph") && directionRE.MatchString(kind[1]):
	case len(kind) == 1 && kind[0] == "stateDiagram-v2":
		state = true
	default:
		return []string{fmt.Sprintf("line %d: %q is not a diagram type this checker knows (flowchart LR, stateDiagram-v2, ...)", first+1, strings.TrimSpace(lines[first]))}
	}

	labels := map[string]string{} // node id -> its label
	declared := map[string]int{}  // node id -> the line that labelled it
	onEdge := map[string]bool{}   // node ids on an edge
	subgraphs := map[string]int{} // subgraph id -> line
	depth := 0
	node := func(n int, ref string) (string, bool) {
		m := nodeRE.FindStringSubmatch(ref)
		if m == nil {
			bad(n, "%q is not a node", ref)
			return "", false
		}
		id, label := m[1], ""
		for _, l := range m[2:] {
			if l != "" {
				label = l
			}
		}
		if id == "[*]" {
			if !state {
				bad(n, "[*] is a state diagram's start or end, not a flowchart node")
			}
			return id, true
		}
		if label != "" {
			if old, ok := labels[id]; ok && old != label {
				bad(n, "node %s is labelled %q here and %q on line %d", id, label, old, declared[id])
			}
			if _, ok := labels[id]; !ok {
				labels[id], declared[id] = label, n
			}
		}
		return id, true
	}
	for i := first + 1; i < len(lines); i++ {
		n := i + 1
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "" || strings.HasPrefix(l, "%%"):
		case strings.HasPrefix(l, "direction "):
			if !directionRE.MatchString(strings.TrimPrefix(l, "direction ")) {
				bad(n, "%q is not a direction", l)
			}
		case l == "end":
			if depth == 0 {
				bad(n, "end without a subgraph")
			} else {
				depth--
			}
		case strings.HasPrefix(l, "subgraph "):
			m := subgraphRE.FindStringSubmatch(l)
			if m == nil || state {
				bad(n, "%q is not a subgraph this checker knows", l)
				continue
			}
			depth++
			subgraphs[m[1]] = n
		default:
			if e, ok := parseEdge(l); ok {
				if e.colon != "" && !state {
					bad(n, "an edge label after ':' belongs to state diagrams; a flowchart writes -->|label|")
				}
				if e.pipe != "" && state {
					bad(n, "a state diagram labels a transition with ': label', not -->|label|")
				}
				for _, ref := range []string{e.from, e.to} {
					if id, ok := node(n, strings.TrimSpace(ref)); ok {
						onEdge[id] = true
					}
				}
				continue
			}
			if state {
				if m := stateDescRE.FindStringSubmatch(l); m != nil {
					if _, ok := declared[m[1]]; !ok {
						declared[m[1]] = n
					}
					continue
				}
			}
			node(n, l)
		}
	}
	if depth != 0 {
		problems = append(problems, fmt.Sprintf("%d subgraph(s) without an end", depth))
	}
	for id, n := range subgraphs {
		if _, ok := labels[id]; ok || onEdge[id] {
			bad(n, "subgraph %s has the id of a node", id)
		}
	}
	for id, n := range declared {
		if !onEdge[id] {
			bad(n, "node %s is on no edge", id)
		}
	}
	return problems
}

var (
	directionRE = regexp.MustCompile(`^(LR|RL|TB|TD|BT)$`)
	ident       = `[A-Za-z][A-Za-z0-9_]*`
	label       = `[^\]\[(){}|"]+`
	nodeRE      = regexp.MustCompile(`^(\[\*\]|` + ident + `)(?:\(\((` + label + `)\)\)|\[(` + label + `)\]|\((` + label + `)\)|\{(` + label + `)\})?$`)
	subgraphRE  = regexp.MustCompile(`^subgraph\s+(` + ident + `)(?:\s*\[` + label + `\])?$`)
	stateDescRE = regexp.MustCompile(`^(` + ident + `)\s*:\s*.+$`)
)

type edge struct{ from, pipe, to, colon string }

// parseEdge splits `A --> B`, `A -->|label| B` and `A --> B : label`.
func parseEdge(l string) (edge, bool) {
	from, rest, ok := strings.Cut(l, "-->")
	if !ok || strings.Contains(rest, "-->") {
		return edge{}, false
	}
	e := edge{from: strings.TrimSpace(from)}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "|") {
		label, after, ok := strings.Cut(rest[1:], "|")
		if !ok || strings.TrimSpace(label) == "" {
			return edge{}, false
		}
		e.pipe, rest = label, strings.TrimSpace(after)
	}
	if to, colon, ok := strings.Cut(rest, " : "); ok {
		e.colon, rest = strings.TrimSpace(colon), to
	}
	e.to = strings.TrimSpace(rest)
	return e, e.from != "" && e.to != ""
}
