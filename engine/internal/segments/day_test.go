package segments

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	"github.com/webstats/webstats/engine/query"
)

// sampleDay is a small day with every kind of row: visits, pageviews,
// an event with props and revenue, an orphan event, an engagement report.
func sampleDay() *Day {
	d := NewDay()
	var attr [NumAttrs]uint32
	for i := range attr {
		attr[i], _ = d.ID([]string{"Google", "google.com/search", "Organic Search", "cpc", "DE", "Chrome", "120.0"}[i%7], CatVisit, 0)
	}
	ms := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixMilli()
	page, _ := d.ID("/pricing", CatPath, 0)
	host, _ := d.ID("example.com", CatHost, 0)
	v := d.AddVisit(20410, 7, ms, &attr, 2950159, page, host)
	d.VPageviews[v] = 2
	d.AddHit(&Hit{Visit: v, Ms: ms, Kind: KindPageview, Page: page, Host: host, Scroll: -1})
	d.AddHit(&Hit{Visit: v, Ms: ms + 500, Kind: KindPageview, Page: page, Host: host, Scroll: -1})
	name, _ := d.ID("Signup", CatEvent, 0)
	val, _ := d.ID("5.5", CatEvent, 0)
	unit, _ := d.ID("USD", CatEvent, 0)
	k, _ := d.ID("plan", CatPropKey, 0)
	pv, _ := d.ID("pro", CatPropVal, 0)
	d.AddHit(&Hit{Visit: v, Ms: ms + 1000, Kind: KindEvent, Name: name, Value: val, Unit: unit, Page: page, Host: host, Scroll: -1, Props: []uint32{k, pv}})
	d.AddHit(&Hit{Visit: NoVisit, Ms: ms - 5000, Kind: KindEvent, Name: name, Page: page, Scroll: -1})
	d.AddHit(&Hit{Visit: v, Ms: ms + 9000, Kind: KindEngagement, Page: page, Engaged: 8000, Scroll: 75})
	d.VEnd[v], d.VLastPV[v], d.VFlags[v] = ms+1000, ms+500, VisitInteractive|VisitFirstInteractive
	return d
}

func TestDayRoundTrip(t *testing.T) {
	d := sampleDay()
	got, err := DecodeDay(d.AppendBinary(nil))
	if err != nil {
		t.Fatal(err)
	}
	d.ids, d.Size, got.Size = nil, 0, 0
	got.dm = nil // what queries keep of it, not its rows
	if !reflect.DeepEqual(d, got) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, d)
	}
	// A closed day: hits ordered by visit, encoded by visit.
	g := sampleDay()
	g.Compact()
	if !g.Grouped {
		t.Fatal("compact left the hits unordered")
	}
	got, err = DecodeDay(g.AppendBinary(nil))
	if err != nil {
		t.Fatal(err)
	}
	g.ids, g.Size, got.Size = nil, 0, 0
	if !reflect.DeepEqual(g, got) {
		t.Errorf("round trip of a closed day:\n got %+v\nwant %+v", got, g)
	}
	c := d.Clone()
	c.VPageviews[0]++
	if d.VPageviews[0] == c.VPageviews[0] {
		t.Error("clone shares the visit columns")
	}
}

// FuzzDay: decoding never panics nor allocates beyond the input's
// bounds; what decodes re-encodes to the same day and can be queried.
func FuzzDay(f *testing.F) {
	enc := sampleDay().AppendBinary(nil)
	f.Add(enc)
	f.Add(enc[:len(enc)-1])
	f.Add(NewDay().AppendBinary(nil))
	g := sampleDay()
	g.Compact()
	f.Add(g.AppendBinary(nil))
	f.Add([]byte{Version, 0xff, 0xff, 0xff, 0x7f})
	f.Add(highRatioDay(5000).AppendBinary(nil)) // compresses better than 64:1
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDay(b)
		if err != nil {
			return
		}
		d2, err := DecodeDay(d.AppendBinary(nil))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		d.Size, d2.Size = 0, 0
		if !reflect.DeepEqual(d, d2) {
			t.Fatal("re-encoding changed the day")
		}
		for _, body := range []string{
			`{"site_id":"x","metrics":["visitors","visits","bounce_rate","visit_duration","events","time_on_page"],"date_range":["1970-01-01","2069-12-31"],"filters":[["is","event:page",["/pricing"]]]}`,
			`{"site_id":"x","metrics":["visitors","events"],"date_range":["1970-01-01","2069-12-31"],"dimensions":["time:day","event:props:plan","visit:city","event:goal"]}`,
		} {
			q, err := query.ParseQuery([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			r, err := q.Resolve(query.QuerySite{Goals: []string{"Signup"}})
			if err != nil {
				t.Fatal(err)
			}
			goals := &GoalSet{Goals: []query.Goal{{ID: 1, DisplayName: "Signup", EventName: "Signup", Currency: "USD"}}}
			if err := goals.Compile(); err != nil {
				t.Fatal(err)
			}
			p, err := NewPlan(&r, goals)
			if err != nil {
				t.Fatal(err)
			}
			p.ScanDay(d, 0, false)
			rows := p.Rows()
			// The partial sort from 4 rows (n < len/2), the full one below.
			p.SortRows(rows, max(len(rows)/3, min(len(rows), 1)))
		}
	})
}

// highRatioDay is a day of n identical pageviews of one visit in one
// second: its columns compress far better than 64:1.
func highRatioDay(n int) *Day {
	d := NewDay()
	var attr [NumAttrs]uint32
	ms := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixMilli()
	page, _ := d.ID("/", CatPath, 0)
	host, _ := d.ID("example.com", CatHost, 0)
	v := d.AddVisit(20410, 1, ms, &attr, 0, page, host)
	for range n {
		d.AddHit(&Hit{Visit: v, Ms: ms, Kind: KindPageview, Page: page, Host: host, Scroll: -1})
	}
	d.VPageviews[v] = uint32(n)
	d.VFlags[v] = VisitFirstInteractive
	if n > 1 {
		d.VFlags[v] |= VisitInteractive
	}
	d.Compact()
	return d
}

// TestDayHighRatio: a day whose columns compress better than 64:1 (many
// identical hits) decodes. (The decoder refused an announced length over
// 64 times the compressed size: the website's queries and tracking
// failed; TestSegDayHighRatio in package engine checks them.)
func TestDayHighRatio(t *testing.T) {
	d := highRatioDay(200_000)
	enc := d.AppendBinary(nil)
	raw, _ := binary.Uvarint(enc[1:])
	if raw < 64*uint64(len(enc)) {
		t.Fatalf("ratio %d/%d: not above 64:1", raw, len(enc))
	}
	got, err := DecodeDay(enc)
	if err != nil {
		t.Fatal(err)
	}
	d.ids, d.Size, got.Size = nil, 0, 0
	if !reflect.DeepEqual(d, got) {
		t.Error("round trip changed the day")
	}
}
