package engine

import (
	"context"
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
)

// sampleSegDay is a small day with every kind of row: visits, pageviews,
// an event with props and revenue, an orphan event, an engagement report.
func sampleSegDay() *segDay {
	d := newSegDay()
	var attr [numVA]uint32
	for i := range attr {
		attr[i], _ = d.id([]string{"Google", "google.com/search", "Organic Search", "cpc", "DE", "Chrome", "120.0"}[i%7], catVisit, 0)
	}
	ms := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixMilli()
	page, _ := d.id("/pricing", catPath, 0)
	host, _ := d.id("example.com", catHost, 0)
	v := d.addVisit(20410, 7, ms, &attr, 2950159, page, host)
	d.vPageviews[v] = 2
	d.addHit(&segHit{visit: v, ms: ms, kind: hkPageview, page: page, host: host, scroll: -1})
	d.addHit(&segHit{visit: v, ms: ms + 500, kind: hkPageview, page: page, host: host, scroll: -1})
	name, _ := d.id("Signup", catEvent, 0)
	val, _ := d.id("5.5", catEvent, 0)
	unit, _ := d.id("USD", catEvent, 0)
	k, _ := d.id("plan", catPropKey, 0)
	pv, _ := d.id("pro", catPropVal, 0)
	d.addHit(&segHit{visit: v, ms: ms + 1000, kind: hkEvent, name: name, value: val, unit: unit, page: page, host: host, scroll: -1, props: []uint32{k, pv}})
	d.addHit(&segHit{visit: noVisit, ms: ms - 5000, kind: hkEvent, name: name, page: page, scroll: -1})
	d.addHit(&segHit{visit: v, ms: ms + 9000, kind: hkEngagement, page: page, engaged: 8000, scroll: 75})
	d.vEnd[v], d.vLastPV[v], d.vFlags[v] = ms+1000, ms+500, vfInteractive|vfFirstInteractive
	return d
}

func TestSegDayRoundTrip(t *testing.T) {
	d := sampleSegDay()
	got, err := decodeSegDay(d.appendBinary(nil))
	if err != nil {
		t.Fatal(err)
	}
	d.ids, d.size, got.size = nil, 0, 0
	got.dm = nil // what queries keep of it, not its rows
	if !reflect.DeepEqual(d, got) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, d)
	}
	// A closed day: hits ordered by visit, encoded by visit.
	g := sampleSegDay()
	g.compact()
	if !g.grouped {
		t.Fatal("compact left the hits unordered")
	}
	got, err = decodeSegDay(g.appendBinary(nil))
	if err != nil {
		t.Fatal(err)
	}
	g.ids, g.size, got.size = nil, 0, 0
	if !reflect.DeepEqual(g, got) {
		t.Errorf("round trip of a closed day:\n got %+v\nwant %+v", got, g)
	}
	c := d.clone()
	c.vPageviews[0]++
	if d.vPageviews[0] == c.vPageviews[0] {
		t.Error("clone shares the visit columns")
	}
}

// FuzzSegDay: decoding never panics nor allocates beyond the input's
// bounds; what decodes re-encodes to the same day and can be queried.
func FuzzSegDay(f *testing.F) {
	enc := sampleSegDay().appendBinary(nil)
	f.Add(enc)
	f.Add(enc[:len(enc)-1])
	f.Add(newSegDay().appendBinary(nil))
	g := sampleSegDay()
	g.compact()
	f.Add(g.appendBinary(nil))
	f.Add([]byte{segVersion, 0xff, 0xff, 0xff, 0x7f})
	f.Add(highRatioSegDay(5000).appendBinary(nil)) // compresses better than 64:1
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeSegDay(b)
		if err != nil {
			return
		}
		d2, err := decodeSegDay(d.appendBinary(nil))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		d.size, d2.size = 0, 0
		if !reflect.DeepEqual(d, d2) {
			t.Fatal("re-encoding changed the day")
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
func highRatioSegDay(n int) *segDay {
	d := newSegDay()
	var attr [numVA]uint32
	ms := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixMilli()
	page, _ := d.id("/", catPath, 0)
	host, _ := d.id("example.com", catHost, 0)
	v := d.addVisit(20410, 1, ms, &attr, 0, page, host)
	for range n {
		d.addHit(&segHit{visit: v, ms: ms, kind: hkPageview, page: page, host: host, scroll: -1})
	}
	d.vPageviews[v] = uint32(n)
	d.vFlags[v] = vfFirstInteractive
	if n > 1 {
		d.vFlags[v] |= vfInteractive
	}
	d.compact()
	return d
}

// TestSegDayHighRatio: a day whose columns compress better than 64:1 (many
// identical hits) decodes, alone and through the engine: snapshot, reopen,
// query, track. (The decoder refused an announced length over 64 times
// the compressed size: the website's queries and tracking failed.)
func TestSegDayHighRatio(t *testing.T) {
	d := highRatioSegDay(200_000)
	enc := d.appendBinary(nil)
	raw, _ := binary.Uvarint(enc[1:])
	if raw < 64*uint64(len(enc)) {
		t.Fatalf("ratio %d/%d: not above 64:1", raw, len(enc))
	}
	got, err := decodeSegDay(enc)
	if err != nil {
		t.Fatal(err)
	}
	d.ids, d.size, got.size = nil, 0, 0
	if !reflect.DeepEqual(d, got) {
		t.Error("round trip changed the day")
	}

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
	e, err = Open(&Options{FS: fs, Dir: "data", SnapshotEvery: -1, Now: clock})
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
	if sd.seg.hits() != n {
		t.Errorf("stored day has %d hits, want %d", sd.seg.hits(), n)
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
