package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/engine"
)

// The tests of SPEC §3.4 "Retries" (issue #38 row 10) in the engine:
// TrackOnce counts a website's hits at most once per key for seven days.

// imported makes n imported pageviews of website on 2026-11-01, by visitor
// v0..v(n-1), and a bot's.
func imported(website uint32, n int) []engine.Hit {
	var hits []engine.Hit
	for i := range n {
		hits = append(hits, engine.Hit{Website: website, Time: at("2026-11-01T10:00:00Z").Add(time.Duration(i) * time.Minute),
			URL: "/p", Visitor: "v" + string(rune('a'+i)), UserAgent: chromeWin})
	}
	return append(hits, engine.Hit{Website: website, Time: at("2026-11-01T11:00:00Z"), URL: "/p", UserAgent: googlebot, IP: ip("8.8.8.8")})
}

// pageviews is the website's pageview total on 2026-11-01.
func pageviews(t *testing.T, e *engine.Engine, website uint32) uint64 {
	t.Helper()
	tot, err := e.Unscoped().Totals(context.Background(), website, date("2026-11-01"), date("2026-11-01"))
	if err != nil {
		t.Fatalf("Totals: %v", err)
	}
	return tot.Pageviews
}

func trackOnce(t *testing.T, e *engine.Engine, key string, hits ...engine.Hit) engine.TrackResult {
	t.Helper()
	res, err := e.TrackOnce(context.Background(), key, hits...)
	if err != nil {
		t.Fatalf("TrackOnce(%q): %v", key, err)
	}
	return res
}

// wantResult checks a keyed call's counts: accepted pageviews and one bot.
func wantResult(t *testing.T, what string, res engine.TrackResult, accepted int, repeated bool) {
	t.Helper()
	if res.Accepted != accepted || res.Dropped[engine.DropBot] != 1 || res.Repeated != repeated {
		t.Errorf("%s: accepted %d, bots %d, repeated %v; want %d, 1, %v", what, res.Accepted, res.Dropped[engine.DropBot], res.Repeated, accepted, repeated)
	}
}

func TestTrackOnceRepeat(t *testing.T) {
	c := newClock("2026-11-02T12:00:00Z")
	e, _ := openMem(t, c)
	a := newSite(t, e, "a.example").ID
	b := newSite(t, e, "b.example").ID

	wantResult(t, "first", trackOnce(t, e, "import-1", imported(a, 3)...), 3, false)
	wantResult(t, "repeat", trackOnce(t, e, "import-1", imported(a, 3)...), 3, true)
	// The repeat answers the first call's counts, whatever it carries.
	wantResult(t, "repeat with other events", trackOnce(t, e, "import-1", imported(a, 5)...), 3, true)
	if got := pageviews(t, e, a); got != 3 {
		t.Errorf("after a repeat: %d pageviews, want 3", got)
	}
	wantResult(t, "another key", trackOnce(t, e, "import-2", imported(a, 2)...), 2, false)
	if got := pageviews(t, e, a); got != 5 {
		t.Errorf("after another key: %d pageviews, want 5", got)
	}
	wantResult(t, "same key, other website", trackOnce(t, e, "import-1", imported(b, 4)...), 4, false)
	if got := pageviews(t, e, b); got != 4 {
		t.Errorf("other website: %d pageviews, want 4", got)
	}
	// Without a key, a repeat counts again.
	track(t, e, imported(a, 1)...)
	track(t, e, imported(a, 1)...)
	if got := pageviews(t, e, a); got != 7 {
		t.Errorf("after two unkeyed calls: %d pageviews, want 7", got)
	}
}

func TestTrackOnceInvalidKey(t *testing.T) {
	c := newClock("2026-11-02T12:00:00Z")
	e, _ := openMem(t, c)
	a := newSite(t, e, "a.example").ID
	for _, key := range []string{"", strings.Repeat("k", 129), "tab\there", "é", "nl\n"} {
		if _, err := e.TrackOnce(context.Background(), key, imported(a, 1)...); !errors.Is(err, engine.ErrInvalidKey) {
			t.Errorf("key %q: got %v, want ErrInvalidKey", key, err)
		}
	}
	if got := pageviews(t, e, a); got != 0 {
		t.Errorf("%d pageviews counted with invalid keys", got)
	}
	trackOnce(t, e, strings.Repeat("~", 128), imported(a, 1)...)
	trackOnce(t, e, " !", imported(a, 1)...)
}

func TestTrackOnceExpiry(t *testing.T) {
	c := newClock("2026-11-02T12:00:00Z")
	e, _ := openMem(t, c)
	a := newSite(t, e, "a.example").ID
	trackOnce(t, e, "k", imported(a, 2)...)
	c.Add(7*24*time.Hour - time.Millisecond)
	wantResult(t, "just before seven days", trackOnce(t, e, "k", imported(a, 2)...), 2, true)
	c.Add(time.Millisecond)
	wantResult(t, "seven days later", trackOnce(t, e, "k", imported(a, 2)...), 2, false)
	if got := pageviews(t, e, a); got != 4 {
		t.Errorf("%d pageviews, want 4 (the key expired once)", got)
	}
	// The key's new use is remembered from now on.
	wantResult(t, "repeat of the new use", trackOnce(t, e, "k", imported(a, 2)...), 2, true)
}

func TestTrackOnceConcurrent(t *testing.T) {
	c := newClock("2026-11-02T12:00:00Z")
	e, _ := openMem(t, c)
	a := newSite(t, e, "a.example").ID
	const calls = 16
	var wg sync.WaitGroup
	results := make([]engine.TrackResult, calls)
	errs := make([]error, calls)
	for i := range calls {
		wg.Go(func() { results[i], errs[i] = e.TrackOnce(context.Background(), "same", imported(a, 5)...) })
	}
	wg.Wait()
	firsts := 0
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		wantResult(t, "concurrent call", res, 5, res.Repeated)
		if !res.Repeated {
			firsts++
		}
	}
	if firsts != 1 {
		t.Errorf("%d calls counted, want 1", firsts)
	}
	if got := pageviews(t, e, a); got != 5 {
		t.Errorf("%d pageviews, want 5", got)
	}
}

// TestTrackOnceCrash: the key is in the log with its batch; a power loss
// right after the call (its answer lost), with no snapshot, and the repeat
// after the restart counts nothing. After a snapshot and a clean restart
// the key comes from the snapshot.
func TestTrackOnceCrash(t *testing.T) {
	c := newClock("2026-11-02T12:00:00Z")
	fs := vfs.NewCrashableMem()
	e, o := openMem(t, c, func(o *engine.Options) { o.FS = fs })
	a := newSite(t, e, "a.example").ID
	trackOnce(t, e, "k1", imported(a, 3)...)
	clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	e.Close()

	o.FS = clone
	e2, err := engine.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e2.Close() }()
	wantResult(t, "repeat after the crash", trackOnce(t, e2, "k1", imported(a, 3)...), 3, true)
	if got := pageviews(t, e2, a); got != 3 {
		t.Errorf("after the crash: %d pageviews, want 3", got)
	}
	trackOnce(t, e2, "k2", imported(a, 1)...)
	if err := e2.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e2.Close(); err != nil {
		t.Fatal(err)
	}
	e2, err = engine.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k1", "k2"} {
		if res := trackOnce(t, e2, k, imported(a, 3)...); !res.Repeated {
			t.Errorf("%s after a snapshot and a restart: counted again", k)
		}
	}
	if got := pageviews(t, e2, a); got != 4 {
		t.Errorf("after the restart: %d pageviews, want 4", got)
	}
}

// TestTrackOnceLimit: a website holds at most MaxImportKeys live keys; a
// new one past them is refused until the oldest is seven days old, and
// the keys it holds still answer.
func TestTrackOnceLimit(t *testing.T) {
	c := newClock("2026-11-02T12:00:00Z")
	e, _ := openMem(t, c, func(o *engine.Options) { o.MaxImportKeys = 3 })
	a := newSite(t, e, "a.example").ID
	first := c.Now()
	for _, k := range []string{"k1", "k2", "k3"} {
		trackOnce(t, e, k, imported(a, 1)...)
		c.Add(time.Hour)
	}
	_, err := e.TrackOnce(context.Background(), "k4", imported(a, 1)...)
	var full *engine.KeysFullError
	if !errors.As(err, &full) || !errors.Is(err, engine.ErrTooManyKeys) {
		t.Fatalf("fourth key: got %v, want a KeysFullError", err)
	}
	if want := first.Add(engine.KeyTTL); !full.RetryAt.Equal(want) {
		t.Errorf("RetryAt %v, want %v (the oldest key's expiry)", full.RetryAt, want)
	}
	if res := trackOnce(t, e, "k2", imported(a, 1)...); !res.Repeated {
		t.Errorf("a held key past the limit: counted again")
	}
	if got := pageviews(t, e, a); got != 3 {
		t.Errorf("%d pageviews, want 3", got)
	}
	c.Set(first.Add(engine.KeyTTL).Format(time.RFC3339Nano))
	if res := trackOnce(t, e, "k4", imported(a, 1)...); res.Repeated {
		t.Errorf("k4 once k1 expired: repeated")
	}
	if got := pageviews(t, e, a); got != 4 {
		t.Errorf("%d pageviews, want 4", got)
	}
}

// TestTrackOnceKeysInBudget: the keys a website holds are memory the
// budget counts (Metrics.KeyBytes): past Options.MemoryBudget they make
// room by evicting closed days, they go with their website, and a restart
// counts them again from the snapshot.
func TestTrackOnceKeysInBudget(t *testing.T) {
	c := newClock("2026-11-02T12:00:00Z")
	const budget = 128 << 10
	e, o := openMem(t, c, func(o *engine.Options) { o.MemoryBudget = budget })
	a := newSite(t, e, "a.example").ID
	b := newSite(t, e, "b.example").ID
	// Closed days, resident after the snapshot, well under the budget.
	var hist []engine.Hit
	for d := range 10 {
		for i := range 5 {
			hist = append(hist, engine.Hit{Website: a, Time: at("2026-10-20T10:00:00Z").Add(time.Duration(d)*24*time.Hour + time.Duration(i)*time.Minute),
				URL: "/h" + string(rune('a'+i)), Visitor: "h" + string(rune('a'+d)), UserAgent: chromeWin})
		}
	}
	track(t, e, hist...)
	for range 10 {
		pageviews(t, e, a) // loads nothing new: the days are resident
	}
	if err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := e.Metrics()
	if m.KeyBytes != 0 || m.Evicted != 0 || m.ResidentBytes == 0 || m.ResidentBytes+m.StateBytes > budget/2 {
		t.Fatalf("before the keys: %+v; want no keys, nothing evicted, some resident days under half the budget", m)
	}
	// Each key is at least its 16-byte digest and its 8-byte time; enough
	// of them to pass the budget.
	n := budget / 24
	for i := range n {
		trackOnce(t, e, fmt.Sprintf("k%d", i), engine.Hit{Website: b, Time: at("2026-11-02T11:00:00Z"), URL: "/p", Visitor: "v", UserAgent: chromeWin})
	}
	if err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	m = e.Metrics()
	if m.KeyBytes < int64(n*24) {
		t.Errorf("%d keys counted as %d bytes, want at least %d", n, m.KeyBytes, n*24)
	}
	if m.Evicted == 0 {
		t.Errorf("keys of %d bytes past a budget of %d: nothing evicted (%+v)", m.KeyBytes, budget, m)
	}
	held := m.KeyBytes
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2, err := engine.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e2.Close() }()
	if got := e2.Metrics().KeyBytes; got != held {
		t.Errorf("after a restart: %d key bytes, want %d", got, held)
	}
	if err := e2.Owner(1).DeleteWebsite(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got := e2.Metrics().KeyBytes; got != 0 {
		t.Errorf("website deleted: %d key bytes left", got)
	}
}

// gateFS holds every sync of a file it created while closed is set, and
// says on blocked that one is held: a call whose batch is in the log and
// not yet durable stays in flight.
type gateFS struct {
	vfs.FS
	mu      sync.Mutex
	closed  chan struct{} // nil: open
	blocked chan struct{}
}

func (g *gateFS) hold() {
	g.mu.Lock()
	g.closed, g.blocked = make(chan struct{}), make(chan struct{}, 1)
	g.mu.Unlock()
}

func (g *gateFS) open() {
	g.mu.Lock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
	g.mu.Unlock()
}

func (g *gateFS) wait() {
	g.mu.Lock()
	c, b := g.closed, g.blocked
	g.mu.Unlock()
	if c != nil {
		select {
		case b <- struct{}{}:
		default:
		}
		<-c
	}
}

func (g *gateFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.Create(name, cat)
	return gateFile{f, g}, err
}

func (g *gateFS) ReuseForWrite(old, new string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.ReuseForWrite(old, new, cat)
	return gateFile{f, g}, err
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f gateFile) Sync() error     { f.g.wait(); return f.File.Sync() }
func (f gateFile) SyncData() error { f.g.wait(); return f.File.SyncData() }
func (f gateFile) SyncTo(n int64) (bool, error) {
	f.g.wait()
	return f.File.SyncTo(n)
}

// TestKeyResultWaitsForFlight: a repeat sent while the first call is
// being counted (its batch in the log, not yet durable) gets the first
// call's result from KeyResult, which waits for it: the HTTP handler asks
// before reading the repeat's body, so waiting repeats do not hold theirs.
func TestKeyResultWaitsForFlight(t *testing.T) {
	c := newClock("2026-11-02T12:00:00Z")
	g := &gateFS{FS: vfs.NewMem()}
	e, _ := openMem(t, c, func(o *engine.Options) { o.FS = g })
	defer g.open()
	a := newSite(t, e, "a.example").ID
	g.hold()
	first := make(chan engine.TrackResult, 1)
	go func() {
		res, _ := e.TrackOnce(context.Background(), "k", imported(a, 3)...)
		first <- res
	}()
	<-g.blocked // the first call is in flight
	type answer struct {
		res engine.TrackResult
		ok  bool
	}
	repeat := make(chan answer, 1)
	go func() {
		res, ok := e.KeyResult(context.Background(), a, "k")
		repeat <- answer{res, ok}
	}()
	select {
	case ans := <-repeat:
		t.Fatalf("KeyResult answered %+v while the first call was in flight", ans)
	case <-time.After(100 * time.Millisecond):
	}
	g.open()
	wantResult(t, "first", <-first, 3, false)
	ans := <-repeat
	if !ans.ok {
		t.Fatal("KeyResult after the first call: no result")
	}
	wantResult(t, "repeat", ans.res, 3, true)
	// A cancelled wait answers nothing (the handler then reads the body).
	g.hold()
	go func() {
		res, _ := e.TrackOnce(context.Background(), "k2", imported(a, 1)...)
		first <- res
	}()
	<-g.blocked
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if res, ok := e.KeyResult(ctx, a, "k2"); ok {
		t.Errorf("KeyResult past its context: %+v", res)
	}
	g.open()
	<-first
	if got := pageviews(t, e, a); got != 4 {
		t.Errorf("%d pageviews, want 4", got)
	}
}
