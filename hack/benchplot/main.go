// Command benchplot draws the benchmark's JSON reports (test/bench -json) as SVG for the docs:
// how the benchmark's figures grow with the number of tenants, across reports of different
// sizes, and the operator's memory during a report's soak.
//
//	go run ./hack/benchplot -out docs/img bin/bench-*.json
//
// It writes bench-growth.svg from the single-process reports with the phases it plots (two sizes
// at least), and bench-soak-N.svg for each report with a soak.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The phase names test/bench writes into its reports.
const (
	phaseCreate  = "create N tenants until all Ready"
	phaseRestart = "operator restart until idle"
	phaseShared  = "one shared secret change until in all N namespaces"
)

// report is the part of test/bench's report that is plotted.
type report struct {
	Tenants int     `json:"tenants"`
	Shards  int     `json:"shards"`
	Phases  []phase `json:"phases"`
	Soak    *soak   `json:"soak"`
	// file is where the report was read from, for messages.
	file string
}

type phase struct {
	Name        string  `json:"name"`
	Seconds     float64 `json:"seconds"`
	RSSMiB      float64 `json:"operatorRSSMiB"`
	LiveHeapMiB float64 `json:"operatorLiveHeapMiB"`
}

type soak struct {
	Seconds                 float64 `json:"seconds"`
	OperationsPerSecond     float64 `json:"operationsPerSecond"`
	LiveHeapSlopeMiBPerHour float64 `json:"liveHeapSlopeMiBPerHour"`
	Samples                 []struct {
		Seconds     float64 `json:"seconds"`
		RSSMiB      float64 `json:"rssMiB"`
		LiveHeapMiB float64 `json:"liveHeapMiB"`
	} `json:"samples"`
}

func (r *report) phase(name string) (phase, bool) {
	for _, p := range r.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return phase{}, false
}

func main() {
	out := flag.String("out", "docs/img", "Directory to write the SVG files into.")
	flag.Parse()
	written, err := run(*out, flag.Args(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
	for _, f := range written {
		fmt.Println(f)
	}
}

// run reads the reports and writes their plots into out; it returns the files written.
func run(out string, files []string, log io.Writer) ([]string, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("no report given (the JSON files test/bench -json writes; make bench writes bin/bench-N.json)")
	}
	// Sans-serif reads better at the sizes a docs page shows a figure.
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var reports []*report
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := &report{file: f}
		if err := json.Unmarshal(data, r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		reports = append(reports, r)
	}
	var written []string
	if growth := growthReports(reports, log); len(growth) >= 2 {
		file := filepath.Join(out, "bench-growth.svg")
		if err := save(file, 10*vg.Inch, 7*vg.Inch, growthPlots(growth)); err != nil {
			return nil, err
		}
		written = append(written, file)
	} else {
		fmt.Fprintln(log, "benchplot: no growth plot: it needs single-process reports of at least two sizes with the create, restart and shared secret phases")
	}
	for _, r := range reports {
		if r.Soak == nil || len(r.Soak.Samples) == 0 {
			continue
		}
		file := filepath.Join(out, fmt.Sprintf("bench-soak-%d.svg", r.Tenants))
		if err := save(file, 8*vg.Inch, 4*vg.Inch, [][]*plot.Plot{{soakPlot(r)}}); err != nil {
			return nil, err
		}
		written = append(written, file)
	}
	return written, nil
}

// growthReports are the reports to plot against N: one process (a sharded run's figures are
// not the same thing), every plotted phase present, one report per N (the last given).
func growthReports(reports []*report, log io.Writer) []*report {
	byN := map[int]*report{}
	for _, r := range reports {
		if r.Shards > 1 {
			continue
		}
		complete := true
		for _, name := range []string{phaseCreate, phaseRestart, phaseShared} {
			if _, ok := r.phase(name); !ok {
				complete = false
			}
		}
		if !complete {
			continue
		}
		if prev, ok := byN[r.Tenants]; ok {
			fmt.Fprintf(log, "benchplot: %s and %s are both of %d tenants: plotting %s\n", prev.file, r.file, r.Tenants, r.file)
		}
		byN[r.Tenants] = r
	}
	var out []*report
	for _, r := range byN {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tenants < out[j].Tenants })
	return out
}

// series is one measured line of a plot.
type series struct {
	name string
	xys  plotter.XYs
}

// growthPlots are four panels against N: create time, memory after the restart, restart time,
// fan-out time.
func growthPlots(reports []*report) [][]*plot.Plot {
	figure := func(pick func(*report) float64) plotter.XYs {
		xys := make(plotter.XYs, len(reports))
		for i, r := range reports {
			xys[i] = plotter.XY{X: float64(r.Tenants), Y: pick(r)}
		}
		return xys
	}
	phaseOf := func(name string, value func(phase) float64) func(*report) float64 {
		return func(r *report) float64 {
			p, _ := r.phase(name)
			return value(p)
		}
	}
	seconds := func(p phase) float64 { return p.Seconds }
	return [][]*plot.Plot{
		{
			growthPlot("Create N tenants until all Ready", "seconds",
				series{"measured", figure(phaseOf(phaseCreate, seconds))}),
			growthPlot("Operator memory at the end of the restart", "MiB",
				series{"RSS", figure(phaseOf(phaseRestart, func(p phase) float64 { return p.RSSMiB }))},
				series{"live heap", figure(phaseOf(phaseRestart, func(p phase) float64 { return p.LiveHeapMiB }))}),
		},
		{
			growthPlot("Operator restart until idle", "seconds",
				series{"measured", figure(phaseOf(phaseRestart, seconds))}),
			growthPlot("One shared secret change until in all N namespaces", "seconds",
				series{"measured", figure(phaseOf(phaseShared, seconds))}),
		},
	}
}

// growthPlot draws measured figures against N, each with a dashed line through its smallest-N
// point and the origin: what linear growth from there would be, so that better or worse than
// linear shows at a glance.
func growthPlot(title, unit string, measured ...series) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "tenants (N)"
	p.Y.Label.Text = unit
	p.X.Min, p.Y.Min = 0, 0
	p.X.Tick.Marker = thousands{}
	// The legend goes top right, above the measured lines (the plot is made taller for it):
	// a reference line steeper than the measured one leaves the plot on the left, one less
	// steep stays below the measured line's end.
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	top := 0.0
	for _, s := range measured {
		for _, xy := range s.xys {
			top = max(top, xy.Y)
		}
	}
	p.Y.Max = (1.3 + 0.1*float64(len(measured))) * top
	for i, s := range measured {
		c := plotutil.Color(i)
		addLine(p, s.name, s.xys, c, true)
		first, last := s.xys[0], s.xys[len(s.xys)-1]
		if first.X <= 0 || first.Y <= 0 {
			continue
		}
		// The line stops at the top of the plot: a figure with a fixed part (a process's
		// memory) grows far slower than linear from its smallest N, and the whole line would
		// squash what was measured into the bottom of the plot.
		end := plotter.XY{X: last.X, Y: first.Y * last.X / first.X}
		if end.Y > p.Y.Max {
			end = plotter.XY{X: p.Y.Max * first.X / first.Y, Y: p.Y.Max}
		}
		name := "linear from N = " + withCommas(first.X)
		if len(measured) > 1 {
			name = s.name + ", " + name
		}
		line := addLine(p, name, plotter.XYs{first, end}, c, false)
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return p
}

// thousands marks an axis as plot's default ticker does, with numbers written as the docs
// write them: 10,000.
type thousands struct{}

func (thousands) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = withCommas(ticks[i].Value)
		}
	}
	return ticks
}

// withCommas writes a whole number with a comma between each group of three digits.
func withCommas(v float64) string {
	digits := strconv.FormatFloat(math.Abs(math.Round(v)), 'f', 0, 64)
	var b strings.Builder
	if v <= -0.5 {
		b.WriteByte('-')
	}
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// soakPlot draws the operator's RSS and live heap against the soak's minutes.
func soakPlot(r *report) *plot.Plot {
	s := r.Soak
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Operator memory under churn\n%s tenants, %.1f operations/s; live heap trend %+.2f MiB per hour",
		withCommas(float64(r.Tenants)), s.OperationsPerSecond, s.LiveHeapSlopeMiBPerHour)
	p.X.Label.Text = "minutes"
	p.Y.Label.Text = "MiB"
	// From zero: a line that is flat should look flat, not magnified.
	p.X.Min, p.Y.Min = 0, 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	rss, live := make(plotter.XYs, len(s.Samples)), make(plotter.XYs, len(s.Samples))
	for i, sm := range s.Samples {
		rss[i] = plotter.XY{X: sm.Seconds / 60, Y: sm.RSSMiB}
		live[i] = plotter.XY{X: sm.Seconds / 60, Y: sm.LiveHeapMiB}
	}
	addLine(p, "RSS", rss, plotutil.Color(0), true)
	addLine(p, "live heap", live, plotutil.Color(1), true)
	// Room above the lines for the legend.
	top := 0.0
	for _, xy := range rss {
		top = max(top, xy.Y)
	}
	p.Y.Max = max(p.Y.Max, 1.3*top)
	return p
}

// addLine adds a line, with its points marked when points is set, and its legend entry.
func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, points bool) *plotter.Line {
	line, err := plotter.NewLine(xys)
	if err != nil {
		// The points come from parsed JSON numbers, which are never NaN or infinite.
		panic(err)
	}
	line.Color = c
	line.Width = vg.Points(1.5)
	p.Add(line)
	if !points {
		p.Legend.Add(name, line)
		return line
	}
	scatter, err := plotter.NewScatter(xys)
	if err != nil {
		panic(err)
	}
	scatter.Color = c
	scatter.Shape = draw.CircleGlyph{}
	scatter.Radius = vg.Points(2.5)
	p.Add(scatter)
	p.Legend.Add(name, line, scatter)
	return line
}

// save draws the plots, in rows and columns, into one SVG file.
func save(file string, w, h vg.Length, plots [][]*plot.Plot) error {
	canvas := vgsvg.New(w, h)
	tiles := draw.Tiles{Rows: len(plots), Cols: len(plots[0]), PadX: vg.Inch / 3, PadY: vg.Inch / 3,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	cells := plot.Align(plots, tiles, draw.New(canvas))
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(cells[i][j])
		}
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
