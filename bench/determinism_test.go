package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// Issue #17 at the HTTP level: the same hits, imported through
// POST /api/v1/websites/{id}/events into the real server over a real
// listener, give the same numbers for every statistic whatever the snapshot
// schedule, the memory budget, a restart halfway or the request size.
// Configurations are compared with each other; no model is involved.

var (
	detFull = flag.Bool("determinism.full", false,
		"TestImportDeterminism, TestImportBatchSizes: issue #17's size (1,000,000 pageviews over 365 days, 100k IPs, 300 user agents, requests of 10,000)")
	detEnd = flag.String("determinism.end", "",
		"TestImportDeterminism, TestImportBatchSizes: the day (YYYY-MM-DD, UTC) after the stream's last; default today, so that every imported day is past")
)

// importSize is the shape of an import stream.
type importSize struct {
	pageviews int // plus one custom event per 100 pageviews
	days      int // the pageviews are spread over the days before the end day
	ips       int // client IPs, each tied to one user agent, resolution, language
	uas       int // distinct real browser user agents
	paths     int // Zipf-distributed paths
	batch     int // events per request
}

// ciSize keeps TestImportDeterminism under ~20 s on a shared two-core machine.
var ciSize = importSize{pageviews: 50_000, days: 60, ips: 2_000, uas: 100, paths: 5_000, batch: 5_000}

// fullSize is the experiment of issue #17.
var fullSize = importSize{pageviews: 1_000_000, days: 365, ips: 100_000, uas: 300, paths: 5_000, batch: 10_000}

// detEndDay returns the day after the stream (midnight UTC).
func detEndDay(t *testing.T) time.Time {
	if *detEnd != "" {
		d, err := time.Parse(time.DateOnly, *detEnd)
		if err != nil {
			t.Fatalf("-determinism.end: %v", err)
		}
		if d.After(time.Now()) {
			t.Fatalf("-determinism.end %s is in the future", *detEnd)
		}
		return d
	}
	return time.Now().UTC().Truncate(24 * time.Hour)
}

// importEvent is one line of an import stream, compactly.
type importEvent struct {
	at    int64 // Unix seconds
	path  int32
	ip    int32
	ref   uint8 // index in importRefs
	event bool  // a custom event, not a pageview
}

// importStream is a deterministic import: events in time order, and the
// attributes of each client IP.
type importStream struct {
	events []importEvent
	ips    []string
	ipUA   []string
	ipRes  []string
	ipLang []string
	first  time.Time // the first day (midnight UTC)
	last   time.Time // the last day
}

const detDomain = "det.example"

var importRefs = []string{"", "", "", "", "", "", "https://www.google.com/", "https://www.google.com/",
	"https://news.ycombinator.com/item?id=1", "https://" + detDomain + "/"}

var (
	detResolutions = []string{"1920x1080", "1366x768", "1536x864", "390x844", "414x896", "2560x1440", "820x1180"}
	detLanguages   = []string{"en-US", "en-GB", "de-DE", "fr-FR", "es-ES", "ja-JP", "pt-BR"}
)

// newImportStream returns the stream of size ending the day before end.
func newImportStream(seed uint64, size importSize, end time.Time) *importStream {
	r := rand.New(rand.NewPCG(seed, 17))
	st := &importStream{first: end.AddDate(0, 0, -size.days), last: end.AddDate(0, 0, -1)}
	uas := make([]string, size.uas)
	for i := range uas {
		uas[i] = userAgents[i*len(userAgents)/size.uas].s
	}
	for range size.ips {
		var a netip.Addr
		for {
			a = netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
			if a.IsGlobalUnicast() && !a.IsPrivate() && a.As4()[0] < 224 {
				break
			}
		}
		st.ips = append(st.ips, a.String())
		st.ipUA = append(st.ipUA, uas[r.IntN(len(uas))])
		st.ipRes = append(st.ipRes, detResolutions[r.IntN(len(detResolutions))])
		st.ipLang = append(st.ipLang, detLanguages[r.IntN(len(detLanguages))])
	}
	pathZipf := rand.NewZipf(r, 1.1, 1, uint64(size.paths-1))
	ipZipf := rand.NewZipf(r, 1.2, 1, uint64(size.ips-1))
	span := int64(size.days) * 86400
	start := st.first.Unix()
	for i := range size.pageviews {
		ip := int32(r.IntN(size.ips)) // half the hits from anyone, half from regulars
		if r.IntN(2) == 0 {
			ip = int32(ipZipf.Uint64())
		}
		ev := importEvent{at: start + r.Int64N(span), path: int32(pathZipf.Uint64()), ip: ip, ref: uint8(r.IntN(len(importRefs)))}
		st.events = append(st.events, ev)
		if i%100 == 99 {
			ev.event = true
			st.events = append(st.events, ev)
		}
	}
	slices.SortStableFunc(st.events, func(a, b importEvent) int { return int(a.at - b.at) })
	return st
}

// pageviews returns the number of pageviews of the stream.
func (st *importStream) pageviews() int {
	n := 0
	for _, ev := range st.events {
		if !ev.event {
			n++
		}
	}
	return n
}

// importLine is one event of the import API.
type importLine struct {
	Time       string     `json:"time"`
	Page       string     `json:"page"`
	Referrer   string     `json:"referrer,omitempty"`
	UserAgent  string     `json:"user_agent"`
	IP         string     `json:"ip"`
	Resolution string     `json:"screen_resolution"`
	Language   string     `json:"language"`
	Event      *eventJSON `json:"event,omitempty"`
}

// body encodes events as an NDJSON import body.
func (st *importStream) body(events []importEvent) []byte {
	var b []byte
	for _, ev := range events {
		page := "https://" + detDomain + "/p/" + strconv.Itoa(int(ev.path))
		if ev.path%50 == 7 {
			page += "?utm_campaign=c" + strconv.Itoa(int(ev.path%3))
		}
		l := importLine{
			Time: time.Unix(ev.at, 0).UTC().Format(time.RFC3339), Page: page, Referrer: importRefs[ev.ref],
			UserAgent: st.ipUA[ev.ip], IP: st.ips[ev.ip], Resolution: st.ipRes[ev.ip], Language: st.ipLang[ev.ip],
		}
		if ev.event {
			l.Event = &eventJSON{Name: "Signup", Value: json.RawMessage(strconv.Itoa(int(ev.path % 5))), Unit: "USD"}
		}
		line, _ := json.Marshal(l)
		b = append(append(b, line...), '\n')
	}
	return b
}

// importConfig is how a stream is imported.
type importConfig struct {
	name  string
	opts  engine.Options // Dir is set by the run
	batch int            // events per request
	pause time.Duration  // between requests
	// restart closes the engine and opens it again on the same directory
	// after half of the requests.
	restart bool
}

// importAnswers are every statistic over the stream's days, all rows, and
// the totals: what must not depend on the configuration.
type importAnswers struct {
	Stats    map[string][]engine.Row
	Totals   engine.Totals
	Accepted int
	Dropped  map[string]int
}

// visitors returns the sum of the visitors rows.
func (a *importAnswers) visitors() uint64 {
	var n uint64
	for _, r := range a.Stats["visitors"] {
		n += r.Count
	}
	return n
}

// fingerprint is a short hash of a, to compare runs in different processes
// (visitor ids differ there, salts being random; counts do not).
func (a *importAnswers) fingerprint() string {
	b, _ := json.Marshal(a)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}

// diff describes how got differs from a, statistic by statistic.
func (a *importAnswers) diff(got *importAnswers) string {
	var out []string
	for _, name := range engine.StatNames() {
		w, g := a.Stats[name], got.Stats[name]
		if slices.Equal(w, g) {
			continue
		}
		sum := func(rows []engine.Row) (n uint64) {
			for _, r := range rows {
				n += r.Count
			}
			return n
		}
		counts := func(rows []engine.Row) map[string]uint64 {
			m := make(map[string]uint64, len(rows))
			for _, r := range rows {
				m[r.Value] += r.Count
			}
			return m
		}
		wm, gm := counts(w), counts(g)
		var values []string
		for v := range wm {
			if gm[v] != wm[v] {
				values = append(values, v)
			}
		}
		for v := range gm {
			if _, ok := wm[v]; !ok {
				values = append(values, v)
			}
		}
		slices.Sort(values)
		var ex []string
		for _, v := range values[:min(len(values), 8)] {
			ex = append(ex, fmt.Sprintf("%q %d vs %d", v, wm[v], gm[v]))
		}
		out = append(out, fmt.Sprintf("%s: %d rows summing to %d vs %d rows summing to %d; %d values differ: %s",
			name, len(w), sum(w), len(g), sum(g), len(values), strings.Join(ex, ", ")))
	}
	if d := cmp.Diff(a.Totals, got.Totals); d != "" {
		out = append(out, "Totals mismatch (-want +got):\n"+d)
	}
	if a.Accepted != got.Accepted || !cmp.Equal(a.Dropped, got.Dropped) {
		out = append(out, fmt.Sprintf("import answers: accepted %d dropped %v vs accepted %d dropped %v", a.Accepted, a.Dropped, got.Accepted, got.Dropped))
	}
	return strings.Join(out, "\n")
}

// importRun is the outcome of one configuration.
type importRun struct {
	answers importAnswers
	took    time.Duration // the import, pauses included
	metrics engine.Metrics
}

// runImport starts the real server on an engine with a fresh data directory,
// creates the website through the API, imports st in requests of c.batch
// events one at a time, and reads every statistic back through the API.
func runImport(t *testing.T, st *importStream, c importConfig) importRun {
	t.Helper()
	ctx := context.Background()
	opts := c.opts
	opts.Dir = t.TempDir()
	e, err := engine.Open(&opts)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startServer(e)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	defer func() {
		srv.close()
		e.Close()
	}()
	acct, key, err := identity.Must(e).CreateAccount(ctx, "det", "det@localhost")
	if err != nil {
		t.Fatal(err)
	}
	api := &apiClient{t: t, c: newClient(1), key: key, base: srv.url}
	var created struct {
		Data struct {
			ID uint32 `json:"id"`
		} `json:"data"`
	}
	api.do(http.MethodPost, "/api/v1/websites", "application/x-www-form-urlencoded",
		[]byte(url.Values{"domain": {detDomain}, "privacy": {"0"}, "timezone": {"UTC"}}.Encode()), http.StatusCreated, &created)
	id := created.Data.ID
	events := fmt.Sprintf("/api/v1/websites/%d/events", id)

	var run importRun
	run.answers.Dropped = make(map[string]int)
	nreq := (len(st.events) + c.batch - 1) / c.batch
	start := time.Now()
	for i := range nreq {
		if c.restart && i == nreq/2 {
			srv.close()
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if e, err = engine.Open(&opts); err != nil {
				t.Fatal(err)
			}
			if srv, err = startServer(e); err != nil {
				t.Fatal(err)
			}
			api.base = srv.url
		}
		if i > 0 && c.pause > 0 {
			time.Sleep(c.pause)
		}
		var res struct {
			Data struct {
				Accepted int            `json:"accepted"`
				Dropped  map[string]int `json:"dropped"`
			} `json:"data"`
		}
		api.do(http.MethodPost, events, "application/x-ndjson", st.body(st.events[i*c.batch:min((i+1)*c.batch, len(st.events))]), http.StatusOK, &res)
		run.answers.Accepted += res.Data.Accepted
		for k, n := range res.Data.Dropped {
			run.answers.Dropped[k] += n
		}
	}
	run.took = time.Since(start)

	// Read twice: the same data must give the same answers each time too.
	stats := readStats(api, id, st.first, st.last)
	if again := readStats(api, id, st.first, st.last); !cmp.Equal(stats, again) {
		a, b := importAnswers{Stats: stats}, importAnswers{Stats: again}
		t.Errorf("%s: two reads of the same statistics after the import differ:\n%s", c.name, a.diff(&b))
	}
	run.answers.Stats = stats
	from, _ := engine.ParseDate(st.first.Format(time.DateOnly))
	to, _ := engine.ParseDate(st.last.Format(time.DateOnly))
	if run.answers.Totals, err = e.Owner(acct.ID).Totals(ctx, id, from, to); err != nil {
		t.Fatal(err)
	}
	run.metrics = e.Metrics()
	return run
}

// readStats reads every row of every statistic over [first, last] through
// the API, 100 rows a page. A value on two pages is an error.
func readStats(api *apiClient, id uint32, first, last time.Time) map[string][]engine.Row {
	api.t.Helper()
	from, to := first.Format(time.DateOnly), last.Format(time.DateOnly)
	stats := make(map[string][]engine.Row)
	for _, name := range engine.StatNames() {
		rows := []engine.Row{}
		seen := make(map[string]bool)
		for page := 1; ; page++ {
			var pg struct {
				Data        []engine.Row `json:"data"`
				CurrentPage int          `json:"current_page"`
				LastPage    int          `json:"last_page"`
				Total       int          `json:"total"`
			}
			q := url.Values{"name": {name}, "from": {from}, "to": {to}, "per_page": {"100"}, "page": {strconv.Itoa(page)}}
			api.do(http.MethodGet, fmt.Sprintf("/api/v1/stats/%d?%s", id, q.Encode()), "", nil, http.StatusOK, &pg)
			for _, r := range pg.Data {
				if seen[r.Value] {
					api.t.Errorf("%s: value %q on two pages (page %d)", name, r.Value, page)
				}
				seen[r.Value] = true
			}
			rows = append(rows, pg.Data...)
			if pg.CurrentPage >= pg.LastPage {
				if len(rows) != pg.Total {
					api.t.Fatalf("%s: %d rows over %d pages, total says %d", name, len(rows), pg.LastPage, pg.Total)
				}
				break
			}
		}
		stats[name] = rows
	}
	return stats
}

// apiClient calls the API with a key and decodes the answers.
type apiClient struct {
	t         *testing.T
	c         *http.Client
	key, base string
}

func (a *apiClient) do(method, path, ctype string, body []byte, want int, into any) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := a.c.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode != want {
		a.t.Fatalf("%s %s: %s: %.500s", method, path, resp.Status, b)
	}
	if err := json.Unmarshal(b, into); err != nil {
		a.t.Fatalf("%s %s: %v: %.500s", method, path, err, b)
	}
}

// compareImports runs the configurations on st and fails unless every one
// answers as the first; it logs a row of the table for each.
func compareImports(t *testing.T, st *importStream, configs []importConfig) []importRun {
	t.Helper()
	t.Logf("stream: %d events (%d pageviews) over %s .. %s, %d client IPs",
		len(st.events), st.pageviews(), st.first.Format(time.DateOnly), st.last.Format(time.DateOnly), len(st.ips))
	t.Logf("| configuration | requests | import took | pageviews counted | visitors (sum of rows) | Totals.Visitors | snapshots | evicted | answers |")
	var runs []importRun
	for i, c := range configs {
		run := runImport(t, st, c)
		runs = append(runs, run)
		a := &run.answers
		t.Logf("| %s | %d × %d | %.1f s | %d | %d | %d | %d | %d | %s |", c.name,
			(len(st.events)+c.batch-1)/c.batch, c.batch, run.took.Seconds(), a.Totals.Pageviews, a.visitors(),
			a.Totals.Visitors, run.metrics.Snapshots, run.metrics.Evicted, a.fingerprint())
		if a.Accepted != len(st.events) {
			t.Errorf("%s: %d of %d events accepted (dropped %v)", c.name, a.Accepted, len(st.events), a.Dropped)
		}
		if i > 0 {
			if d := runs[0].answers.diff(a); d != "" {
				t.Errorf("%s answers differently from %s:\n%s", c.name, configs[0].name, d)
			}
		}
	}
	return runs
}

// TestImportDeterminism is issue #17's experiment at the HTTP level: the
// same stream imported in time order, one request at a time, with snapshots
// every hour (none during the import), every second with a 0.6 s pause
// between requests (several snapshots between any two), and under a tiny
// MemoryBudget with snapshots (and so evictions) between requests and a
// restart halfway. Every statistic must be identical. -determinism.full runs
// the size (minutes).
func TestImportDeterminism(t *testing.T) {
	size := ciSize
	if *detFull {
		size = fullSize
	}
	st := newImportStream(17, size, detEndDay(t))
	runs := compareImports(t, st, []importConfig{
		{name: "snapshot every 1h", batch: size.batch, opts: engine.Options{SnapshotEvery: time.Hour}},
		{name: "snapshot every 1s, 0.6 s pauses", batch: size.batch, pause: 600 * time.Millisecond,
			opts: engine.Options{SnapshotEvery: time.Second}},
		{name: "snapshot every 10ms", batch: size.batch, opts: engine.Options{SnapshotEvery: 10 * time.Millisecond}},
		{name: "MemoryBudget 64 KiB, snapshot every 200ms, restart halfway", batch: size.batch, restart: true,
			opts: engine.Options{MemoryBudget: 64 << 10, SnapshotEvery: 200 * time.Millisecond}},
	})
	// The configurations must have done what they are there for.
	if len(runs) == 4 {
		if runs[1].metrics.Snapshots == 0 {
			t.Error("snapshot every 1s: no snapshot taken during the run")
		}
		if runs[3].metrics.Evicted == 0 {
			t.Error("MemoryBudget: nothing evicted")
		}
	}
}

// TestImportBatchSizes: the same stream imported in requests of 10,000,
// 997 and (a smaller stream) 1 event gives the same statistics.
func TestImportBatchSizes(t *testing.T) {
	size := ciSize
	small := importSize{pageviews: 1_000, days: 5, ips: 200, uas: 50, paths: 300}
	if *detFull {
		size = fullSize
		small = importSize{pageviews: 10_000, days: 30, ips: 2_000, uas: 100, paths: 1_000}
	}
	end := detEndDay(t)
	t.Run("10000 vs 997", func(t *testing.T) {
		st := newImportStream(18, size, end)
		compareImports(t, st, []importConfig{{name: "10,000 per request", batch: 10_000}, {name: "997 per request", batch: 997}})
	})
	t.Run("10000 vs 1", func(t *testing.T) {
		st := newImportStream(19, small, end)
		compareImports(t, st, []importConfig{{name: "10,000 per request", batch: 10_000}, {name: "1 per request", batch: 1}})
	})
}
