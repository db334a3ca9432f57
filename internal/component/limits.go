package component

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// Limits bound one render. A template is code written by whoever publishes ComponentTemplates,
// run inside the operator: without bounds, one careless or hostile template holds a worker for
// ever, or takes the operator's memory (and every other tenant's reconciles) with it.
type Limits struct {
	// MaxOutputBytes bounds the rendered output, and any one value a function takes or returns:
	// nothing larger can be part of a useful manifest.
	MaxOutputBytes int
	// MaxIterations bounds the range iterations and template calls (define/template/include) of
	// one render, so a loop over a large number or a template that calls itself many times ends.
	MaxIterations int
	// Timeout bounds the render's wall-clock time. It only stops a render: what a render that
	// finishes produces never depends on the clock.
	Timeout time.Duration
}

// DefaultLimits are far above what real manifests need: a component rarely renders more than a
// few dozen kilobytes in a few thousand steps and milliseconds. The step budget is spent in
// about a tenth of a second, well inside the timeout even on a slow, busy machine, so a loop that
// runs away is reported as one, and the same way everywhere.
func DefaultLimits() Limits {
	return Limits{MaxOutputBytes: 1 << 20, MaxIterations: 100_000, Timeout: 2 * time.Second}
}

// MaxGeneratedItems is the most numbers until, untilStep and seq produce: they build a list (or
// a string) from a number alone, and no manifest needs more.
const MaxGeneratedItems = 10_000

// tickFunc is called at the start of every range body and every template body; see countSteps.
const tickFunc = "_tick"

// limitError is a render stopped by one of its Limits; its message names the limit.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

func limitf(format string, args ...any) error { return &limitError{fmt.Sprintf(format, args...)} }

// budget is what one render has left. It is not shared between renders.
type budget struct {
	limits   Limits
	deadline time.Time
	steps    int
	// built is the bytes every function call of the render returned, kept or not: values held
	// in variables of nested template calls stay alive together, each within the output limit.
	built int
}

// builtFactor times the output limit is the most a render's function calls may return in all:
// far above what a template that prints its manifests builds, and a bound on what one can hold.
const builtFactor = 8

func newBudget(l Limits) *budget {
	return &budget{limits: l, deadline: time.Now().Add(l.Timeout)}
}

// clockEvery is how many steps pass between two readings of the clock in tick. Read at every
// step, the clock was a sixth of a tight loop's cost; the steps in between are either cheap or
// call functions, which read it themselves (guard).
const clockEvery = 64

// tick counts one range iteration or template call, and stops the render once the budget or the
// deadline is spent.
func (b *budget) tick() (string, error) {
	b.steps++
	if b.steps > b.limits.MaxIterations {
		return "", limitf("the template ran more than %d range iterations and template calls (operator configuration components.render.maxIterations)", b.limits.MaxIterations)
	}
	if b.steps%clockEvery != 0 {
		return "", nil
	}
	return "", b.inTime()
}

func (b *budget) inTime() error {
	if time.Now().After(b.deadline) {
		return limitf("the template ran longer than %s (operator configuration components.render.timeout)", b.limits.Timeout)
	}
	return nil
}

func (b *budget) tooLarge(what string) error {
	return limitf("%s is larger than %d bytes (operator configuration components.render.maxOutputBytes)", what, b.limits.MaxOutputBytes)
}

// limitedWriter fails the write that would take the output past the limit; text/template then
// stops and returns that error.
type limitedWriter struct {
	b       *budget
	written int
	out     *strings.Builder
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		// Every tick prints its empty result: nothing to bound, and no clock to read.
		return 0, nil
	}
	if w.written+len(p) > w.b.limits.MaxOutputBytes {
		return 0, w.b.tooLarge("the rendered output")
	}
	if err := w.b.inTime(); err != nil {
		return 0, err
	}
	w.written += len(p)
	return w.out.Write(p)
}

// countSteps inserts a call of tickFunc at the start of every range body and of the template's
// own body, so every iteration and every call of a defined template is counted. A function cap
// cannot see `{{ range 1000000000 }}` (text/template ranges over integers) or a template that
// calls itself twice per call, which run without calling any function.
func countSteps(tree *parse.Tree) {
	addTicks(tree.Root)
	tree.Root = prependTick(tree.Root, tree.Root.Pos)
}

func addTicks(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			addTicks(c)
		}
	case *parse.RangeNode:
		addTicks(n.List)
		addTicks(n.ElseList)
		n.List = prependTick(n.List, n.Pos)
	case *parse.IfNode:
		addTicks(n.List)
		addTicks(n.ElseList)
	case *parse.WithNode:
		addTicks(n.List)
		addTicks(n.ElseList)
	}
}

// prependTick returns list with a {{ _tick }} action first; the action prints the empty string.
func prependTick(list *parse.ListNode, pos parse.Pos) *parse.ListNode {
	if list == nil {
		list = &parse.ListNode{NodeType: parse.NodeList, Pos: pos}
	}
	cmd := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{parse.NewIdentifier(tickFunc).SetPos(pos)}}
	pipe := &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Cmds: []*parse.CommandNode{cmd}}
	action := &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: pipe}
	list.Nodes = append([]parse.Node{action}, list.Nodes...)
	return list
}

// boundedFuncs is the function library bound to one render's budget: every function refuses
// arguments and results larger than the output limit and stops past the deadline, and the
// functions that build something large from a number check what they would build first.
func boundedFuncs(b *budget) template.FuncMap {
	f := template.FuncMap{tickFunc: b.tick}
	for name, fn := range baseFuncs {
		if name == "include" || name == tickFunc {
			continue // bound by Render itself
		}
		f[name] = guard(b, name, fn)
	}
	for name, fn := range amplifiers(b) {
		f[name] = guard(b, name, fn)
	}
	return f
}

// guard wraps fn so that a call with an argument larger than the output limit, or past the
// deadline, fails before fn runs, and a result larger than the limit fails the render. A value
// is measured with its nesting (see sizeOf), so a list holding one large string many times, or a
// map holding itself, counts as large as printing it would be. The error is raised as a panic,
// which text/template turns into the call's error: the wrapped function keeps its own signature.
func guard(b *budget, name string, fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		if err := b.inTime(); err != nil {
			panic(err)
		}
		limit := b.limits.MaxOutputBytes
		for i, a := range args {
			if sizeOf(a, 0, limit) > limit {
				if name == printableFunc {
					panic(b.tooLarge("a printed value")) // the author wrote no function here
				}
				panic(b.tooLarge(fmt.Sprintf("%s: argument %d", name, i+1)))
			}
		}
		var out []reflect.Value
		if t.IsVariadic() {
			out = v.CallSlice(args)
		} else {
			out = v.Call(args)
		}
		if len(out) > 0 {
			size := sizeOf(out[0], 0, limit)
			if size > limit {
				panic(b.tooLarge(name + ": the result"))
			}
			if b.built += size; b.built > builtFactor*limit {
				panic(limitf("the template's functions returned more than %d bytes in all (%d times operator configuration components.render.maxOutputBytes)", builtFactor*limit, builtFactor))
			}
		}
		return out
	}).Interface()
}

// sizeOf estimates how many bytes printing v takes, stopping as soon as it passes limit: each
// value's own bytes, and its depth for every element, since indented output (toYaml,
// toPrettyJson) repeats the indentation on every line. A value that contains itself never stops
// growing, so it is always too large.
func sizeOf(v reflect.Value, depth, limit int) int {
	size := 1 + 2*depth
	if size > limit {
		return size
	}
	switch v.Kind() {
	case reflect.Invalid:
		return size
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return size
		}
		return size + sizeOf(v.Elem(), depth, limit-size)
	case reflect.String:
		return size + v.Len()
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return size + v.Len()
		}
		for i := 0; i < v.Len() && size <= limit; i++ {
			size += sizeOf(v.Index(i), depth+1, limit-size)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next() && size <= limit; {
			size += sizeOf(it.Key(), depth+1, limit-size)
			size += sizeOf(it.Value(), depth+1, limit-size)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField() && size <= limit; i++ {
			size += sizeOf(v.Field(i), depth+1, limit-size)
		}
	default:
		size += 8
	}
	return size
}

// amplifiers replace the library functions whose result can be far larger than their
// arguments: each checks the size of what it would build before building it.
func amplifiers(b *budget) template.FuncMap {
	limit := b.limits.MaxOutputBytes
	check := func(name string, size int) {
		if size > limit || size < 0 {
			panic(b.tooLarge(name + ": the result"))
		}
	}
	items := func(name string, n int) {
		if n > MaxGeneratedItems {
			panic(limitf("%s: %d numbers are more than a template may generate (at most %d)", name, n, MaxGeneratedItems))
		}
	}
	return template.FuncMap{
		"until": func(count int) []int {
			items("until", numbers(0, count, 1))
			return baseFuncs["until"].(func(int) []int)(count)
		},
		"untilStep": func(start, stop, step int) []int {
			items("untilStep", numbers(start, stop, step))
			return baseFuncs["untilStep"].(func(int, int, int) []int)(start, stop, step)
		},
		"seq": func(params ...int) string {
			switch len(params) {
			case 1:
				items("seq", numbers(1, params[0], 1)+1)
			case 2:
				items("seq", numbers(params[0], params[1], 1)+1)
			case 3:
				items("seq", numbers(params[0], params[2], params[1])+1)
			}
			return baseFuncs["seq"].(func(...int) string)(params...)
		},
		"repeat": func(count int, s string) string {
			if count > 0 && len(s) > 0 {
				check("repeat", sizeTimes(count, len(s)))
			}
			return baseFuncs["repeat"].(func(int, string) string)(count, s)
		},
		"indent": func(spaces int, s string) string {
			check("indent", len(s)+sizeTimes(spaces, strings.Count(s, "\n")+1))
			return baseFuncs["indent"].(func(int, string) string)(spaces, s)
		},
		"nindent": func(spaces int, s string) string {
			check("nindent", 1+len(s)+sizeTimes(spaces, strings.Count(s, "\n")+1))
			return baseFuncs["nindent"].(func(int, string) string)(spaces, s)
		},
		"replace": func(old, replacement, src string) string {
			check("replace", len(src)+sizeTimes(strings.Count(src, old), len(replacement)))
			return strings.ReplaceAll(src, old, replacement)
		},
		"regexReplaceAll": func(re, s, repl string) (string, error) {
			return boundedRegexReplace(b, "regexReplaceAll", re, s, repl, false)
		},
		"regexReplaceAllLiteral": func(re, s, repl string) (string, error) {
			return boundedRegexReplace(b, "regexReplaceAllLiteral", re, s, repl, true)
		},
		"mustRegexReplaceAll": func(re, s, repl string) (string, error) {
			return boundedRegexReplace(b, "mustRegexReplaceAll", re, s, repl, false)
		},
		"mustRegexReplaceAllLiteral": func(re, s, repl string) (string, error) {
			return boundedRegexReplace(b, "mustRegexReplaceAllLiteral", re, s, repl, true)
		},
		// fmt pads to a width or precision of up to a million per verb: the widths in the format
		// count as output before formatting. print, println and the escapers are text/template's
		// own, listed here so that guard measures their arguments together.
		"printf": func(format string, args ...any) string {
			check("printf", len(format)+formatWidths(format))
			return fmt.Sprintf(format, args...)
		},
		"print":    fmt.Sprint,
		"println":  fmt.Sprintln,
		"html":     template.HTMLEscaper,
		"js":       template.JSEscaper,
		"urlquery": template.URLQueryEscaper,
	}
}

// numbers is at least how many numbers lie from start to stop in steps of step, whichever the
// direction: an upper bound of what until, untilStep and seq build, capped to fit an int.
func numbers(start, stop, step int) int {
	span := uint64(stop) - uint64(start)
	if stop < start {
		span = uint64(start) - uint64(stop)
	}
	s := uint64(step)
	if step < 0 {
		s = -s
	}
	n := span / max(s, 1)
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}

// sizeTimes multiplies without overflowing: a product past any limit is reported as -1.
func sizeTimes(a, b int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > (1<<31)/b {
		return -1
	}
	return a * b
}

// formatWidths adds up the widths and precisions written in a format's verbs; a width taken
// from an argument ("*") counts as the largest fmt allows.
func formatWidths(format string) int {
	const fmtMax = 1_000_000
	total := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[i]) >= 0; i++ {
			switch c := format[i]; {
			case c == '*':
				total += fmtMax
			case c >= '1' && c <= '9':
				n := 0
				for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
					n = min(n*10+int(format[i]-'0'), fmtMax)
				}
				i--
				total += n
			}
		}
	}
	return total
}

// boundedRegexReplace is regexReplaceAll (or its Literal form) built match by match, stopping as
// soon as the result passes the output limit: an empty pattern matches between every character,
// and "$0$0" doubles every match.
func boundedRegexReplace(b *budget, name, pattern, s, repl string, literal bool) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", err
	}
	var out []byte
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		out = append(out, s[last:m[0]]...)
		if literal {
			out = append(out, repl...)
		} else {
			out = re.ExpandString(out, repl, s, m)
		}
		last = m[1]
		if len(out) > b.limits.MaxOutputBytes {
			return "", b.tooLarge(name + ": the result")
		}
	}
	out = append(out, s[last:]...)
	if len(out) > b.limits.MaxOutputBytes {
		return "", b.tooLarge(name + ": the result")
	}
	return string(out), nil
}
