package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
)

// TestTrackOnceResumesParts (SPEC §3.4 "Retries", §13): a keyed call of
// more hits than a part holds is logged part by part; cut short by a
// failed sync after two parts were logged and a crash that loses the
// third, its repeat (after a snapshot and a restart, so the partial key
// goes through the meta record) counts the rest only, answers the whole
// call's counts, and a repeat after that counts nothing. A part all of
// whose hits are dropped (bots) logs nothing; its drops travel with the
// next part's mark.
func TestTrackOnceResumesParts(t *testing.T) {
	defer func(n int) { partHits = n }(partHits)
	partHits = 3
	left := &atomic.Int64{}
	left.Store(-1)
	crash := vfs.NewCrashableMem()
	// Every sync of the log fails once left syncs are spent (negative:
	// never).
	fail := func() bool { return left.Load() >= 0 && left.Add(-1) < 0 }
	e, site := hardEngine(t, syncFailFS{crash, fail}, Options{})
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	// Parts: 3 humans | 3 bots | 3 humans | 1 human.
	// How many syncs of the log one batch takes here (Pebble's WAL file
	// and its own bookkeeping).
	if _, err := e.Track(ctx, hardHit(site, day.Add(-time.Hour), "warm", "/w")); err != nil {
		t.Fatal(err)
	}
	left.Store(1 << 20)
	if _, err := e.Track(ctx, hardHit(site, day.Add(-time.Hour), "warm", "/w")); err != nil {
		t.Fatal(err)
	}
	syncsPerBatch := 1<<20 - left.Load()
	t.Logf("%d syncs a batch", syncsPerBatch)
	var hits []Hit
	for i := range 10 {
		h := hardHit(site, day.Add(time.Duration(i)*time.Minute), "v"+string(rune('a'+i)), "/p")
		if i >= 3 && i < 6 {
			h.UserAgent = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
		}
		hits = append(hits, h)
	}
	left.Store(syncsPerBatch * 2) // parts 0 and 2 sync; part 3's sync fails
	res, err := e.TrackOnce(ctx, "k", hits...)
	if !errors.Is(err, ErrLogFailed) || res.Accepted != 6 || res.Dropped[DropBot] != 3 {
		t.Fatalf("the call cut short: accepted %d, bots %d, %v; want 6, 3, ErrLogFailed", res.Accepted, res.Dropped[DropBot], err)
	}
	e.Close() // fails: the log is broken
	o := Options{FS: crash.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}), Dir: "data", SnapshotEvery: -1, Now: e.opts.Now}
	e, err = Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	pv := func() uint64 {
		t.Helper()
		tot, err := e.Unscoped().Totals(ctx, site, buckets.DateFromTime(day), buckets.DateFromTime(day))
		if err != nil {
			t.Fatal(err)
		}
		return tot.Pageviews
	}
	if got := pv(); got != 6+2 {
		t.Fatalf("after the crash: %d pageviews, want the 6 of the parts synced", got-2)
	}
	if _, ok := e.KeyResult(ctx, site, "k"); ok {
		t.Errorf("KeyResult of a call cut short: found, want not (its repeat resumes it)")
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if e, err = Open(&o); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err = e.TrackOnce(ctx, "k", hits...)
	if err != nil || res.Accepted != 7 || res.Dropped[DropBot] != 3 || res.Repeated {
		t.Errorf("the repeat: accepted %d, bots %d, repeated %v, %v; want 7, 3, false (the whole call's counts)", res.Accepted, res.Dropped[DropBot], res.Repeated, err)
	}
	if got := pv(); got != 7+2 {
		t.Errorf("after the repeat: %d pageviews, want 7", got-2)
	}
	res, err = e.TrackOnce(ctx, "k", hits...)
	if err != nil || res.Accepted != 7 || res.Dropped[DropBot] != 3 || !res.Repeated {
		t.Errorf("a second repeat: accepted %d, bots %d, repeated %v, %v; want 7, 3, true", res.Accepted, res.Dropped[DropBot], res.Repeated, err)
	}
	if r, ok := e.KeyResult(ctx, site, "k"); !ok || r.Accepted != 7 || r.Dropped[DropBot] != 3 {
		t.Errorf("KeyResult of the whole call: %+v, %v; want 7 accepted, 3 bots", r, ok)
	}
	if got := pv(); got != 7+2 {
		t.Errorf("after the second repeat: %d pageviews, want 7", got-2)
	}
}
