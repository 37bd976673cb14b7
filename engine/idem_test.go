package engine_test

import (
	"context"
	"errors"
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
