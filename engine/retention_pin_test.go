package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
)

// TestRetentionDropsPinnedDay: a day retention drops while something holds
// it pinned (a query between reading the store and taking the lock, or a
// logged hit waiting to be applied) leaves memory too. Before, it stayed
// with its old content: queries counted it, and a write after a time zone
// change moved the cut back kept it for good (and a restart changed the
// numbers). Found in review.
func TestRetentionDropsPinnedDay(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 7, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	fs := vfs.NewMem()
	o := Options{Now: clock, Retention: 43, SaltPeriod: SaltMonth}
	e, site := hardEngine(t, fs, o)
	berlin, ny := "Europe/Berlin", "America/New_York"
	if _, err := e.Unscoped().UpdateWebsite(ctx, site, WebsiteInput{Timezone: &berlin}); err != nil {
		t.Fatal(err)
	}
	D, _ := buckets.ParseDate("2026-06-09")
	if _, err := e.Track(ctx,
		hardHit(site, time.Date(2026, 6, 9, 12, 0, 0, 0, time.UTC), "v1", "https://hard.example/old"),
		hardHit(site, time.Date(2026, 7, 22, 12, 0, 0, 0, time.UTC), "v2", "https://hard.example/new")); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	pvs := func(e *Engine) uint64 {
		tot, err := e.Unscoped().Totals(ctx, site, D, D)
		if err != nil {
			t.Fatal(err)
		}
		return tot.Pageviews
	}
	// Berlin's midnight: cut 2026-06-10. A concurrent query has D pinned.
	mu.Lock()
	now = time.Date(2026, 7, 22, 23, 30, 0, 0, time.UTC)
	mu.Unlock()
	snapshotPinned(t, e, site, D)
	if got := pvs(e); got != 0 {
		t.Errorf("after the drop: %d pageviews on %v, want 0", got, D)
	}
	// The zone moves the cut back to 2026-06-09; an import into D.
	if _, err := e.Unscoped().UpdateWebsite(ctx, site, WebsiteInput{Timezone: &ny}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Track(ctx, hardHit(site, time.Date(2026, 6, 9, 13, 0, 0, 0, time.UTC), "v3", "https://hard.example/new")); err != nil {
		t.Fatal(err)
	}
	if got := pvs(e); got != 1 {
		t.Errorf("after an import into the day: %d pageviews, want 1 (only the new hit)", got)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o.FS, o.Dir, o.SnapshotEvery = fs, "data", -1
	e2, err := Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if got := pvs(e2); got != 1 {
		t.Errorf("after restart: %d pageviews, want 1", got)
	}
}

// TestRetentionDropsPinnedSealedDay: the same with a day whose rows were
// sealed when it was today. Before, DropDays deleted its parts while the
// stale pinned entry (parts = 1) was written back and listed, and every
// segments query of the day then failed, also after a restart.
func TestRetentionDropsPinnedSealedDay(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 6, 9, 14, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	setNow := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	fs := vfs.NewMem()
	o := Options{Now: clock, Retention: 43, SaltPeriod: SaltMonth}
	e, site := hardEngine(t, fs, o)
	e.sealBytes = 1
	berlin, ny := "Europe/Berlin", "America/New_York"
	if _, err := e.Unscoped().UpdateWebsite(ctx, site, WebsiteInput{Timezone: &berlin}); err != nil {
		t.Fatal(err)
	}
	D, _ := buckets.ParseDate("2026-06-09")
	if _, err := e.Track(ctx, hardHit(site, time.Date(2026, 6, 9, 12, 0, 0, 0, time.UTC), "v1", "https://hard.example/old")); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil { // seals D's rows: part 0
		t.Fatal(err)
	}
	setNow(time.Date(2026, 7, 22, 12, 0, 0, 0, time.UTC))
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	setNow(time.Date(2026, 7, 22, 23, 30, 0, 0, time.UTC))
	sh := e.shardOf(site)
	sh.mu.Lock()
	parts := e.sites[site].state.days[D].seg.Parts
	sh.mu.Unlock()
	if parts == 0 {
		t.Fatal("setup: D not sealed")
	}
	snapshotPinned(t, e, site, D)
	if _, err := e.Unscoped().UpdateWebsite(ctx, site, WebsiteInput{Timezone: &ny}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Track(ctx, hardHit(site, time.Date(2026, 6, 9, 13, 0, 0, 0, time.UTC), "v3", "https://hard.example/new")); err != nil {
		t.Fatal(err)
	}
	if _, err := sealAnswersErr(e, site, "2026-06-09", "2026-06-09"); err != nil {
		t.Errorf("query: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o.FS, o.Dir, o.SnapshotEvery = fs, "data", -1
	e2, err := Open(&o)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer e2.Close()
	if _, err := sealAnswersErr(e2, site, "2026-06-09", "2026-06-09"); err != nil {
		t.Errorf("query after restart: %v", err)
	}
}

// snapshotPinned takes a snapshot while day d of site is pinned, as a query
// between reading the store and taking the lock (or a logged hit waiting to
// be applied) holds it.
func snapshotPinned(t *testing.T, e *Engine, site uint32, d buckets.Date) {
	t.Helper()
	sh := e.shardOf(site)
	sh.mu.Lock()
	ent := e.sites[site].state.days[d]
	ent.pins++
	sh.mu.Unlock()
	if err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	sh.mu.Lock()
	ent.pins--
	sh.mu.Unlock()
}
