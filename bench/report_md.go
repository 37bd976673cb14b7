package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The report's Markdown: one section per run.

// Markdown returns the report as Markdown; its charts are linked as
// chartPrefix + "throughput.svg" and so on.
func (r *Report) Markdown(chartPrefix string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# webstats capacity report\n\n")
	b.WriteString(r.measured() + "\n\n")
	m := r.Machine
	cpu := m.CPUModel
	if cpu == "" {
		cpu = "CPU model unknown"
	}
	mem := "memory unknown"
	if m.MemTotal > 0 {
		mem = formatBytes(float64(m.MemTotal)) + " RAM"
	}
	fmt.Fprintf(&b, "**Machine:** %s; %d CPUs (NumCPU), GOMAXPROCS %d; %s; %s/%s; %s.\n\n", cpu, m.NumCPU, m.GOMAXPROCS, mem, m.OS, m.Arch, m.GoVersion)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "> %s\n\n", n)
	}
	b.WriteString("How targets are read (SPEC §9): a target that names no site size means the medium site; a latency target that names no percentile is compared with the median, a p99 target with the p99, and \"never more than\" with the p99.9 over the run (the machines are shared and noisy). Throughputs are medians over the repetitions; latency percentiles are over every sample of a measurement (for repeated measurements, the median of each percentile).\n\n")
	b.WriteString("## Summary\n\n")
	r.targetTable(&b, "")

	r.pipelineMD(&b)
	r.httpMD(&b, chartPrefix)
	r.queryMD(&b, chartPrefix)
	r.memoryMD(&b, chartPrefix)
	r.snapshotMD(&b)
	r.serverMD(&b)
	r.peerMD(&b)
	r.profilesMD(&b, chartPrefix)
	r.capacityMD(&b)
	return b.String()
}

func notRun(b *strings.Builder, run string) {
	fmt.Fprintf(b, "Not run (select it with `-runs %s`).\n\n", run)
}

func (r *Report) pipelineMD(b *strings.Builder) {
	b.WriteString("## 1. Engine pipeline\n\n")
	p := r.Pipeline
	if p == nil {
		notRun(b, RunPipeline)
		return
	}
	fmt.Fprintf(b, "A realistic stream of %s hits of the medium site (%s counted; bots are dropped) tracked by one goroutine, standing for one core, into an engine on disk with `NoSync` and no background snapshots. The apply rate is the log replay of `engine.Open` on a crash copy of a store holding the whole stream in its log (%s hits replayed; decoding and applying records without normalisation or enrichment), less the %s `Open` takes without the log. The durable rate is %d goroutines calling `Track` with one hit each, group-committed.\n\n",
		formatCount(float64(p.Hits)), formatCount(float64(p.Accepted)), formatCount(float64(p.Replayed)), formatDur(p.OpenFixed), p.DurableWriters)
	runs := func(xs []float64) string {
		var s []string
		for _, x := range xs {
			s = append(s, formatCount(x))
		}
		return strings.Join(s, ", ")
	}
	table(b, []string{"measurement", "median hits/s", "runs"}, [][]string{
		{"Track, one hit per call (full pipeline)", formatCount(p.TrackPerSec), runs(p.TrackRuns)},
		{fmt.Sprintf("Track, %d hits per call", p.BatchSize), formatCount(p.BatchPerSec), runs(p.BatchRuns)},
		{"apply (log replay in Open)", formatCount(p.ApplyPerSec), runs(p.ApplyRuns)},
		{fmt.Sprintf("durable Track, %d writers (p50 %s, p99 %s)", p.DurableWriters, formatDur(p.DurableLatency.P50), formatDur(p.DurableLatency.P99)), formatCount(p.DurablePerSec), runs(p.DurableRuns)},
	})
	r.targetTable(b, RunPipeline)
}

func (r *Report) httpMD(b *strings.Builder, prefix string) {
	b.WriteString("## 2. Tracking over HTTP\n\n")
	h := r.HTTP
	if h == nil {
		notRun(b, RunHTTP)
		return
	}
	fmt.Fprintf(b, "`POST /api/event` in the phpAnalytics form (`page`, `referrer`, `screen_resolution`, and `event` for custom events) with the visitor's `User-Agent`, `Accept-Language` and (trusted) `X-Forwarded-For`, from keep-alive clients, against %s, for %s per measurement. About 7%% of the requests are bots: answered 202 and dropped, and counted in the rate like the others.\n\n",
		map[bool]string{true: "an in-process server (`httpd.New`, rate limit off) on a loopback port; the clients share the machine's cores with it", false: "`" + h.Target + "`"}[h.Target == "in-process"], r.Config.HTTPDuration)
	if h.Unavailable != "" {
		fmt.Fprintf(b, "**Not available:** %s.\n\n", h.Unavailable)
	}
	if len(h.Points) > 0 {
		var rows [][]string
		for _, p := range h.Points {
			rows = append(rows, []string{p.Mode, strconv.Itoa(p.Clients), formatCount(p.PerSec), formatCPU(p.CPUPerReq), formatDur(p.Latency.P50), formatDur(p.Latency.P99), formatDur(p.Latency.P999), strconv.Itoa(p.Errors)})
		}
		table(b, []string{"mode", "clients", "median hits/s", "server CPU/request", "p50", "p99", "p99.9", "errors"}, rows)
		b.WriteString(cpuColumnNote)
		if bl, ok := h.Point("baseline", 64); ok && bl.PerSec > 0 {
			b.WriteString("`baseline` is a handler that only reads the body and answers 202, measured the same way: the ceiling of this machine's loopback HTTP stack with these clients.")
			for _, mode := range []string{"durable", "interval", "nosync"} {
				if p, ok := h.Point(mode, 64); ok {
					fmt.Fprintf(b, " With 64 clients, %s tracking runs at %.0f%% of it", mode, 100*p.PerSec/bl.PerSec)
					if p.CPUPerReq > 0 && bl.CPUPerReq > 0 {
						fmt.Fprintf(b, " and costs the server %.1f times its CPU a request", cpuTimes(p.CPUPerReq, bl.CPUPerReq))
					}
					b.WriteString(".")
				}
			}
			b.WriteString("\n\n")
		}
		fmt.Fprintf(b, "![throughput vs concurrency](%sthroughput.svg)\n\n", prefix)
	}
	r.targetTable(b, RunHTTP)
}

// cpuColumnNote says what the server CPU/request column measures.
const cpuColumnNote = "*Server CPU/request*: the CPU time the process spent outside the load generator's goroutines (the server's goroutines, Pebble's, the garbage collector's background work and the scheduler), sampled by the CPU profiler at 100 Hz over each repetition, divided by the requests answered; the median of the repetitions. The clients' own CPU (and the collector's work they were made to assist with) is left out. \"—\": not measured (an external server, or the profiler was busy).\n\n"

func (r *Report) queryMD(b *strings.Builder, prefix string) {
	b.WriteString("## 3. Query latency\n\n")
	q := r.Query
	if q == nil {
		notRun(b, RunQuery)
		return
	}
	fmt.Fprintf(b, "`engine.Stat` (first page of 10 rows, by count) on history loaded day by day through `Track` (batches of 1,000, `NoSync`) with the engine's clock following the days, then snapshotted the next morning so every day is closed. Loading took %s for %s hits. Each query runs once to warm up, then at least 5 times and for at least %s.\n\n",
		q.LoadTime.Round(time.Millisecond), formatCount(float64(q.LoadedHits)), r.Config.QueryTime)
	var rows [][]string
	for _, s := range q.Sites {
		scale := s.Scale
		if scale == "" {
			scale = "full traffic"
		}
		rows = append(rows, []string{s.Size, s.Name, formatCount(float64(s.PageviewsPerMonth)), formatCount(float64(s.PagesPerDay)), strconv.Itoa(s.Days), formatCount(float64(s.Hits)), scale})
	}
	table(b, []string{"size", "website", "pageviews/month", "pages/day", "days", "hits counted", "traffic"}, rows)
	if _, ok := q.site("large-year"); ok {
		fmt.Fprintf(b, "The large site is loaded at full traffic for its last %d days only (a year of it is about 130M hits); its ranges over %d days are answered by `large-year`, which keeps the large site's %d pages a day at a fraction of its traffic.\n\n", largeFullDays, largeFullDays, Large.PagesPerDay)
	}
	for _, size := range r.Config.QuerySites {
		fmt.Fprintf(b, "**%s site** — p50 / p95 / p99:\n\n", size)
		head := []string{"statistic"}
		for _, d := range r.Config.QueryDays {
			head = append(head, fmt.Sprintf("%d days", d))
		}
		rows = nil
		for _, name := range r.Config.QueryNames {
			row := []string{name}
			for _, d := range r.Config.QueryDays {
				p, ok := q.Point(size, d, name)
				if !ok {
					row = append(row, "—")
					continue
				}
				l := p.Latency
				row = append(row, formatDur(l.P50)+" / "+formatDur(l.P95)+" / "+formatDur(l.P99))
			}
			rows = append(rows, row)
		}
		table(b, head, rows)
	}
	fmt.Fprintf(b, "![latency vs range](%slatency.svg)\n\n", prefix)
	fmt.Fprintf(b, "**Over HTTP.** `GET /api/v1/stats/{id}?name=page&from=…&to=…` (%d days, medium site) with a Bearer key, from keep-alive clients against an in-process server over the same engine:\n\n", q.APIDays)
	if q.APIUnavailable != "" {
		fmt.Fprintf(b, "**Not available:** %s.\n\n", q.APIUnavailable)
	} else {
		rows = nil
		for _, p := range q.API {
			rows = append(rows, []string{strconv.Itoa(p.Clients), formatCount(p.PerSec), formatCPU(p.CPUPerReq), formatDur(p.Latency.P50), formatDur(p.Latency.P99), formatDur(p.Latency.P999), strconv.Itoa(p.Errors)})
		}
		table(b, []string{"clients", "median req/s", "server CPU/request", "p50", "p99", "p99.9", "errors"}, rows)
		b.WriteString(cpuColumnNote)
		if bl, ok := r.HTTP.Point("baseline", 64); ok && bl.CPUPerReq > 0 {
			fmt.Fprintf(b, "The no-op handler of section 2 took %s of the server's CPU a request with 64 clients.\n\n", formatCPU(bl.CPUPerReq))
		}
	}
	fmt.Fprintf(b, "The statistics page `GET /stats/{domain}?from=…&to=…` over %d days (medium site, public), one client: ", q.PagesDays)
	if q.PagesUnavailable != "" {
		fmt.Fprintf(b, "**not available:** %s.\n\n", q.PagesUnavailable)
	} else {
		fmt.Fprintf(b, "p50 %s, p99 %s over %d requests.\n\n", formatDur(q.Pages.P50), formatDur(q.Pages.P99), q.Pages.N)
	}
	r.targetTable(b, RunQuery)
}

func (r *Report) memoryMD(b *strings.Builder, prefix string) {
	b.WriteString("## 4. Memory and disk\n\n")
	m := r.Memory
	if m == nil {
		notRun(b, RunMemory)
		return
	}
	fmt.Fprintf(b, "The medium site's history grown day by day (the engine's clock following the days), measured at each length after a snapshot: the live Go heap after `runtime.GC` (`HeapAlloc`; `HeapInuse` also counts the free space of partly used spans, which varies by megabytes from run to run) less the heap before the engine was opened and the engine's fixed cost (%s: user-agent and geo tables and the like), and the data directory's size after `Close`, less that of a store with the website and no hits (%s: Pebble's fixed files). Once without a memory budget and once with `MemoryBudget` = %s (closed days beyond it are evicted and read back on demand); then the small site without a budget at the longest history, for the capacity model. A day bucket keeps counts per distinct value and bitmaps of visitor ids, so the cost per hit falls as the history and the site grow: the first days also carry the open salt period's visitor state. Pebble's block cache and memtables live outside the Go heap (cgo) and are not counted. One pass each: these numbers do not vary between repetitions.\n\n",
		formatBytes(float64(m.Fixed)), formatBytes(float64(m.FixedDisk)), formatBytes(float64(m.Budget)))
	var rows [][]string
	for _, p := range m.Points {
		budget := "none"
		if p.Budget > 0 {
			budget = formatBytes(float64(p.Budget))
		}
		rows = append(rows, []string{p.Size, budget, strconv.Itoa(p.Days), formatCount(float64(p.Hits)), formatBytes(float64(p.Heap)), formatCount(p.MemPerHit()),
			formatBytes(float64(p.Resident)), formatBytes(float64(p.Disk)), formatCount(p.DiskPerHit()),
			formatBytes(float64(p.DiskOpen)), formatCount(p.DiskOpenPerHit())})
	}
	table(b, []string{"site", "budget", "days", "hits", "heap", "heap bytes/hit", "resident days (engine)", "disk after Close", "disk bytes/hit (less the fixed disk)", "disk while open, everything", "its bytes/hit"}, rows)
	b.WriteString("\"Disk while open\" counts the blocks the file system allocated to every file of the data directory with the engine open after the snapshot, as `du` does: it includes Pebble's write-ahead log files, allocated 1 MiB ahead of their writes, and the few old ones Pebble keeps for reuse, which a restart removes. \"Disk after Close\" is the files' sizes after `Close`.\n\n")
	r.diskPartsMD(b)
	fmt.Fprintf(b, "![bytes per hit vs history](%smemory.svg)\n\n", prefix)
	r.targetTable(b, RunMemory)
}

func (r *Report) snapshotMD(b *strings.Builder) {
	b.WriteString("## 5. Snapshots and restart\n\n")
	s := r.Snapshot
	if s == nil {
		notRun(b, RunSnapshot)
		return
	}
	fmt.Fprintf(b, "After %d days of the medium site, %d goroutines track the next day's hits (one per call, `NoSync`, so that a slow call is the snapshot's doing and not an fsync's) for %s while another takes a snapshot every %s. A Track call overlaps a snapshot when their intervals intersect.\n\n",
		s.HistoryDays, s.Writers, r.Config.SnapshotDuration, s.Every)
	table(b, []string{"measurement", "p50", "p99", "p99.9", "max", "count"}, [][]string{
		{"engine.Snapshot duration", formatDur(s.Duration.P50), formatDur(s.Duration.P99), formatDur(s.Duration.P999), formatDur(s.Duration.Max), strconv.Itoa(s.Snapshots)},
		{"Track calls overlapping a snapshot", formatDur(s.During.P50), formatDur(s.During.P99), formatDur(s.During.P999), formatDur(s.During.Max), strconv.Itoa(s.During.N)},
		{"other Track calls", formatDur(s.Outside.P50), formatDur(s.Outside.P99), formatDur(s.Outside.P999), formatDur(s.Outside.Max), strconv.Itoa(s.Outside.N)},
	})
	fmt.Fprintf(b, "`Metrics().LastSnapshot` at the end: %s. Tracking rate while snapshotting: %s hits/s.\n\n", formatDur(s.LastSnapshot), formatCount(s.TrackPerSec))
	if s.RestartOpen > 0 {
		fmt.Fprintf(b, "**Restart** of the query run's history — %s; %s hits in all: `Close` (writing the final snapshot) %s, then `Open` %s (medians). `Close` snapshots, so this `Open` replays no log; after a crash, `Open` also replays the log written since the last snapshot (at most `SnapshotEvery` of traffic) at the apply rate of run 1.\n\n",
			s.RestartHistory, formatCount(float64(s.RestartHits)), formatDur(s.RestartClose), formatDur(s.RestartOpen))
	}
	r.targetTable(b, RunSnapshot)
}

func (r *Report) serverMD(b *strings.Builder) {
	b.WriteString("## 6. The webstatsd binary: import, restart, idle memory\n\n")
	s := r.Server
	if s == nil {
		notRun(b, RunServer)
		return
	}
	if s.Unavailable != "" {
		fmt.Fprintf(b, "Not available: %s.\n\n", s.Unavailable)
		r.targetTable(b, RunServer)
		return
	}
	fmt.Fprintf(b, "The webstatsd binary (built from the repository by webstats-bench, unless `-webstatsd` names one), started as an operator starts it, on a loopback port (`-snapshot-every 0`, so that its log holds every hit, and `-rate-limit 0`). Each repetition creates an account (`webstatsd user add`) and a website, imports %d days of a site of %s pageviews a month (%s hits, of which it accepts %s: the others are bots) through `POST /api/v1/websites/{id}/events` in NDJSON requests of %s events from one client (the import rate counts the time of the requests alone), then kills the server with SIGKILL (its restart replays the whole log) or stops it with SIGTERM (its final snapshot holds everything), and starts it again: the time from starting the process to its first 200 of `/healthz`, then the first query of each of the 17 statistics over the %d days through `GET /api/v1/stats`, one after the other. The restarted server must then answer the totals it answered before it was killed or stopped (visitors, visits, pageviews, events), or the run fails. `webstats-bench -runs server` makes this section alone.\n\n",
		s.Days, formatCount(float64(ServerSite.PageviewsPerMonth)), formatCount(float64(s.Hits)), formatCount(float64(s.Accepted)), formatCount(float64(s.Batch)), s.Days)
	var imports []string
	for _, x := range s.ImportRuns {
		imports = append(imports, formatCount(x))
	}
	fmt.Fprintf(b, "Import: %s hits/s (median; runs %s).\n\n", formatCount(s.ImportPerSec), strings.Join(imports, ", "))
	var rows [][]string
	for _, rs := range s.Restarts {
		var runs []string
		for _, d := range rs.ReadyRuns {
			runs = append(runs, formatDur(d))
		}
		rows = append(rows, []string{rs.After, formatDur(rs.Ready), strings.Join(runs, ", "), formatDur(rs.Slowest), strings.Join(rs.SlowestNames, ", "), formatDur(rs.All)})
	}
	table(b, []string{"restart after", "until /healthz (median)", "runs", "the slowest first query (median)", "which, in each run", "the 17 first queries in all (median)"}, rows)
	var idle []string
	for _, x := range s.IdleRuns {
		idle = append(idle, formatBytes(float64(x)))
	}
	fmt.Fprintf(b, "Idle memory: the binary started on an empty data directory, read from `/proc/PID/status` %s after its first `/healthz`: %s resident (VmRSS; runs %s), of which %s anonymous (heap, stacks, Pebble) and %s file-backed (pages of the binary itself, clean and shared with the page cache, which the kernel may drop under memory pressure).\n\n",
		s.IdleWait, formatBytes(float64(s.Idle.RSS)), strings.Join(idle, ", "), formatBytes(float64(s.Idle.Anon)), formatBytes(float64(s.Idle.File)))
	r.targetTable(b, RunServer)
}

func (r *Report) peerMD(b *strings.Builder) {
	b.WriteString("## 7. Beside another server (-peer)\n\n")
	p := r.Peer
	switch {
	case p == nil:
		notRun(b, RunPeer)
		return
	case p.Unavailable != "":
		fmt.Fprintf(b, "Not available: %s.\n\n", p.Unavailable)
		return
	}
	name := p.Name
	if name == "" {
		name = "a server the operator did not name (-peer-name)"
	}
	form, apiFlag := statsForm{api: p.API}, ""
	if form.api == "" { // a report from before -peer-api
		form.api = "v2"
	}
	if form.api != "v2" {
		apiFlag = " -peer-api " + form.api
	}
	fmt.Fprintf(b, "The peer: %s, at %s, started by the operator (on this machine, for a fair comparison) with the site `%s` (in UTC). The webstatsd binary runs beside it with `-trust-proxy`, as a server behind a proxy does. Both get the same loads from the same clients, in turns (each repetition measures both, the one that goes first alternating): `POST /api/event` in Plausible's Events API form (`{\"n\",\"u\",\"d\",\"r\",\"w\"}`, `text/plain`, the visitor's `User-Agent` and `X-Forwarded-For`) generated from the medium site's traffic, for %s per measurement; and, with an API key of the peer, Plausible's Stats API %s (`%s`: visitors and pageviews by `event:page` over the 30 days to today, top 10) after the same %s tracking requests were sent to both. `webstats-bench -runs peer -peer URL -peer-key KEY -peer-name NAME%s` makes this section alone.\n\n",
		name, p.Peer, p.Domain, r.Config.HTTPDuration, form.api, form.label(), formatCount(float64(p.QueryHits)), apiFlag)
	var rows [][]string
	add := func(what string, points []HTTPPoint) {
		byClients := map[int][2]HTTPPoint{}
		var order []int
		for _, pt := range points {
			pair, seen := byClients[pt.Clients]
			if !seen {
				order = append(order, pt.Clients)
			}
			if pt.Mode == SidePeer {
				pair[1] = pt
			} else {
				pair[0] = pt
			}
			byClients[pt.Clients] = pair
		}
		p99 := func(pt HTTPPoint) string {
			if pt.Latency.N == 0 {
				return "—" // nothing answered
			}
			return formatDur(pt.Latency.P99)
		}
		for _, n := range order {
			w, o := byClients[n][0], byClients[n][1]
			ratio := "—"
			switch q := o.PerSec / w.PerSec; {
			case w.PerSec <= 0 || o.PerSec <= 0:
			case q >= 100:
				ratio = fmt.Sprintf("%.0f", q)
			default:
				ratio = fmt.Sprintf("%.3g", q)
			}
			clients := fmt.Sprintf("%d clients", n)
			if n == 1 {
				clients = "1 client"
			}
			rows = append(rows, []string{what + ", " + clients,
				formatCount(w.PerSec), p99(w), strconv.Itoa(w.Errors),
				formatCount(o.PerSec), p99(o), strconv.Itoa(o.Errors), ratio})
		}
	}
	add("POST /api/event", p.Tracking)
	add(form.label(), p.Queries)
	table(b, []string{"load", "webstats req/s", "p99", "errors", "peer req/s", "p99", "errors", "peer / webstats"}, rows)
	if p.QueryUnavailable != "" {
		fmt.Fprintf(b, "The query load was not made: %s.\n\n", p.QueryUnavailable)
		return
	}
	fmt.Fprintf(b, "Before the query load, each server answered the %s tracking requests with 202 and then counted %s pageviews today (webstats) and %s (the peer): they differ where the two filter bots differently, or where the peer's site held data before. ",
		formatCount(float64(p.QueryHits)), formatCount(p.QueryPageviews[0]), formatCount(p.QueryPageviews[1]))
	if p.QueryRows[0] > 0 {
		fmt.Fprintf(b, "Their first answers to the measured query: %d rows with %s pageviews (webstats), %d rows with %s (the peer)",
			p.QueryRows[0], formatCount(p.QueryRowPageviews[0]), p.QueryRows[1], formatCount(p.QueryRowPageviews[1]))
		if p.QueryRows[0] != p.QueryRows[1] {
			b.WriteString(": answers of another shape, so the two sides did not do the same work, and their figures do not compare")
		}
		b.WriteString(". ")
	}
	if p.QueryNote != "" {
		fmt.Fprintf(b, "The query load at the most clients was not made: %s. ", p.QueryNote)
	}
	b.WriteString("A p99 of — is a load with no answer in time (the clients give up after 30 s).\n\n")
}

func (r *Report) capacityMD(b *strings.Builder) {
	b.WriteString("## Capacity planning\n\n")
	c, src := r.Capacity()
	b.WriteString("```\n")
	b.WriteString("hits kept  = websites × pageviews/month × hits per pageview × retention days / 30\n")
	b.WriteString("RAM        = (fixed memory + hits kept × memory bytes/hit) × headroom\n")
	b.WriteString("disk       = (fixed disk + hits kept × disk bytes/hit) × headroom\n")
	b.WriteString("peak rate  = websites × pageviews/month × requests per pageview / (30 × 86,400 s) × peak factor\n")
	b.WriteString("cores      = ⌈peak rate × headroom / hits per second per core⌉, at least 1\n")
	b.WriteString("```\n\n")
	table(b, []string{"input", "value", "source"}, [][]string{
		{"memory bytes/hit (medium)", formatCount(c.MemBytesPerHit), "see below"},
		{"disk bytes/hit (medium)", formatCount(c.DiskBytesPerHit), "see below"},
		{"fixed memory", formatBytes(c.FixedRAM), "see below"},
		{"fixed disk", formatBytes(c.FixedDisk), "see below"},
		{"hits per second per core", formatCount(c.HitsPerSecPerCore), "see below"},
		{"peak factor", fmt.Sprintf("%.2f", c.PeakFactor), "busiest hour ÷ average hour of the generator's diurnal curve"},
		{"hits kept per pageview", fmt.Sprintf("%.2f", c.HitsPerPageview), "custom events on top of pageviews; bots dropped"},
		{"requests per pageview", fmt.Sprintf("%.2f", c.RequestsPerPageview), "with events and bot requests (7% of all)"},
		{"retention", fmt.Sprintf("%d days", c.RetentionDays), "assumed"},
		{"headroom", fmt.Sprintf("%.0f×", c.Headroom), "assumed: growth, bursts, compactions, page cache"},
	})
	for _, s := range src {
		fmt.Fprintf(b, "- %s\n", s)
	}
	if m := r.Memory; m != nil {
		if p, ok := m.Last(false); ok && p.Days < c.RetentionDays {
			fmt.Fprintf(b, "- **The costs per hit come from %d days of history, far shorter than the retention:** they carry the open salt period's visitor state, which a long history amortises, and overstate the needs (a full run measures 365 days).\n", p.Days)
		}
	}
	b.WriteString("\n")
	var rows [][]string
	for _, row := range CapacityRows {
		p := c.Plan(row[0], row[1])
		mem, disk := c.cost(row[1])
		rows = append(rows, []string{
			fmt.Sprintf("%s × %s", formatCount(float64(row[0])), formatCount(float64(row[1]))),
			formatCount(p.HitsKept), fmt.Sprintf("%.1f", p.PeakPerSec), formatCount(mem) + " / " + formatCount(disk),
			fmt.Sprintf("%.2f GiB", p.RAMGiB), fmt.Sprintf("%.2f GiB", p.DiskGiB), strconv.Itoa(p.Cores),
		})
	}
	table(b, []string{"websites × pageviews/month", "hits kept", "peak hits/s", "memory/disk bytes per hit", "RAM", "disk", "cores"}, rows)
	b.WriteString("A small site's costs per hit are its own fixed costs spread over few hits: its open salt period's visitor state, its interned strings, and on disk Pebble's per-file overheads of a store holding one small site; many small sites in one store share the latter, so the disk of the small rows is an upper bound. Without a memory budget every day of the retention stays in memory; with `MemoryBudget`, RAM is about the budget plus the fixed memory plus the open days, and older queries read from disk (see run 4). Tracking is rarely the bottleneck: statistics pages and API queries over long ranges cost more CPU than the hits (run 3).\n")
}
