package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/snapshot"
)

// TestLazySegments: after a restart, the 17 statistics read days without
// their segments (decoding them is most of the cost of reading a day). A
// segment query, a late hit on such a day and a hit continuing a visit
// that began on one then read the segments and set them, and every answer
// equals that of an engine that never restarted and got the same hits. The
// bytes charged for resident days follow the segments set.
func TestLazySegments(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC) // a Tuesday: one weekly salt period to the 15th
	now := base.AddDate(0, 0, 10)                         // every day closed
	o := Options{SaltPeriod: SaltWeek, QueryCache: -1, Now: func() time.Time { return now }}
	fs := vfs.NewMem()
	e, site := hardEngine(t, fs, o)
	ref, refSite := hardEngine(t, vfs.NewMem(), o)
	defer func() { e.Close() }()
	defer ref.Close()
	if site != refSite {
		t.Fatalf("site ids %d and %d", site, refSite)
	}
	track := func(hs ...Hit) {
		t.Helper()
		for _, x := range []*Engine{e, ref} {
			if _, err := x.Track(ctx, hs...); err != nil {
				t.Fatal(err)
			}
		}
	}
	var hs []Hit
	for d := range 5 {
		day := base.AddDate(0, 0, d)
		for v := range 30 {
			h := hardHit(site, day.Add(time.Duration(8*60+v*7)*time.Minute), fmt.Sprint("v", v), fmt.Sprintf("/p%d", v%6))
			if v%4 == 0 {
				h.Referrer = "https://www.google.com/"
			}
			hs = append(hs, h, hardHit(site, h.Time.Add(3*time.Minute), h.Visitor, "/next"))
		}
		// A visit begun at 23:50 of the day, continued after midnight.
		hs = append(hs, hardHit(site, day.Add(23*time.Hour+50*time.Minute), "night", "/late"))
	}
	track(hs...)
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	reopen := func() {
		t.Helper()
		var err error
		if e, err = Open(&Options{FS: fs, Dir: "data", SnapshotEvery: -1, SaltPeriod: SaltWeek, QueryCache: -1, Now: o.Now}); err != nil {
			t.Fatal(err)
		}
	}
	reopen()
	from, to := buckets.DateFromTime(base), buckets.DateFromTime(base)+4
	stats := func(what string) {
		t.Helper()
		for _, name := range StatNames() {
			q := StatQuery{Website: site, Name: name, From: from, To: to}
			got, err := e.Unscoped().Stat(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Unscoped().Stat(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: Stat(%s) differs (-want +got):\n%s", what, name, diff)
			}
		}
	}
	query := func(what, body string) {
		t.Helper()
		q, err := ParseQuery([]byte(`{"site_id":"hard.example","date_range":["2026-11-10","2026-11-14"],` + body + `}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Unscoped().Query(ctx, site, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Unscoped().Query(ctx, site, q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: query %s differs (-want +got):\n%s", what, body, diff)
		}
	}
	// lacking counts the resident days without segments, and checks the
	// bytes charged for resident days against their sizes.
	lacking := func() (n int) {
		t.Helper()
		s := e.sites[site]
		sh := e.shardOf(site)
		sh.mu.Lock()
		defer sh.mu.Unlock()
		var sum int64
		for _, ent := range s.state.days {
			if ent.frozen {
				sum += int64(ent.size)
				want := ent.day.SizeBytes()
				if ent.seg != nil {
					want += ent.seg.Size
				}
				if ent.size != want {
					t.Errorf("a day charged %d bytes, holds %d", ent.size, want)
				}
			}
			if ent.seg == nil {
				n++
			}
		}
		sum += s.state.rollups.Bytes()
		if got := e.counters.resident.Load(); got != sum {
			t.Errorf("resident bytes: counted %d, days and rollups hold %d", got, sum)
		}
		return n
	}

	stats("after a restart")
	if n := lacking(); n != 5 {
		t.Errorf("%d days resident without segments after the 17 statistics, want 5", n)
	}
	query("segments read", `"metrics":["visitors","visits","bounce_rate","pageviews"],"dimensions":["visit:source"]`)
	if n := lacking(); n != 0 {
		t.Errorf("%d days without segments after a segment query", n)
	}

	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	reopen()
	stats("after a second restart")
	// A late hit on a day without segments, and one continuing, on the
	// 13th, the visit begun at 23:50 of the 12th (the same weekly salt).
	night := base.AddDate(0, 0, 2).Add(23*time.Hour + 50*time.Minute)
	track(hardHit(site, base.AddDate(0, 0, 1).Add(15*time.Hour), "late", "/late-hit"),
		hardHit(site, night.Add(15*time.Minute), "night", "/after-midnight"))
	if n := lacking(); n != 2 {
		t.Errorf("%d days without segments after hits on the 11th and 13th continuing a visit of the 12th, want 2", n)
	}
	stats("after late hits")
	query("after late hits", `"metrics":["visitors","visits","pageviews","visit_duration"],"dimensions":["event:page"]`)
	query("after late hits, by day", `"metrics":["visitors","visits","bounce_rate"],"dimensions":["time:day"],"filters":[["is","visit:source",["Google"]]]`)
	lacking()
}

// TestReadDaysDamaged: reading many days at once decodes them in another
// goroutine (readDays); a damaged day among them fails the query with an
// error naming it, for the statistics and for segment queries, and the
// days around it still answer.
func TestReadDaysDamaged(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	now := base.AddDate(0, 0, 40)
	fs := vfs.NewMem()
	e, site := hardEngine(t, fs, Options{QueryCache: -1, Now: func() time.Time { return now }})
	var hs []Hit
	const days = 3 * readDaysInTurn
	for d := range days {
		for v := range 5 {
			hs = append(hs, hardHit(site, base.AddDate(0, 0, d).Add(time.Duration(10+v)*time.Hour), fmt.Sprint("v", v), "/p"))
		}
	}
	if _, err := e.Track(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	bad := buckets.DateFromTime(base) + days/2
	s, err := snapshot.Open(&snapshot.Options{FS: fs, Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := s.Day(site, int32(bad))
	if err == nil {
		err = s.WriteSnapshot(&snapshot.Snapshot{Days: []snapshot.DayRecord{{Website: site, Date: int32(bad), Data: data[:len(data)/2]}}})
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	open := func() *Engine {
		e, err := Open(&Options{FS: fs, Dir: "data", SnapshotEvery: -1, QueryCache: -1, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	first := buckets.DateFromTime(base)
	// The decoder's own error (the value is cut inside its envelope), not
	// the safety net's "listed but not in the store".
	want := fmt.Sprintf("website %d day %v: day envelope", site, bad)
	e = open()
	_, err = e.Unscoped().Stat(ctx, StatQuery{Website: site, Name: "page", From: first, To: first + days - 1})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Stat over %d days with %v damaged: %v, want an error naming the day", days, bad, err)
	}
	e.Close()
	e = open()
	defer e.Close()
	q, err := ParseQuery([]byte(fmt.Sprintf(`{"site_id":"hard.example","date_range":["%v","%v"],"metrics":["visitors"]}`, first, first+days-1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Unscoped().Query(ctx, site, q); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Query over %d days with %v damaged: %v, want an error naming the day", days, bad, err)
	}
	p, err := e.Unscoped().Stat(ctx, StatQuery{Website: site, Name: "pageviews", From: first, To: bad - 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got uint64
	for _, r := range p.Rows {
		got += r.Count
	}
	if got != uint64(5*(bad-first)) {
		t.Errorf("pageviews of the %d days before the damaged one: %d, want %d", bad-first, got, 5*int(bad-first))
	}
}

// TestReadDaysInParts reads the same stored range in one goroutine and in
// up to 8 parts (GOMAXPROCS 1 and 8): the statistics and a segment query
// over it are the same, so no day is missed or read twice at a part's
// boundary.
func TestReadDaysInParts(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	now := base.AddDate(0, 0, 200)
	fs := vfs.NewMem()
	e, site := hardEngine(t, fs, Options{QueryCache: -1, Now: func() time.Time { return now }})
	const days = 8*readDaysInTurn + 5 // 8 parts of at least 16 days, unevenly
	var hs []Hit
	for d := range days {
		for v := range 1 + d%4 {
			hs = append(hs, hardHit(site, base.AddDate(0, 0, d).Add(time.Duration(8+v)*time.Hour), fmt.Sprint("v", v+d%7), fmt.Sprintf("/p%d", (d+v)%9)))
		}
	}
	if _, err := e.Track(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	first := buckets.DateFromTime(base)
	q, err := ParseQuery([]byte(fmt.Sprintf(`{"site_id":"hard.example","date_range":["%v","%v"],"metrics":["visitors","pageviews"],"dimensions":["event:page"]}`, first, first+days-1)))
	if err != nil {
		t.Fatal(err)
	}
	type answers struct {
		Pages, Pageviews Page
		Query            QueryResult
	}
	read := func(procs int) answers {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var a answers
		for _, fresh := range []bool{true, false} { // buckets only, then segments
			e, err := Open(&Options{FS: fs, Dir: "data", SnapshotEvery: -1, QueryCache: -1, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if fresh {
				if a.Pages, err = e.Unscoped().Stat(ctx, StatQuery{Website: site, Name: "page", From: first, To: first + days - 1, PerPage: 100}); err == nil {
					a.Pageviews, err = e.Unscoped().Stat(ctx, StatQuery{Website: site, Name: "pageviews", From: first, To: first + days - 1, PerPage: 1000})
				}
			} else {
				a.Query, err = e.Unscoped().Query(ctx, site, q)
			}
			if cerr := e.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	one, parts := read(1), read(8)
	if diff := cmp.Diff(one, parts); diff != "" {
		t.Errorf("in parts, the answers differ from those read in one goroutine (-one +parts):\n%s", diff)
	}
	total := 0
	for _, r := range one.Pageviews.Rows {
		total += int(r.Count)
	}
	if total != len(hs) || len(one.Pageviews.Rows) != days {
		t.Errorf("%d pageviews over %d days, want %d over %d", total, len(one.Pageviews.Rows), len(hs), days)
	}
}
