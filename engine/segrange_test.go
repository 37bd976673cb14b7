package engine

import (
	"testing"
	"time"

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
	day := DateOf(2026, 3, 10)
	utc := func(h, m int) int64 { return time.Date(2026, 3, 10, h, m, 0, 0, time.UTC).UnixMilli() }
	d := newSegDay()
	var attr [numVA]uint32
	late := d.addVisit(int32(day), 1, utc(23, 10), &attr, 0, 0, 0)     // 00:10 in Berlin, the next day
	cross := d.addVisit(int32(day), 2, utc(20, 0), &attr, 0, 0, 0)     // 21:00 in Berlin
	d.addHit(&segHit{visit: late, ms: utc(23, 30), kind: hkPageview})  // old: no day
	d.addHit(&segHit{visit: cross, ms: utc(23, 30), kind: hkPageview}) // old: no day, after Berlin's midnight
	d.addHit(&segHit{visit: cross, ms: utc(20, 5), kind: hkPageview})  // old: no day, before it
	d.addHit(&segHit{visit: cross, ms: utc(21, 0), kind: hkEvent, flags: dayFlags(2) | hfInteractive})
	d.addHit(&segHit{visit: noVisit, ms: utc(23, 50), kind: hkEvent}) // an old orphan
	d.addHit(&segHit{visit: late, ms: utc(23, 40), kind: hkEvent, flags: dayFlags(-1)})
	p := &plan{r: &ResolvedQuery{Location: berlin}}
	p.date, p.nextMid = day, query.LocalDayStart(day+1, berlin).UnixMilli()
	want := []Date{day, day + 1, day, day + 2, day, day - 1}
	for i, w := range want {
		if got := p.hitDay(d, i); got != w {
			t.Errorf("hit %d: day %v, want %v", i, got, w)
		}
	}
	if f, ok := flagDay(dayFlags(-40)); !ok || f != -32 {
		t.Errorf("an offset below the bound: %v, %v", f, ok)
	}
}
