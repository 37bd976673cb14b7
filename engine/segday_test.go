package engine

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
)

// sampleSegDay is a small day with every kind of row: visits, pageviews,
// an event with props and revenue, an orphan event, an engagement report.
func sampleSegDay() *segments.Day {
	d := segments.NewDay()
	var attr [segments.NumAttrs]uint32
	for i := range attr {
		attr[i], _ = d.ID([]string{"Google", "google.com/search", "Organic Search", "cpc", "DE", "Chrome", "120.0"}[i%7], segments.CatVisit, 0)
	}
	ms := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixMilli()
	page, _ := d.ID("/pricing", segments.CatPath, 0)
	host, _ := d.ID("example.com", segments.CatHost, 0)
	v := d.AddVisit(20410, 7, ms, &attr, 2950159, page, host)
	d.VPageviews[v] = 2
	d.AddHit(&segments.Hit{Visit: v, Ms: ms, Kind: segments.KindPageview, Page: page, Host: host, Scroll: -1})
	d.AddHit(&segments.Hit{Visit: v, Ms: ms + 500, Kind: segments.KindPageview, Page: page, Host: host, Scroll: -1})
	name, _ := d.ID("Signup", segments.CatEvent, 0)
	val, _ := d.ID("5.5", segments.CatEvent, 0)
	unit, _ := d.ID("USD", segments.CatEvent, 0)
	k, _ := d.ID("plan", segments.CatPropKey, 0)
	pv, _ := d.ID("pro", segments.CatPropVal, 0)
	d.AddHit(&segments.Hit{Visit: v, Ms: ms + 1000, Kind: segments.KindEvent, Name: name, Value: val, Unit: unit, Page: page, Host: host, Scroll: -1, Props: []uint32{k, pv}})
	d.AddHit(&segments.Hit{Visit: segments.NoVisit, Ms: ms - 5000, Kind: segments.KindEvent, Name: name, Page: page, Scroll: -1})
	d.AddHit(&segments.Hit{Visit: v, Ms: ms + 9000, Kind: segments.KindEngagement, Page: page, Engaged: 8000, Scroll: 75})
	d.VEnd[v], d.VLastPV[v], d.VFlags[v] = ms+1000, ms+500, segments.VisitInteractive|segments.VisitFirstInteractive
	return d
}

// FuzzSegDay: what decodes can be queried (FuzzDay in package segments
// checks the decoding itself).
func FuzzSegDay(f *testing.F) {
	enc := sampleSegDay().AppendBinary(nil)
	f.Add(enc)
	f.Add(enc[:len(enc)-1])
	f.Add(segments.NewDay().AppendBinary(nil))
	g := sampleSegDay()
	g.Compact()
	f.Add(g.AppendBinary(nil))
	f.Add([]byte{segments.Version, 0xff, 0xff, 0xff, 0x7f})
	f.Add(highRatioSegDay(5000).AppendBinary(nil)) // compresses better than 64:1
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := segments.DecodeDay(b)
		if err != nil {
			return
		}
		for _, body := range []string{
			`{"site_id":"x","metrics":["visitors","visits","bounce_rate","visit_duration","events","time_on_page"],"date_range":["1970-01-01","2069-12-31"],"filters":[["is","event:page",["/pricing"]]]}`,
			`{"site_id":"x","metrics":["visitors","events"],"date_range":["1970-01-01","2069-12-31"],"dimensions":["time:day","event:props:plan","visit:city","event:goal"]}`,
		} {
			q, err := ParseQuery([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			r, err := q.Resolve(QuerySite{Goals: []string{"Signup"}})
			if err != nil {
				t.Fatal(err)
			}
			goals := &goalSet{Goals: []Goal{{ID: 1, DisplayName: "Signup", EventName: "Signup", Currency: "USD"}}}
			if err := goals.compile(); err != nil {
				t.Fatal(err)
			}
			p, err := newPlan(&r, goals)
			if err != nil {
				t.Fatal(err)
			}
			p.scanDay(d, 0, false)
			rows := p.rows()
			// The partial sort from 4 rows (n < len/2), the full one below.
			p.sortRows(rows, max(len(rows)/3, min(len(rows), 1)))
		}
	})
}

// highRatioSegDay is a day of n identical pageviews of one visit in one
// second: its columns compress far better than 64:1.
func highRatioSegDay(n int) *segments.Day {
	d := segments.NewDay()
	var attr [segments.NumAttrs]uint32
	ms := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixMilli()
	page, _ := d.ID("/", segments.CatPath, 0)
	host, _ := d.ID("example.com", segments.CatHost, 0)
	v := d.AddVisit(20410, 1, ms, &attr, 0, page, host)
	for range n {
		d.AddHit(&segments.Hit{Visit: v, Ms: ms, Kind: segments.KindPageview, Page: page, Host: host, Scroll: -1})
	}
	d.VPageviews[v] = uint32(n)
	d.VFlags[v] = segments.VisitFirstInteractive
	if n > 1 {
		d.VFlags[v] |= segments.VisitInteractive
	}
	d.Compact()
	return d
}

// TestSegDayHighRatio: a day whose columns compress better than 64:1 (many
// identical hits) decodes through the engine: snapshot, reopen, query,
// track (TestDayHighRatio in package segments decodes it alone). (The decoder refused an announced length over 64 times
// the compressed size: the website's queries and tracking failed.)
func TestSegDayHighRatio(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e, site := hardEngine(t, fs, Options{Now: clock})
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	const n = 30_000
	hs := make([]Hit, 1000)
	for range n / len(hs) {
		for i := range hs {
			hs[i] = hardHit(site, at, "v", "/p")
		}
		if _, err := e.Track(ctx, hs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil { // snapshots the closed day
		t.Fatal(err)
	}
	e, err := Open(&Options{FS: fs, Dir: "data", SnapshotEvery: -1, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	data, err := e.store.Day(site, int32(buckets.DateFromTime(at)))
	if err != nil {
		t.Fatal(err)
	}
	sd, err := decodeDay(data, true)
	if err != nil {
		t.Fatalf("decode the stored day: %v", err)
	}
	if sd.seg.Hits() != n {
		t.Errorf("stored day has %d hits, want %d", sd.seg.Hits(), n)
	}
	q, err := ParseQuery([]byte(`{"site_id":"hard.example","date_range":"all","metrics":["visitors","visits","pageviews"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Unscoped().Query(ctx, site, q)
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	if diff := cmp.Diff([]any{int64(1), int64(1), int64(n)}, res.Results[0].Metrics); diff != "" {
		t.Errorf("query: mismatch (-want +got):\n%s", diff)
	}
	if _, err := e.Track(ctx, hardHit(site, at.Add(time.Minute), "v", "/p")); err != nil {
		t.Fatalf("track into the day: %v", err)
	}
}
