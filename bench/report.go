package bench

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is the outcome of Run. A section that was not run is nil.
type Report struct {
	Config   RunConfig
	Machine  Machine
	Started  time.Time
	Duration time.Duration
	// Notes are printed under the report's header (the CLI's -note).
	Notes []string

	Pipeline *PipelineResult
	HTTP     *HTTPResult
	Query    *QueryResult
	Memory   *MemoryResult
	Snapshot *SnapshotResult
	Server   *ServerResult
	Peer     *PeerResult
	// Profiles were taken during the measurements behind targets the
	// runs may not meet (section 8 of the report).
	Profiles []*Profile
}

// Target is one performance target set by an issue, beside what the run
// measured.
type Target struct {
	// Section is the run that measures it (RunPipeline, …).
	Section string
	// What is measured, and Want the target ("≥ 200,000 hits/s").
	What, Want string
	// Got is the measured median (or the percentile the target names);
	// "" when it was not measured.
	Got string
	Met bool
	// Note says why it was not measured, or how it was read.
	Note string
}

// Measured reports whether the target was measured.
func (t Target) Measured() bool { return t.Got != "" }

// Status is "met", "not met" or "not measured".
func (t Target) Status() string {
	switch {
	case !t.Measured():
		return "not measured"
	case t.Met:
		return "met"
	}
	return "**not met**"
}

func atLeast(section, what string, want, got float64, ok bool, unit string, note string) Target {
	t := Target{Section: section, What: what, Want: "≥ " + formatCount(want) + " " + unit, Note: note}
	if ok {
		t.Got, t.Met = formatCount(got)+" "+unit, got >= want
	}
	return t
}

func atMost(section, what string, want time.Duration, got time.Duration, ok bool, note string) Target {
	t := Target{Section: section, What: what, Want: "≤ " + formatDur(want), Note: note}
	if ok {
		t.Got, t.Met = formatDur(got), got <= want
	}
	return t
}

func bytesAtMost(section, what string, want, got float64, ok bool, note string) Target {
	t := Target{Section: section, What: what, Want: "≤ " + formatCount(want) + " bytes/hit", Note: note}
	if ok {
		t.Got, t.Met = formatCount(got)+" bytes/hit", got <= want
	}
	return t
}

// shareAtLeast is a target on got as a share of base (a no-op handler
// measured the same way in the same run).
func shareAtLeast(section, what string, want, got, base float64, ok bool, note string) Target {
	t := Target{Section: section, What: what, Want: fmt.Sprintf("≥ %.0f%%", want*100), Note: note}
	if ok && base > 0 {
		// Rounded down to a tenth of a percent, and judged as shown.
		shown := math.Floor(got/base*1000+1e-9) / 10
		t.Got, t.Met = fmt.Sprintf("%.1f%%", shown), shown >= want*100-1e-9
		if t.Note == "" {
			t.Note = fmt.Sprintf("%s of %s req/s", formatCount(got), formatCount(base))
		}
	} else if ok && t.Note == "" {
		t.Note = "the no-op handler answered nothing"
	}
	return t
}

// cpuAtMost is a target on the server's CPU time per request got as a
// multiple of base's (the no-op handler's, measured the same way in the
// same run).
func cpuAtMost(section, what string, want float64, got, base time.Duration, ok bool, note string) Target {
	t := Target{Section: section, What: what, Want: fmt.Sprintf("≤ %.1f×", want), Note: note}
	switch {
	case ok && got > 0 && base > 0:
		shown := cpuTimes(got, base)
		t.Got, t.Met = fmt.Sprintf("%.1f×", shown), shown <= want+1e-9
		if t.Note == "" {
			t.Note = formatCPU(got) + " against " + formatCPU(base) + " a request"
		}
	case ok && t.Note == "":
		t.Note = "the server's CPU was not measured (the profiler was busy)"
	}
	return t
}

// cpuTimes is got as a multiple of base, rounded up to a tenth: as the
// report shows it and judges it.
func cpuTimes(got, base time.Duration) float64 {
	return math.Ceil(float64(got)/float64(base)*10-1e-9) / 10
}

// Targets lists the targets of the sections that ran.
func (r *Report) Targets() []Target {
	var ts []Target
	if p := r.Pipeline; p != nil {
		ts = append(ts,
			atLeast(RunPipeline, "engine apply on one core (log replay)", 2_000_000, p.ApplyPerSec, p.ApplyPerSec > 0, "hits/s", ""),
			atLeast(RunPipeline, "full pipeline on one core (Track, NoSync, one hit per call)", 200_000, p.TrackPerSec, p.TrackPerSec > 0, "hits/s", ""),
			atLeast(RunPipeline, "durable Track from 64 concurrent writers", 100_000, p.DurablePerSec, p.DurablePerSec > 0, "hits/s", ""),
		)
	}
	if h := r.HTTP; h != nil {
		mode := "durable"
		if h.Target != "in-process" {
			mode = "external"
		}
		d, okd := h.Point(mode, 64)
		n, okn := h.Point("nosync", 64)
		why := h.Unavailable
		if why == "" && !okd {
			why = "no measurement with 64 clients"
		}
		ts = append(ts,
			atLeast(RunHTTP, "POST /api/event, 64 clients, durable", 30_000, d.PerSec, okd, "hits/s", why),
			atMost(RunHTTP, "POST /api/event, 64 clients, durable, p99", 20*time.Millisecond, d.Latency.P99, okd, why),
		)
		nwhy := why
		if h.Target != "in-process" {
			nwhy = "external server: its durability is its own"
		}
		ts = append(ts, atLeast(RunHTTP, "POST /api/event, 64 clients, NoSync", 60_000, n.PerSec, okn, "hits/s", nwhy))
		// Issue #16 reads the HTTP figures against a handler that does
		// nothing, measured in the same run by the same clients: the
		// loopback and the clients cap every HTTP target on a small machine.
		base, okb := h.Point("baseline", 64)
		bwhy := why
		if bwhy == "" && !okb {
			bwhy = "no no-op baseline with 64 clients"
		}
		ts = append(ts,
			shareAtLeast(RunHTTP, "POST /api/event, 64 clients, durable, share of the no-op handler", 0.75, d.PerSec, base.PerSec, okd && okb, bwhy),
			shareAtLeast(RunHTTP, "POST /api/event, 64 clients, NoSync, share of the no-op handler", 0.85, n.PerSec, base.PerSec, okn && okb, cmp.Or(nwhy, bwhy)),
			// Issue #41: what a hit costs the server beside what the HTTP
			// exchange carrying it costs.
			cpuAtMost(RunHTTP, "server CPU per request, POST /api/event, 64 clients, durable, times the no-op handler's", 2, d.CPUPerReq, base.CPUPerReq, okd && okb, bwhy),
		)
	}
	if q := r.Query; q != nil {
		p, ok := q.Point("large", 365, "page")
		note := "median"
		if !ok {
			note = "needs the large site over 365 days (full run)"
		} else if s, ok := q.site("large-year"); ok {
			note = "median; " + s.Scale
		}
		ts = append(ts, atMost(RunQuery, "`page` over 365 days, 5,000 pages a day (large site)", 10*time.Millisecond, p.Latency.P50, ok, note))
		var worst QueryPoint
		found := false
		for _, p := range q.Points {
			if p.Size == "medium" && p.Days == 30 && (!found || p.Latency.P50 > worst.Latency.P50) {
				worst, found = p, true
			}
		}
		note = "slowest median of the statistics measured"
		if found {
			note += " (`" + worst.Name + "`)"
			if len(r.Config.QueryNames) < len(statNames()) {
				note += fmt.Sprintf("; %d of the 17 statistics measured", len(r.Config.QueryNames))
			}
		}
		ts = append(ts, atMost(RunQuery, "any statistic over 30 days (medium site)", 2*time.Millisecond, worst.Latency.P50, found, note))
		api, ok := apiPoint(q.API, 64)
		why := q.APIUnavailable
		if ok {
			why = fmt.Sprintf("%d clients, %d days", api.Clients, q.APIDays)
		}
		ts = append(ts,
			atLeast(RunQuery, "GET /api/v1/stats `page` over 30 days", 10_000, api.PerSec, ok, "req/s", why),
			atMost(RunQuery, "GET /api/v1/stats `page` over 30 days, p99", 5*time.Millisecond, api.Latency.P99, ok, why),
		)
		base, okb := r.HTTP.Point("baseline", 64)
		// The no-op handler is measured by the http run, minutes before;
		// the note says so.
		bwhy := ""
		switch {
		case !ok:
			bwhy = why
		case !okb:
			bwhy = "needs the no-op baseline of the http run (-runs http,query)"
		case base.PerSec > 0:
			bwhy = fmt.Sprintf("%s of %s req/s, the no-op handler as measured by the http run", formatCount(api.PerSec), formatCount(base.PerSec))
		}
		ts = append(ts, shareAtLeast(RunQuery, "GET /api/v1/stats `page` over 30 days, 64 clients, share of the no-op handler", 0.60, api.PerSec, base.PerSec, ok && okb, bwhy))
		why = q.PagesUnavailable
		okp := why == "" && q.PagesDays >= 365
		if why == "" && !okp {
			why = fmt.Sprintf("measured over %d days only", q.PagesDays)
		} else if okp {
			why = "median, one client, medium site"
		}
		ts = append(ts, atMost(RunQuery, "statistics page GET /stats/{domain} over 365 days", 50*time.Millisecond, q.Pages.P50, okp, why))
	}
	if m := r.Memory; m != nil {
		p, ok := m.Last(false)
		note := ""
		if ok {
			note = fmt.Sprintf("%d days of the medium site, no memory budget", p.Days)
		}
		ts = append(ts,
			bytesAtMost(RunMemory, "memory per hit", 8, p.MemPerHit(), ok, note),
			bytesAtMost(RunMemory, "disk per hit, everything in the data directory while open", 4, p.DiskOpenPerHit(), ok, note),
		)
		if q, ok := m.Longest("small"); ok {
			t := Target{Section: RunMemory, What: "disk of the small site, everything in the data directory while open", Want: "≤ " + formatBytes(16<<20),
				Got: formatBytes(float64(q.DiskOpen)), Met: q.DiskOpen <= 16<<20,
				Note: fmt.Sprintf("%d days of the small site (%s hits)", q.Days, formatCount(float64(q.Hits)))}
			ts = append(ts, t)
		}
	}
	if s := r.Snapshot; s != nil {
		ts = append(ts, atMost(RunSnapshot, "snapshot never blocks tracking (p99.9 of the Track calls overlapping a snapshot)", 10*time.Millisecond, s.During.P999, s.During.N > 0,
			"longest call overlapping a snapshot: "+formatDur(s.MaxPause)))
		ok := s.RestartOpen > 0
		note := s.RestartHistory
		if q := r.Config.QueryDays; ok && slices.Max(q) < 365 {
			note += "; less than a year"
		}
		ts = append(ts, atMost(RunSnapshot, "restart of a year of a 10M pageviews/month site (Open)", 3*time.Second, s.RestartOpen, ok, note))
	}
	if s := r.Server; s != nil {
		ok := s.Unavailable == ""
		why := s.Unavailable
		if ok && s.Days < 365 {
			why = fmt.Sprintf("%d days only (%s hits)", s.Days, formatCount(float64(s.Hits)))
		}
		ts = append(ts, atLeast(RunServer, fmt.Sprintf("import, %s-event NDJSON requests, one client, durable", formatCount(float64(s.Batch))), 250_000, s.ImportPerSec, ok, "hits/s", why))
		kill, okk := s.Restart(AfterKill)
		stop, oks := s.Restart(AfterStop)
		hits := why
		if ok && hits == "" {
			hits = formatCount(float64(s.Accepted)) + " hits in the log"
		}
		ts = append(ts,
			atMost(RunServer, "restart after kill -9, until /healthz", 2*time.Second, kill.Ready, ok && okk, hits),
			atMost(RunServer, "first query of each statistic over the year after kill -9 (the slowest)", 50*time.Millisecond, kill.Slowest, ok && okk, why),
			atMost(RunServer, "first query of each statistic over the year after a clean stop (the slowest)", 50*time.Millisecond, stop.Slowest, ok && oks, why),
		)
		t := Target{Section: RunServer, What: "idle RSS after start", Want: "≤ " + formatBytes(24<<20), Note: why}
		if ok {
			t.Got, t.Met = formatBytes(float64(s.Idle.RSS)), s.Idle.RSS <= 24<<20
			t.Note = fmt.Sprintf("%s anonymous, %s file-backed (the binary's pages)", formatBytes(float64(s.Idle.Anon)), formatBytes(float64(s.Idle.File)))
		}
		ts = append(ts, t)
	}
	return ts
}

// apiPoint returns the point with clients clients, or the one with the
// most clients.
func apiPoint(ps []HTTPPoint, clients int) (HTTPPoint, bool) {
	if len(ps) == 0 {
		return HTTPPoint{}, false
	}
	best := ps[0]
	for _, p := range ps {
		if p.Clients == clients {
			return p, true
		}
		if p.Clients > best.Clients {
			best = p
		}
	}
	return best, true
}

func (q *QueryResult) site(name string) (QuerySite, bool) {
	for _, s := range q.Sites {
		if s.Name == name {
			return s, true
		}
	}
	return QuerySite{}, false
}

// Capacity returns the capacity model with the report's measured costs
// where it has them, and says where each cost came from.
func (r *Report) Capacity() (Capacity, []string) {
	c := DefaultCapacity()
	var src []string
	if m := r.Memory; m != nil {
		if p, ok := m.Last(false); ok {
			c.MemBytesPerHit, c.DiskBytesPerHit = p.MemPerHit(), p.DiskPerHit()
			src = append(src, fmt.Sprintf("memory and disk per hit: measured without a budget, %d days of the medium site (run 4)", p.Days))
			for _, q := range m.Points {
				if q.Budget == 0 && (q.Size == m.Site && q.Days == p.Days || q.Size != m.Site) {
					s, _ := siteBySize(q.Size)
					c.Sizes = append(c.Sizes, SizeCost{PageviewsPerMonth: s.PageviewsPerMonth, MemBytesPerHit: q.MemPerHit(), DiskBytesPerHit: q.DiskPerHit()})
					if q.Size != m.Site {
						src = append(src, fmt.Sprintf("and %d days of the %s site: %s bytes/hit of memory and %s of disk, used for the deployments nearer its size (on a log scale; the costlier size on a tie); sites larger than medium use the medium site's costs", q.Days, q.Size, formatCount(q.MemPerHit()), formatCount(q.DiskPerHit())))
					}
				}
			}
		}
		if m.Fixed > 0 {
			c.FixedRAM = float64(m.Fixed)
			c.FixedDisk = float64(m.FixedDisk)
			src = append(src, "fixed memory and disk: the heap and data directory of an engine with a website and no hits (run 4); the disk per hit excludes it")
		}
	}
	if len(src) == 0 {
		src = append(src, "memory and disk per hit: the targets (8 and 4 bytes), not measured")
	}
	perCore := 0.0
	if h := r.HTTP; h != nil {
		mode := "durable"
		if h.Target != "in-process" {
			mode = "external"
		}
		if p, ok := h.Point(mode, 64); ok && p.PerSec > 0 {
			perCore = p.PerSec / float64(r.Machine.GOMAXPROCS)
			src = append(src, fmt.Sprintf("hits/s per core: POST /api/event, %s, 64 clients ÷ %d cores (the clients run on the same cores: conservative)", mode, r.Machine.GOMAXPROCS))
		}
	}
	if perCore == 0 && r.Pipeline != nil && r.Pipeline.TrackPerSec > 0 {
		perCore = r.Pipeline.TrackPerSec / 4
		src = append(src, "hits/s per core: the engine pipeline's rate ÷ 4 for HTTP (the HTTP run was not available)")
	}
	if perCore > 0 {
		c.HitsPerSecPerCore = perCore
	} else {
		src = append(src, "hits/s per core: assumed 100,000")
	}
	return c, src
}

// WriteMarkdown writes report.md and its SVG charts (throughput.svg,
// memory.svg, latency.svg, when their runs ran) to dir, which it creates,
// and the measurements as report.json (ReadReport reads them back).
func (r *Report) WriteMarkdown(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	files, err := r.files("")
	if err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// chartNames are the file names of every chart a report can have.
var chartNames = []string{"throughput.svg", "memory.svg", "latency.svg"}

// files returns what WriteMarkdown writes, by file name: report.md (its
// charts linked as chartPrefix + name), report.json and the charts of the
// runs that ran.
func (r *Report) files(chartPrefix string) (map[string][]byte, error) {
	files := make(map[string][]byte)
	for name, c := range r.charts() {
		files[name] = c.svg()
	}
	for _, p := range r.Profiles {
		files[p.Name+".pprof"] = p.Data
	}
	files["report.md"] = []byte(r.Markdown(chartPrefix))
	j, err := json.MarshalIndent(r, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	files["report.json"] = append(j, '\n')
	return files, nil
}

// charts returns the report's charts by file name.
func (r *Report) charts() map[string]*chart {
	out := make(map[string]*chart)
	if h := r.HTTP; h != nil && len(h.Points) > 0 || r.Query != nil && len(r.Query.API) > 0 {
		var clients []int
		var pts []HTTPPoint
		if h != nil {
			pts = append(pts, h.Points...)
		}
		if r.Query != nil {
			pts = append(pts, r.Query.API...)
		}
		for _, p := range pts {
			if !slices.Contains(clients, p.Clients) {
				clients = append(clients, p.Clients)
			}
		}
		slices.Sort(clients)
		c := &chart{title: "Throughput vs concurrency", xLabel: "concurrent keep-alive clients", yLabel: "requests per second", yFormat: formatCount}
		for _, n := range clients {
			c.xs = append(c.xs, strconv.Itoa(n))
		}
		add := func(name string, ps []HTTPPoint, mode string) {
			s := series{name: name}
			for _, n := range clients {
				y := math.NaN()
				for _, p := range ps {
					if p.Clients == n && p.Mode == mode {
						y = p.PerSec
					}
				}
				s.ys = append(s.ys, y)
			}
			c.series = append(c.series, s)
		}
		if h != nil {
			for _, m := range []string{"baseline", "durable", "interval", "nosync", "external"} {
				if slices.ContainsFunc(h.Points, func(p HTTPPoint) bool { return p.Mode == m }) {
					add("POST /api/event "+m, h.Points, m)
				}
			}
		}
		if r.Query != nil && len(r.Query.API) > 0 {
			add("GET /api/v1/stats", r.Query.API, "query")
		}
		out["throughput.svg"] = c
	}
	if m := r.Memory; m != nil && len(m.Points) > 0 {
		c := &chart{title: "Bytes per hit vs history (medium site)", xLabel: "days of history", yLabel: "bytes per hit", yFormat: formatCount}
		var days []int
		for _, p := range m.Points {
			if p.Size == m.Site && !slices.Contains(days, p.Days) {
				days = append(days, p.Days)
			}
		}
		slices.Sort(days)
		for _, d := range days {
			c.xs = append(c.xs, strconv.Itoa(d))
		}
		for _, v := range []struct {
			name     string
			budgeted bool
			f        func(MemoryPoint) float64
		}{ // the main (medium) series only
			{"memory, no budget", false, MemoryPoint.MemPerHit},
			{"memory, budget " + formatBytes(float64(m.Budget)), true, MemoryPoint.MemPerHit},
			{"disk, no budget", false, MemoryPoint.DiskPerHit},
			{"disk, budget", true, MemoryPoint.DiskPerHit},
		} {
			s := series{name: v.name}
			for _, d := range days {
				y := math.NaN()
				for _, p := range m.Points {
					if p.Size == m.Site && p.Days == d && (p.Budget > 0) == v.budgeted {
						y = v.f(p)
					}
				}
				s.ys = append(s.ys, y)
			}
			c.series = append(c.series, s)
		}
		out["memory.svg"] = c
	}
	if q := r.Query; q != nil && len(q.Points) > 0 {
		c := &chart{title: "Query latency vs range (median)", xLabel: "days in the range", yLabel: "milliseconds", yFormat: func(v float64) string { return formatCount(v) }}
		days := r.Config.QueryDays
		for _, d := range days {
			c.xs = append(c.xs, strconv.Itoa(d))
		}
		for _, size := range r.Config.QuerySites {
			page := series{name: size + ": page"}
			worst := series{name: size + ": slowest"}
			for _, d := range days {
				y, w := math.NaN(), math.NaN()
				for _, p := range q.Points {
					if p.Size == size && p.Days == d {
						ms := float64(p.Latency.P50) / 1e6
						if p.Name == "page" {
							y = ms
						}
						if math.IsNaN(w) || ms > w {
							w = ms
						}
					}
				}
				page.ys = append(page.ys, y)
				worst.ys = append(worst.ys, w)
			}
			c.series = append(c.series, page, worst)
		}
		out["latency.svg"] = c
	}
	return out
}

// table renders a Markdown table.
func table(b *strings.Builder, head []string, rows [][]string) {
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		for i := range r {
			r[i] = strings.ReplaceAll(r[i], "|", `\|`)
		}
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	b.WriteString("\n")
}

func (r *Report) targetTable(b *strings.Builder, section string) {
	var rows [][]string
	for _, t := range r.Targets() {
		if section == "" || t.Section == section {
			got := t.Got
			if got == "" {
				got = "—"
			}
			row := []string{t.What, t.Want, got, t.Status(), t.Note}
			if section == "" {
				row = append([]string{t.Section}, row...)
			}
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return
	}
	head := []string{"target", "wanted", "measured", "", "notes"}
	if section == "" {
		head = append([]string{"run"}, head...)
	} else {
		b.WriteString("Targets:\n\n")
	}
	table(b, head, rows)
}

// formatCount formats a number with thousands separators, or with three
// significant digits below 100.
func formatCount(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	if math.Abs(v) < 100 {
		s := strconv.FormatFloat(v, 'f', 2, 64)
		if math.Abs(v) >= 10 {
			s = strconv.FormatFloat(v, 'f', 1, 64)
		}
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	n := int64(math.Round(v))
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// formatDur formats a duration in ms (or s) with about three significant
// digits.
func formatDur(d time.Duration) string {
	ms := float64(d) / 1e6
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	case ms >= 1:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 3, 64) + " ms"
}

// formatCPU formats a CPU time per request in µs ("—": not measured).
func formatCPU(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + " µs"
}

// formatBytes formats a number of bytes in B, KiB, MiB, GiB or TiB.
func formatBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " B"
	}
	return formatCount(v) + " " + units[i]
}

// measured is the report's first sentence: when, at which commit, how.
func (r *Report) measured() string {
	c := r.Config
	kind := "full"
	if c.Quick {
		kind = "quick"
	}
	at := ""
	if r.Machine.Commit != "" {
		at = " at commit " + r.Machine.Commit
	}
	return fmt.Sprintf("Measured %s%s by `webstats-bench` (%s run, seed %d, %d repetition(s) of each throughput measurement, medians reported) in %s.",
		r.Started.UTC().Format("2006-01-02 15:04 MST"), at, kind, c.Seed, c.Repeats, r.Duration.Round(time.Second))
}

// The block of a document (the README) that ReplaceSummary rewrites lies
// between these two lines.
const (
	SummaryStart = "<!-- webstats-bench summary: written by `webstats-bench -publish`, do not edit -->"
	SummaryEnd   = "<!-- /webstats-bench summary -->"
)

// Summary returns the report's first sentence, its machine and its table
// of targets, linking the full report at link: the README's performance
// table.
func (r *Report) Summary(link string) string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "%s %d CPUs, %s RAM, %s. The full report: [%s](%s).\n\n",
		r.measured(), m.NumCPU, formatBytes(float64(m.MemTotal)), m.GoVersion, link, link)
	r.targetTable(&b, "")
	return b.String()
}

// ReplaceSummary returns doc with the block between SummaryStart and
// SummaryEnd replaced by summary. doc must hold each marker once, in that
// order.
func ReplaceSummary(doc, summary string) (string, error) {
	i, j := strings.Index(doc, SummaryStart), strings.Index(doc, SummaryEnd)
	if i < 0 || j < i || strings.Count(doc, SummaryStart) != 1 || strings.Count(doc, SummaryEnd) != 1 {
		return "", fmt.Errorf("bench: the document needs one summary block, the lines %q and %q in that order", SummaryStart, SummaryEnd)
	}
	return doc[:i+len(SummaryStart)] + "\n\n" + summary + doc[j:], nil
}

// ReadReport reads the report.json that WriteMarkdown wrote.
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return &r, nil
}

// Publish makes r the project's published report, in the repository whose
// root is root: bench/RESULTS.md, its charts and report.json in
// bench/results (charts of an earlier report removed), and the summary
// block of README.md (see ReplaceSummary) rewritten from it. Only a full
// run of every section is published. Each file is replaced whole (written
// beside it, then renamed), README.md last: a failure leaves it as it
// was.
func (r *Report) Publish(root string) error {
	if r.Config.Quick || !slices.Equal(r.Config.Runs, AllRuns()) {
		return fmt.Errorf("bench: only a full run of every section is published; this one is quick or has only %v", r.Config.Runs)
	}
	if s := r.Server; s == nil || s.Unavailable != "" {
		return errors.New("bench: only a run with the server section is published; it was not available")
	}
	readme := filepath.Join(root, "README.md")
	doc, err := os.ReadFile(readme)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	newDoc, err := ReplaceSummary(string(doc), r.Summary("bench/RESULTS.md"))
	if err != nil {
		return fmt.Errorf("%w in %s", err, readme)
	}
	files, err := r.files("results/")
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "bench", "results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.pprof"))
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for _, name := range chartNames {
		old = append(old, filepath.Join(dir, name))
	}
	for _, path := range old {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("bench: %w", err)
		}
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if name == "report.md" {
			path = filepath.Join(root, "bench", "RESULTS.md")
		}
		if err := replaceFile(path, data); err != nil {
			return err
		}
	}
	return replaceFile(readme, []byte(newDoc))
}

// replaceFile replaces the file at path by one holding data, written beside
// it and renamed over it.
func replaceFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
