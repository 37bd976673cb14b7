package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
)

// The crash test runs the engine in a child process (this test binary,
// re-executed with -test.run=^TestCrashChild$) and kills it with SIGKILL at a
// random moment, over and over on the same directory, so that every restart
// replays what the previous crash left behind (SPEC §6: kill -9 at any
// moment loses no acknowledged hit and counts no hit twice).
//
// The child tracks hits from crashWriters goroutines, one hit per Track call,
// each hit on its own page /h/<n> (n unique over the whole test). Before
// Track it writes "s <n>" to stdout and after Track returned nil "a <n>"; each
// line is one unbuffered write to a pipe, so a line reaches the parent whole
// or not at all, and "s <n>" always reaches it before the hit can be counted.
const (
	crashEnvDir     = "WEBSTATS_CRASH_CHILD"    // data directory; set only in the child
	crashEnvStart   = "WEBSTATS_CRASH_START"    // first n of the round
	crashEnvTime    = "WEBSTATS_CRASH_TIME"     // time of the round's hits, RFC 3339
	crashEnvSnap    = "WEBSTATS_CRASH_SNAPLOOP" // "1": snapshot in a loop, besides every 20 ms
	crashDomain     = "crash.example"
	crashWriters    = 16
	crashPerRound   = 1 << 20 // n values reserved for a round
	crashChildLimit = 30 * time.Second
	crashUA         = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)

// TestCrashChild is the child process of TestCrash; run directly, it skips.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("the child process of TestCrash")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
		os.Exit(3)
	}
	start, err := strconv.ParseUint(os.Getenv(crashEnvStart), 10, 64)
	if err != nil {
		fail("start: %v", err)
	}
	when, err := time.Parse(time.RFC3339Nano, os.Getenv(crashEnvTime))
	if err != nil {
		fail("time: %v", err)
	}
	ctx := context.Background()
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: 20 * time.Millisecond})
	if err != nil {
		fail("open: %v", err)
	}
	w, err := crashWebsite(ctx, e)
	if err != nil {
		fail("website: %v", err)
	}
	os.Stdout.WriteString("ready\n")
	if os.Getenv(crashEnvSnap) == "1" {
		go func() {
			for {
				if err := e.Snapshot(ctx); err != nil {
					fail("snapshot: %v", err)
				}
			}
		}()
	}
	var next atomic.Uint64
	for range crashWriters {
		go func() {
			buf := make([]byte, 0, 32)
			for {
				k := next.Add(1) - 1
				if k >= crashPerRound {
					return
				}
				n := start + k
				os.Stdout.Write(append(strconv.AppendUint(append(buf[:0], "s "...), n, 10), '\n'))
				res, err := e.Track(ctx, crashHit(w.ID, n, when))
				if err != nil {
					fail("track %d: %v", n, err)
				}
				if res.Accepted != 1 {
					fail("track %d: not counted: %v", n, res.Reasons)
				}
				os.Stdout.Write(append(strconv.AppendUint(append(buf[:0], "a "...), n, 10), '\n'))
			}
		}()
	}
	time.Sleep(crashChildLimit) // the parent kills us long before
	fail("not killed after %v", crashChildLimit)
}

// crashWebsite finds the test's website by domain (the registry is durable),
// creating it (for account 1) the first time.
func crashWebsite(ctx context.Context, e *engine.Engine) (engine.Website, error) {
	w, err := e.Unscoped().WebsiteByDomain(ctx, crashDomain)
	if !errors.Is(err, engine.ErrNotFound) {
		return w, err
	}
	domain := crashDomain
	return e.Owner(1).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
}

// crashHit is hit number n: a pageview of /h/<n>. Visitors repeat (5,000 IP
// addresses) and one hit in seven comes from a search engine, so visits and
// visitor state are exercised too.
func crashHit(website uint32, n uint64, when time.Time) engine.Hit {
	h := engine.Hit{
		Website:    website,
		Time:       when,
		URL:        "https://" + crashDomain + "/h/" + strconv.FormatUint(n, 10),
		UserAgent:  crashUA,
		IP:         netip.AddrFrom4([4]byte{10, 7, byte(n % 5000 >> 8), byte(n % 5000)}),
		Language:   "en-US",
		Resolution: "1920x1080",
	}
	if n%7 == 0 {
		h.Referrer = "https://www.google.com/"
	}
	return h
}

// crashRound is what the parent saw of one child.
type crashRound struct {
	sent, acked []uint64
	ready       bool
	killedAfter time.Duration // since ready (or since start when !ready)
}

// TestCrash kills a child tracking hits at random moments (SIGKILL), in at
// least 20 rounds (4 with -short) on one directory, and checks after every
// round, on a copy of the directory as the crash left it: every acknowledged
// hit is counted exactly once, no page is counted twice, nothing is counted
// that was not sent, the pageviews total equals the distinct pages, and each
// day's statistics add up (visitor state and visits survive replay). The
// original directory is reopened only by the next child, so state
// accumulates through crashes, replays and snapshots; it is checked once
// more at the end.
func TestCrash(t *testing.T) {
	if os.Getenv(crashEnvDir) != "" {
		t.Skip("in the child")
	}
	rounds := 20
	if testing.Short() {
		rounds = 4
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := filepath.Join(t.TempDir(), "data")
	// Hits go to yesterday (a closed day: frozen, compacted and copied on
	// write at every snapshot) and today (an open day), alternately.
	now := time.Now().UTC().Truncate(time.Second)
	times := [2]time.Time{now.Add(-24 * time.Hour), now}
	from, to := buckets.DateFromTime(times[0]), buckets.DateFromTime(times[1])

	sent := make(map[uint64]bool)
	acked := make(map[uint64]bool)
	for round := range rounds {
		start := uint64(round) * crashPerRound
		delay := time.Duration(20+rng.IntN(281)) * time.Millisecond
		// Every fourth round the delay runs from the child's start, so the
		// kill may land while it opens the store and replays the log; odd
		// rounds snapshot continuously, so the kill lands in a snapshot.
		fromStart := round%4 == 3
		snapLoop := round%2 == 1
		r := runCrashChild(t, dir, start, times[round%2], delay, fromStart, snapLoop)
		for _, n := range r.sent {
			sent[n] = true
		}
		for _, n := range r.acked {
			if !sent[n] {
				t.Fatalf("round %d: hit %d acknowledged but never sent", round, n)
			}
			acked[n] = true
		}
		t.Logf("round %d: killed %v after %s (snapshot loop %v): %d sent, %d acknowledged",
			round, r.killedAfter, map[bool]string{true: "ready", false: "start"}[r.ready], snapLoop, len(r.sent), len(r.acked))

		cp := filepath.Join(t.TempDir(), "copy")
		if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		checkCrashStore(t, fmt.Sprintf("round %d", round), cp, from, to, sent, acked)
		os.RemoveAll(cp)
	}
	checkCrashStore(t, "final", dir, from, to, sent, acked)
	if len(acked) == 0 {
		t.Fatal("no hit was ever acknowledged: the rounds are too short")
	}
}

// runCrashChild runs one child until it is killed delay after it is ready
// (or after its start, with fromStart).
func runCrashChild(t *testing.T, dir string, start uint64, when time.Time, delay time.Duration, fromStart, snapLoop bool) crashRound {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		crashEnvDir+"="+dir,
		crashEnvStart+"="+strconv.FormatUint(start, 10),
		crashEnvTime+"="+when.Format(time.RFC3339Nano),
		crashEnvSnap+"="+map[bool]string{true: "1", false: "0"}[snapLoop],
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var (
		r     crashRound
		mu    sync.Mutex
		ready = make(chan struct{})
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if line == "ready" {
				close(ready)
				continue
			}
			kind, num, ok := strings.Cut(line, " ")
			n, err := strconv.ParseUint(num, 10, 64)
			if !ok || err != nil || (kind != "s" && kind != "a") {
				continue // not ours (the testing package's output)
			}
			mu.Lock()
			if kind == "s" {
				r.sent = append(r.sent, n)
			} else {
				r.acked = append(r.acked, n)
			}
			mu.Unlock()
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if !fromStart {
		select {
		case <-ready:
			r.ready = true
			t0 = time.Now()
		case <-done: // the child died: reported below
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			cmd.Wait()
			t.Fatalf("child not ready after 20s; stderr:\n%s", stderr.String())
		}
	}
	select {
	case <-time.After(time.Until(t0.Add(delay))):
	case <-done:
	}
	killErr := cmd.Process.Kill()
	r.killedAfter = time.Since(t0).Round(time.Millisecond)
	<-done
	err = cmd.Wait()
	if killErr != nil || cmd.ProcessState == nil || cmd.ProcessState.Exited() {
		t.Fatalf("child ended before it was killed (%v, %v); stderr:\n%s", killErr, err, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return r
}

// checkCrashStore opens the engine on dir and checks the exactly-once
// guarantees against what the children sent and acknowledged, and that
// every day's statistics add up (checkDaySums in fuzz_test.go).
func checkCrashStore(t *testing.T, what, dir string, from, to buckets.Date, sent, acked map[uint64]bool) {
	t.Helper()
	ctx := context.Background()
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		t.Fatalf("%s: reopen after crash: %v", what, err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Errorf("%s: close: %v", what, err)
		}
	}()
	w, err := e.Unscoped().WebsiteByDomain(ctx, crashDomain)
	if errors.Is(err, engine.ErrNotFound) && len(acked) == 0 {
		return // killed before the website was created
	}
	if err != nil {
		t.Fatalf("%s: website: %v", what, err)
	}
	p, err := e.Unscoped().Stat(ctx, engine.StatQuery{Website: w.ID, Name: "page", From: from, To: to, PerPage: 1 << 30})
	if err != nil {
		t.Fatalf("%s: Stat(page): %v", what, err)
	}
	counted := make(map[uint64]bool, len(p.Rows))
	bad := 0
	for _, row := range p.Rows {
		n, err := strconv.ParseUint(strings.TrimPrefix(row.Value, "/h/"), 10, 64)
		switch {
		case err != nil || !strings.HasPrefix(row.Value, "/h/"):
			t.Errorf("%s: unexpected page %q", what, row.Value)
		case row.Count != 1:
			t.Errorf("%s: page %s counted %d times, want at most once", what, row.Value, row.Count)
		case !sent[n]:
			t.Errorf("%s: page %s counted but never sent", what, row.Value)
		default:
			counted[n] = true
			continue
		}
		if bad++; bad == 20 {
			t.Fatalf("%s: too many errors", what)
		}
	}
	missing := 0
	for n := range acked {
		if !counted[n] {
			if missing++; missing <= 10 {
				t.Errorf("%s: acknowledged hit /h/%d lost", what, n)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of %d acknowledged hits lost", what, missing, len(acked))
	}
	if len(counted) > len(sent) {
		t.Errorf("%s: %d pages counted, more than the %d hits sent", what, len(counted), len(sent))
	}
	tot, err := e.Unscoped().Totals(ctx, w.ID, from, to)
	if err != nil {
		t.Fatalf("%s: Totals: %v", what, err)
	}
	if tot.Pageviews != uint64(len(p.Rows)) {
		t.Errorf("%s: Totals.Pageviews = %d, want %d (the distinct pages counted)", what, tot.Pageviews, len(p.Rows))
	}
	// Visitor numbering and visits replayed after the crash still add up.
	for d := from; d <= to; d++ {
		checkDaySums(t, e, w.ID, d)
	}
}

// TestBackupWhileTracking takes backups while 8 goroutines track hits and
// background snapshots run every 5 ms: opening a backup gives every hit
// acknowledged before the backup started exactly once, nothing twice, and
// statistics that add up.
func TestBackupWhileTracking(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	e, err := engine.Open(&engine.Options{Dir: filepath.Join(root, "data"), SnapshotEvery: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	w, err := crashWebsite(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	when := time.Now().UTC()
	day := buckets.DateFromTime(when)
	var (
		mu    sync.Mutex
		acked = make(map[uint64]bool)
		sent  = make(map[uint64]bool)
		next  atomic.Uint64
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				n := next.Add(1)
				mu.Lock()
				sent[n] = true
				mu.Unlock()
				if _, err := e.Track(ctx, crashHit(w.ID, n, when)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[n] = true
				mu.Unlock()
			}
		})
	}
	backups := 3
	if testing.Short() {
		backups = 1
	}
	type backup struct {
		dir    string
		before map[uint64]bool
	}
	var bs []backup
	for i := range backups {
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		before := make(map[uint64]bool, len(acked))
		for n := range acked {
			before[n] = true
		}
		mu.Unlock()
		dir := filepath.Join(root, fmt.Sprintf("backup-%d", i))
		if err := e.Backup(ctx, dir); err != nil {
			t.Fatal(err)
		}
		bs = append(bs, backup{dir: dir, before: before})
	}
	stop.Store(true)
	wg.Wait()
	for i, b := range bs {
		checkCrashStore(t, fmt.Sprintf("backup %d", i), b.dir, day, day, sent, b.before)
	}
}
