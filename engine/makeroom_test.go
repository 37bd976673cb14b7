package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
)

// TestImportsInARowMakeRoom (issue #38 row 7 in a row, SPEC §13): under a
// memory budget, imports in a row, each into a past day of its own, never
// leave more of past days open (unfrozen, outside the budget) than half
// the budget and two calls' days (a call looks only once partHits hits
// came since the last look: a call of fewer brings a second day): once calls of more than one hit brought
// partHits hits, the next one looks, and waits for a snapshot (which
// freezes the days and evicts them) if the open days before today hold
// more than half the budget. Calls of several parts and calls of one part (the web app's
// upload chunks, the command line's) alike. No background snapshot runs
// here (SnapshotEvery -1); without MakeRoom the open days grew by a day a
// call. Every hit is counted.
func TestImportsInARowMakeRoom(t *testing.T) {
	for _, c := range []struct {
		name          string
		calls, events int
	}{
		{"calls of three parts", 6, 2_500},
		{"calls of one part", 10, 600},
	} {
		t.Run(c.name, func(t *testing.T) { importsInARow(t, c.calls, c.events) })
	}
}

func importsInARow(t *testing.T, calls, events int) {
	now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }, MemoryBudget: roomBudget})
	defer e.Close()
	importCalls(t, e, site, now, calls, events, true)
	// Each call's day is more than half the budget: every look after the
	// first call (a look every partHits hits) took a snapshot. Counted
	// apart from the estimate the bound above reads.
	if looks := (calls - 1) / ((partHits + events - 1) / events); e.Metrics().Snapshots < uint64(looks) {
		t.Errorf("%d snapshots over %d calls, want at least %d (a look every %d hits, each over half the budget)", e.Metrics().Snapshots, calls, looks, partHits)
	}
	if err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	from, to := buckets.DateFromTime(now.AddDate(0, 0, -1-calls)), buckets.DateFromTime(now)
	tot, err := e.Unscoped().Totals(context.Background(), site, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(calls * events); tot.Pageviews != want {
		t.Errorf("%d pageviews counted, want %d", tot.Pageviews, want)
	}
}

// roomBudget is the memory budget of the MakeRoom tests.
const roomBudget = 1 << 20

// importCalls makes calls calls of events new values each to site (new
// pages, and new referrers too when referrers), call c into the day 2+c
// days before now, and checks after each that the open days before today
// hold at most half the budget and two calls' days (a tenth more: the
// calls' values are not all of one length).
func importCalls(t *testing.T, e *Engine, site uint32, now time.Time, calls, events int, referrers bool) {
	t.Helper()
	pad := strings.Repeat("x", 200)
	var first int64
	for c := range calls {
		day := now.AddDate(0, 0, -2-c)
		hits := make([]Hit, events)
		for i := range hits {
			u := fmt.Sprintf("c%d-%d", c, i)
			h := hardHit(site, day, fmt.Sprint("v", i%300), "/imp/"+u+"/"+pad)
			if referrers {
				h.Referrer = "https://" + u + ".example/" + pad
			}
			hits[i] = h
		}
		res, err := e.Track(context.Background(), hits...)
		if err != nil || res.Accepted != events {
			t.Fatalf("call %d: %+v, %v", c, res, err)
		}
		_, all := e.openBytes()
		past := e.pastOpenBytes()
		t.Logf("after call %d: open days %d bytes, before today %d, snapshots %d", c, all, past, e.Metrics().Snapshots)
		if c == 0 {
			first = past
			continue
		}
		if bound := roomBudget/2 + 2*first + first/10; past > bound {
			t.Errorf("after call %d: %d bytes of open days before today, want at most %d (half the budget and two calls' days of %d)", c, past, bound, first)
		}
	}
}

// TestMakeRoomToday: calls of one hit (live tracking) never wait for a
// snapshot, however much they write; today's open day, which a snapshot
// does not take out of memory, never makes an import wait, however large,
// nor hides the past days' growth from MakeRoom; and imports go on waiting
// at half the budget once its website is deleted.
func TestMakeRoomToday(t *testing.T) {
	const budget = roomBudget
	now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	e, a := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }, MemoryBudget: budget})
	defer e.Close()
	ctx := context.Background()
	w, err := e.Unscoped().Website(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	d := "other.example"
	b, err := e.Owner(w.Account).CreateWebsite(ctx, WebsiteInput{Domain: &d})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 200)
	one := func(site uint32, at time.Time, i int) {
		h := hardHit(site, at, fmt.Sprint("v", i%300), fmt.Sprintf("/live/%d/%s", i, pad))
		if res, err := e.Track(ctx, h); err != nil || res.Accepted != 1 {
			t.Fatalf("one hit: %+v, %v", res, err)
		}
	}
	for i := range 3_000 {
		one(a, now.AddDate(0, 0, -3), i)
	}
	if m := e.Metrics(); m.Snapshots != 0 || m.OpenBytes <= budget/2 {
		t.Fatalf("3,000 calls of one hit into a past day: %d snapshots (want 0: live tracking never waits), %d bytes of open days", m.Snapshots, m.OpenBytes)
	}
	for i := range 3_000 {
		one(a, now, i)
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if m := e.Metrics(); m.OpenBytes < budget/2 {
		t.Fatalf("today's open day: %d bytes, want at least half the budget (else the test shows nothing)", m.OpenBytes)
	}
	if e.MakeRoom() {
		t.Fatal("MakeRoom took a snapshot for today's open day, which a snapshot leaves open: every import would wait for one")
	}
	importCalls(t, e, b.ID, now, 6, 600, false)
	if err := e.Unscoped().DeleteWebsite(ctx, a); err != nil {
		t.Fatal(err)
	}
	importCalls(t, e, b.ID, now.AddDate(0, 0, -10), 6, 600, false)
}

// TestMakeRoomMidwaySnapshot: a snapshot that froze an import's day
// midway (the background one, running beside it) does not hide the day
// from the next import's look: the rest of the import thawed it, its
// frozen copy left the budget, and the whole day is open again, outside
// the budget. (Counting only what came after the thaw let two such days
// be open at once: RSS +87.6 MiB for 8 imports in a row, the hostile
// test.)
func TestMakeRoomMidwaySnapshot(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }, MemoryBudget: roomBudget})
	defer e.Close()
	ctx := context.Background()
	day := now.AddDate(0, 0, -5)
	pad := strings.Repeat("x", 200)
	hits := func(from, to int) []Hit {
		hs := make([]Hit, 0, to-from)
		for i := from; i < to; i++ {
			h := hardHit(site, day, fmt.Sprint("v", i%300), fmt.Sprintf("/imp/%d/%s", i, pad))
			h.Referrer = fmt.Sprintf("https://r%d.example/%s", i, pad)
			hs = append(hs, h)
		}
		return hs
	}
	if _, err := e.Track(ctx, hits(0, 2_400)...); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil { // midway
		t.Fatal(err)
	}
	if _, err := e.Track(ctx, hits(2_400, 2_500)...); err != nil {
		t.Fatal(err)
	}
	before := e.Metrics()
	if before.OpenBytes <= roomBudget/2 {
		t.Fatalf("the day holds %d bytes, want more than half the budget (else the test shows nothing)", before.OpenBytes)
	}
	if !e.MakeRoom() || e.Metrics().Snapshots == before.Snapshots {
		t.Errorf("the next import's look took no snapshot of an open past day of %d bytes (budget %d)", before.OpenBytes, roomBudget)
	}
}

// TestMakeRoomCountsWhole: a past day counts whole, its buckets with its
// segments, as a frozen day counts in the budget: an import's day whose
// segments alone are under half the budget, but not with its buckets,
// makes the next import's look take a snapshot.
func TestMakeRoomCountsWhole(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }, MemoryBudget: roomBudget})
	defer e.Close()
	importCalls(t, e, site, now, 1, 600, true)
	m := e.Metrics()
	if m.OpenSegmentBytes > roomBudget/2 || m.OpenBytes <= roomBudget/2 {
		t.Fatalf("the day: %d bytes of segments, %d whole, want the segments under half the budget (%d) and the whole over it (else the test shows nothing)", m.OpenSegmentBytes, m.OpenBytes, roomBudget/2)
	}
	if !e.MakeRoom() {
		t.Errorf("no snapshot for a past day of %d bytes, over half the budget", m.OpenBytes)
	}
}
