package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/webstats/webstats/engine"
)

// ServerSite is the site the server run imports: a year of it is about a
// million hits (issue #16: "restart after kill -9 with 1M hits in the
// log").
var ServerSite = Site{Domain: "restart.example", PageviewsPerMonth: 80_000, PagesPerDay: 200}

// ServerResult is the outcome of the server run: the webstatsd binary,
// started as an operator starts it.
type ServerResult struct {
	// Unavailable says why the run was not made (no binary given) or
	// what failed.
	Unavailable string `json:",omitempty"`

	// Days of ServerSite, Hits events, are imported through the API in
	// requests of Batch events, by one client, into a server with
	// snapshots off (so that its log holds every hit); it accepts
	// Accepted of them (the others are bots). ImportPerSec is the median
	// rate over ImportRuns (one import per restart measured), the time of
	// the requests alone.
	Days, Hits, Batch int
	Accepted          int
	ImportPerSec      float64
	ImportRuns        []float64

	// Restarts are the restarts after kill -9 and after a clean stop.
	Restarts []ServerRestart

	// Idle is the resident memory of the binary started on an empty data
	// directory, IdleWait after its first /healthz: the run of the median
	// VmRSS (its three figures add up).
	IdleWait time.Duration
	Idle     ProcMemory
	IdleRuns []int64 // VmRSS of each run
}

// ServerRestart is one kind of restart, medians over the repetitions.
type ServerRestart struct {
	// After is "kill -9" or "stop" (SIGTERM).
	After string
	// Ready is from starting the process to its first 200 of /healthz.
	Ready     time.Duration
	ReadyRuns []time.Duration
	// Slowest is the slowest of the first queries of the 17 statistics
	// over the imported days, asked one after the other through the API
	// once the server is ready; All is their sum. SlowestNames names the
	// slowest statistic of each repetition.
	Slowest, All time.Duration
	SlowestNames []string
}

// ProcMemory is a process's resident memory, from /proc/PID/status.
type ProcMemory struct {
	RSS  int64 // VmRSS
	Anon int64 // RssAnon: heap, stacks, Pebble's memory
	File int64 // RssFile: mapped pages of files, the binary's own
}

// Restart returns the restart measured after after.
func (s *ServerResult) Restart(after string) (ServerRestart, bool) {
	for _, r := range s.Restarts {
		if r.After == after {
			return r, true
		}
	}
	return ServerRestart{}, false
}

// The restarts of the server run.
const (
	AfterKill = "kill -9"
	AfterStop = "stop"
)

func (r *runner) serverRun(ctx context.Context, rep *Report) error {
	c := r.cfg
	res := &ServerResult{Days: c.ServerDays, Batch: 10_000, IdleWait: c.IdleWait}
	rep.Server = res
	why := ""
	if c.Webstatsd == "" {
		why = "no webstatsd binary: " + noBinary(&c)
	}
	return r.binarySection(ctx, RunServer, serverSteps(&c), &res.Unavailable, why, func() error { return r.serverMeasure(ctx, res) })
}

// noBinary says why there is no webstatsd binary.
func noBinary(c *RunConfig) string {
	return cmp.Or(c.WebstatsdNote, "give one with -webstatsd, or run webstats-bench from the repository, which builds it")
}

// binarySection runs measure, the measurements of a section that starts
// processes (the webstatsd binary, a peer), unless why says it cannot
// run. A section that cannot measure, or fails, says why in unavailable,
// and the other sections stay: only a cancel fails the run. The section's
// steps progress either way.
func (r *runner) binarySection(ctx context.Context, name string, steps int, unavailable *string, why string, measure func() error) error {
	first := r.prog.calls
	if why == "" {
		if err := measure(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			why = "failed: " + err.Error()
		}
	}
	if why != "" {
		*unavailable = why
		for r.prog.calls < first+steps {
			r.prog.step("%s: not available", name)
		}
	}
	return nil
}

// serverMeasure makes the server run's measurements into res.
func (r *runner) serverMeasure(ctx context.Context, res *ServerResult) error {
	c := r.cfg
	// The year before today: the import refuses hits from the future.
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -c.ServerDays-1)
	g := NewGenerator(Config{Seed: c.Seed + 16, Sites: []Site{ServerSite}, Days: c.ServerDays, Start: start})
	bodies, hits := importBodies(g.Hits(), res.Batch)
	res.Hits = hits
	from, to := start.Format(time.DateOnly), start.AddDate(0, 0, c.ServerDays-1).Format(time.DateOnly)
	for _, after := range []string{AfterKill, AfterStop} {
		rs := ServerRestart{After: after}
		var slowest, all []float64
		for i := range c.Repeats {
			r.prog.step("server: import %s hits, %s, restart (%d/%d)", formatCount(float64(hits)), after, i+1, c.Repeats)
			// The last clean stop leaves a CPU profile of the binary.
			var prof *Profile
			if after == AfterStop && i == c.Repeats-1 && r.binaryHasFlag(ctx, "cpuprofile") {
				prof = &Profile{Name: "server-import", What: fmt.Sprintf("the webstatsd binary: start, import of %s hits, clean stop", formatCount(float64(hits))),
					Targets: []string{"import,"}}
			}
			m, err := r.importAndRestart(ctx, bodies, hits, after, from, to, prof)
			if err != nil {
				return err
			}
			res.Accepted = m.accepted
			res.ImportRuns = append(res.ImportRuns, m.importRate)
			rs.ReadyRuns = append(rs.ReadyRuns, m.ready)
			rs.SlowestNames = append(rs.SlowestNames, m.slowestName)
			slowest = append(slowest, float64(m.slowest))
			all = append(all, float64(m.all))
		}
		rs.Ready = medianDur(rs.ReadyRuns)
		rs.Slowest, rs.All = time.Duration(median(slowest)), time.Duration(median(all))
		res.Restarts = append(res.Restarts, rs)
	}
	res.ImportPerSec = median(res.ImportRuns)

	var idle []ProcMemory
	for i := range c.Repeats {
		r.prog.step("server: idle memory (%d/%d)", i+1, c.Repeats)
		m, err := r.idleMemory(ctx)
		if err != nil {
			return err
		}
		idle = append(idle, m)
		res.IdleRuns = append(res.IdleRuns, m.RSS)
	}
	slices.SortFunc(idle, func(a, b ProcMemory) int { return cmp.Compare(a.RSS, b.RSS) })
	res.Idle = idle[len(idle)/2]
	return nil
}

// binaryHasFlag reports whether the webstatsd binary has the flag name (an
// older binary given with -webstatsd may not).
// Without it, the report says so.
func (r *runner) binaryHasFlag(ctx context.Context, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, r.cfg.Webstatsd, "serve", "-h").CombinedOutput()
	if bytes.Contains(out, []byte("-"+name+" ")) || bytes.Contains(out, []byte("-"+name+"\n")) {
		return true
	}
	r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("The webstatsd binary has no -%s flag: the server run was measured without its profile.", name))
	return false
}

// serverSteps counts the progress steps of the server run.
func serverSteps(c *RunConfig) int { return 3 * c.Repeats }

// restartMeasure is one import and restart.
type restartMeasure struct {
	importRate   float64
	accepted     int
	ready        time.Duration
	slowest, all time.Duration
	slowestName  string
}

// serverFlags are the flags of every server the run starts: snapshots
// off, so that the log holds every hit imported, and no rate limit on
// the import.
var serverFlags = []string{"-snapshot-every", "0", "-rate-limit", "0"}

// importAndRestart imports bodies (hits events) into a new server, kills
// or stops it, and starts it again; the server must then answer the
// totals it answered before. With prof (after a clean stop only), the
// first server writes a CPU profile (-cpuprofile), added to the report as
// prof.
func (r *runner) importAndRestart(ctx context.Context, bodies [][]byte, hits int, after, from, to string, prof *Profile) (restartMeasure, error) {
	var m restartMeasure
	bin := r.cfg.Webstatsd
	data := r.newDir("server")
	defer removeAll(data)
	key, err := userAdd(ctx, bin, data)
	if err != nil {
		return m, err
	}
	api := &keyClient{key: key, hc: &http.Client{Timeout: 5 * time.Minute}}
	flags := serverFlags
	profPath := data + ".cpu.pprof"
	if prof != nil {
		flags = append(slices.Clip(flags), "-cpuprofile", profPath)
		defer os.Remove(profPath)
	}
	started := time.Now()
	p, err := startProc(ctx, bin, data, flags...)
	if err != nil {
		return m, err
	}
	defer p.kill()
	if _, err := p.ready(ctx, time.Minute); err != nil {
		return m, err
	}
	api.base = "http://" + p.addr
	var site struct {
		Data struct{ ID int } `json:"data"`
	}
	if err := api.do(ctx, "POST", "/api/v1/websites", "application/x-www-form-urlencoded", []byte("domain="+ServerSite.Domain), &site); err != nil {
		return m, err
	}
	events := fmt.Sprintf("/api/v1/websites/%d/events", site.Data.ID)
	var took time.Duration
	for _, body := range bodies {
		var answer struct {
			Data struct{ Accepted int } `json:"data"`
		}
		t0 := time.Now()
		if err := api.do(ctx, "POST", events, "application/x-ndjson", body, &answer); err != nil {
			return m, err
		}
		took += time.Since(t0)
		m.accepted += answer.Data.Accepted
	}
	m.importRate = float64(hits) / took.Seconds()
	before, err := api.totals(ctx, from, to)
	if err != nil {
		return m, err
	}
	if after == AfterKill {
		err = p.kill()
	} else {
		err = p.stop(ctx, time.Minute)
	}
	if err != nil {
		return m, err
	}
	if prof != nil {
		// A profile that cannot be read is noted; the measurement stands.
		prof.Kind, prof.Wall, prof.Cores = "cpu", time.Since(started), runtime.NumCPU()
		if prof.Data, err = os.ReadFile(profPath); err == nil {
			err = prof.summarise(false, false)
		}
		if err != nil {
			r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("The binary's CPU profile (%s) could not be read: %v.", prof.Name, err))
		} else {
			r.rep.Profiles = append(r.rep.Profiles, prof)
		}
	}
	again, err := startProc(ctx, bin, data, serverFlags...)
	if err != nil {
		return m, err
	}
	defer again.kill()
	if m.ready, err = again.ready(ctx, 5*time.Minute); err != nil {
		return m, err
	}
	api.base = "http://" + again.addr
	for _, name := range engine.StatNames() {
		t0 := time.Now()
		path := fmt.Sprintf("/api/v1/stats/%d?name=%s&from=%s&to=%s", site.Data.ID, name, from, to)
		if err := api.do(ctx, "GET", path, "", nil, nil); err != nil {
			return m, err
		}
		d := time.Since(t0)
		if d > m.slowest {
			m.slowest, m.slowestName = d, name
		}
		m.all += d
	}
	// Nothing acknowledged was lost (or counted twice) by the restart.
	now, err := api.totals(ctx, from, to)
	if err != nil {
		return m, err
	}
	if now != before {
		return m, fmt.Errorf("after a restart (%s) the server answers %v for the import's days, before it %v", after, now, before)
	}
	return m, again.stop(ctx, time.Minute)
}

// siteTotals are the totals of ServerSite over a range.
type siteTotals struct{ Visitors, Visits, Pageviews, Events float64 }

// totals asks the Stats API for ServerSite's totals over [from, to].
func (a *keyClient) totals(ctx context.Context, from, to string) (siteTotals, error) {
	q, _ := json.Marshal(map[string]any{"site_id": ServerSite.Domain, "metrics": []string{"visitors", "visits", "pageviews", "events"}, "date_range": []string{from, to}})
	var answer struct {
		Results []struct{ Metrics []float64 } `json:"results"`
	}
	if err := a.do(ctx, "POST", "/api/v2/query", "application/json", q, &answer); err != nil {
		return siteTotals{}, err
	}
	if len(answer.Results) != 1 || len(answer.Results[0].Metrics) != 4 {
		return siteTotals{}, fmt.Errorf("the totals query answered %+v", answer.Results)
	}
	m := answer.Results[0].Metrics
	return siteTotals{Visitors: m[0], Visits: m[1], Pageviews: m[2], Events: m[3]}, nil
}

// userAdd creates an account on a new data directory with bin and returns
// its API key.
func userAdd(ctx context.Context, bin, data string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "user", "add", "-data", data, "-email", "bench@example.com").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("bench: %s user add: %w", bin, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// idleMemory starts a server on an empty data directory and reads its
// resident memory IdleWait after it is ready.
func (r *runner) idleMemory(ctx context.Context) (ProcMemory, error) {
	var m ProcMemory
	data := r.newDir("idle")
	defer removeAll(data)
	p, err := startProc(ctx, r.cfg.Webstatsd, data)
	if err != nil {
		return m, err
	}
	defer p.kill()
	if _, err := p.ready(ctx, time.Minute); err != nil {
		return m, err
	}
	select {
	case <-time.After(r.cfg.IdleWait):
	case <-ctx.Done():
		return m, ctx.Err()
	}
	for _, f := range []struct {
		name string
		into *int64
	}{{"VmRSS", &m.RSS}, {"RssAnon", &m.Anon}, {"RssFile", &m.File}} {
		if *f.into, err = ProcStatus(p.cmd.Process.Pid, f.name); err != nil {
			return m, err
		}
	}
	return m, p.stop(ctx, time.Minute)
}

// importBodies encodes hits as NDJSON bodies of the import API, per
// events each, and counts them. Only the bodies are kept: the hits of a
// year take about as much memory again.
func importBodies(hits iter.Seq[engine.Hit], per int) (bodies [][]byte, n int) {
	var buf bytes.Buffer
	flush := func() {
		if buf.Len() > 0 {
			bodies = append(bodies, bytes.Clone(buf.Bytes()))
			buf.Reset()
		}
	}
	for h := range hits {
		ev := map[string]any{"time": h.Time.Format(time.RFC3339Nano), "page": h.URL, "user_agent": h.UserAgent}
		if h.IP.IsValid() {
			ev["ip"] = h.IP.String()
		}
		if h.Referrer != "" {
			ev["referrer"] = h.Referrer
		}
		if h.Visitor != "" {
			ev["visitor"] = h.Visitor
		}
		if h.Event != nil {
			ev["event"] = map[string]any{"name": h.Event.Name}
		}
		line, _ := json.Marshal(ev)
		buf.Write(line)
		buf.WriteByte('\n')
		if n++; n%per == 0 {
			flush()
		}
	}
	flush()
	return bodies, n
}

// keyClient calls a server's API with a key.
type keyClient struct {
	base, key string
	hc        *http.Client
}

// do sends a request and decodes a 2xx answer into v (when not nil).
func (a *keyClient) do(ctx context.Context, method, path, ctype string, body []byte, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %.300s", method, path, resp.Status, data)
	}
	if v != nil {
		return json.Unmarshal(data, v)
	}
	return nil
}

// proc is a webstatsd serving on a loopback port.
type proc struct {
	cmd   *exec.Cmd
	logs  *logWatch
	done  chan error // the result of Wait
	start time.Time  // when it was started
	addr  string     // once ready
}

// startProc starts bin serving data on a free loopback port, with the
// extra flags (which override the defaults here).
func startProc(ctx context.Context, bin, data string, extra ...string) (*proc, error) {
	args := append([]string{"-addr", "127.0.0.1:0", "-data", data, "-log-format", "json"}, extra...)
	p := &proc{cmd: exec.Command(bin, args...), logs: &logWatch{}, done: make(chan error, 1)}
	p.cmd.Stderr = p.logs
	dieWithParent(p.cmd)
	p.cmd.WaitDelay = 10 * time.Second
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.done <- p.cmd.Wait() }()
	return p, nil
}

// ready waits, at most wait, until p has logged its address and answers
// /healthz with 200, and returns how long that took from its start.
// Called once, at once after startProc.
func (p *proc) ready(parent context.Context, wait time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	hc := &http.Client{Timeout: wait}
	for {
		select {
		case err := <-p.done:
			p.done <- err
			return 0, fmt.Errorf("webstatsd exited before it was ready: %v\n%s", err, p.logs.tail())
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return 0, err
			}
			return 0, fmt.Errorf("webstatsd not ready in %v\n%s", wait, p.logs.tail())
		case <-tick.C:
		}
		if p.addr == "" {
			if p.addr = p.logs.listening(); p.addr == "" {
				continue
			}
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+p.addr+"/healthz", nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.start), nil
			}
		}
	}
}

// kill kills p with SIGKILL (a crash: no cleanup) and waits for it; it
// does nothing once p has exited.
func (p *proc) kill() error {
	select {
	case err := <-p.done:
		p.done <- err
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	p.done <- <-p.done
	return nil
}

// stop sends p SIGTERM and waits, at most wait, for a clean exit.
func (p *proc) stop(ctx context.Context, wait time.Duration) error {
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("webstatsd exited before it was stopped: %v\n%s", err, p.logs.tail())
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("webstatsd: SIGTERM: %w", err)
	}
	select {
	case <-ctx.Done():
		return ctx.Err() // the caller's kill reaps it
	case err := <-p.done:
		p.done <- err
		if err != nil {
			return fmt.Errorf("webstatsd after SIGTERM: %v, want exit code 0\n%s", err, p.logs.tail())
		}
		return nil
	case <-time.After(wait):
		return fmt.Errorf("webstatsd did not exit in %v after SIGTERM\n%s", wait, p.logs.tail())
	}
}

// logWatch is a server's standard error: it finds the "webstatsd
// listening" line of the JSON log and keeps the last logTail bytes, for
// error messages.
type logWatch struct {
	mu      sync.Mutex
	line    []byte // the line being written, at most maxLogLine bytes
	addr    string
	last    []byte
	skipped bool // line overflowed maxLogLine: ignore it
}

const (
	maxLogLine = 64 << 10
	logTail    = 16 << 10
)

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = append(w.last, p...)
	if len(w.last) > 2*logTail {
		w.last = append(w.last[:0], w.last[len(w.last)-logTail:]...)
	}
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk = rest[:i]
		}
		if len(w.line)+len(chunk) > maxLogLine {
			w.skipped, w.line = true, w.line[:0]
		} else if !w.skipped {
			w.line = append(w.line, chunk...)
		}
		if i < 0 {
			break
		}
		if !w.skipped && w.addr == "" {
			var l struct{ Msg, Addr string }
			if json.Unmarshal(w.line, &l) == nil && l.Msg == "webstatsd listening" {
				w.addr = l.Addr
			}
		}
		w.line, w.skipped, rest = w.line[:0], false, rest[i+1:]
	}
	return len(p), nil
}

// listening returns the address the server logged, or "".
func (w *logWatch) listening() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.addr
}

// tail returns the last bytes written.
func (w *logWatch) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.last[max(0, len(w.last)-logTail):])
}

// ProcStatus reads a "kB" field of /proc/PID/status (VmRSS, RssAnon,
// RssFile), in bytes.
func ProcStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("%s line %q", field, sc.Text())
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// BuildWebstatsd builds the webstatsd binary of the module the current
// directory is in (the repository's) into dir, and returns its path.
func BuildWebstatsd(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "webstatsd")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/webstats/webstats/httpd/cmd/webstatsd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bench: go build webstatsd: %v\n%s", err, out)
	}
	return bin, nil
}
