package segments

import (
	"testing"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/query"
)

// TestHitDay: a hit's day (SPEC §10.1) is the one its flags keep, as an
// offset from its row's day; a hit written before the flags kept it takes
// its row's day unless its visit passed midnight since its first hit (in
// today's zone): a visit of old UTC days read in Berlin stays on its day.
func TestHitDay(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	day := buckets.DateOf(2026, 3, 10)
	utc := func(h, m int) int64 { return time.Date(2026, 3, 10, h, m, 0, 0, time.UTC).UnixMilli() }
	d := NewDay()
	var attr [NumAttrs]uint32
	late := d.AddVisit(int32(day), 1, utc(23, 10), &attr, 0, 0, 0)    // 00:10 in Berlin, the next day
	cross := d.AddVisit(int32(day), 2, utc(20, 0), &attr, 0, 0, 0)    // 21:00 in Berlin
	d.AddHit(&Hit{Visit: late, Ms: utc(23, 30), Kind: KindPageview})  // old: no day
	d.AddHit(&Hit{Visit: cross, Ms: utc(23, 30), Kind: KindPageview}) // old: no day, after Berlin's midnight
	d.AddHit(&Hit{Visit: cross, Ms: utc(20, 5), Kind: KindPageview})  // old: no day, before it
	d.AddHit(&Hit{Visit: cross, Ms: utc(21, 0), Kind: KindEvent, Flags: DayFlags(2) | HitInteractive})
	d.AddHit(&Hit{Visit: NoVisit, Ms: utc(23, 50), Kind: KindEvent}) // an old orphan
	d.AddHit(&Hit{Visit: late, Ms: utc(23, 40), Kind: KindEvent, Flags: DayFlags(-1)})
	p := &Plan{Query: &query.ResolvedQuery{Location: berlin}}
	p.date, p.nextMid = day, query.LocalDayStart(day+1, berlin).UnixMilli()
	want := []buckets.Date{day, day + 1, day, day + 2, day, day - 1}
	for i, w := range want {
		if got := p.hitDay(d, i); got != w {
			t.Errorf("hit %d: day %v, want %v", i, got, w)
		}
	}
	if f, ok := flagDay(DayFlags(-40)); !ok || f != -32 {
		t.Errorf("an offset below the bound: %v, %v", f, ok)
	}
}
