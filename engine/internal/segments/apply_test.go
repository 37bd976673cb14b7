package segments

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/query"
)

// ids records the strings it is asked for, in order, and numbers them.
type ids struct{ asked []string }

func (x *ids) id(cat Cat, s string) uint32 {
	x.asked = append(x.asked, fmt.Sprintf("%d:%s", cat, s))
	return uint32(len(x.asked))
}

// TestHitOf: a hit row's kind and fields by the record's kind, and the
// order its strings are interned in (which decides the day's ids, and
// so its stored bytes): event fields, page, host, props.
func TestHitOf(t *testing.T) {
	seg := record.Seg{Path: "/p", Host: "h", Props: []record.Prop{{Key: "k", Value: "v"}}, Scroll: 40, EngagedMs: 1500}
	pv := record.Hit{Ms: 61_999, Seg: seg}
	var x ids
	h := HitOf(&pv, 7, -1, x.id)
	want := Hit{Visit: 7, Ms: 61_000, Kind: KindPageview, Scroll: -1, Flags: DayFlags(-1), Page: 1, Host: 2, Props: []uint32{3, 4}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("pageview: %+v, want %+v", h, want)
	}
	if w := []string{fmt.Sprintf("%d:/p", CatPath), fmt.Sprintf("%d:h", CatHost), fmt.Sprintf("%d:k", CatPropKey), fmt.Sprintf("%d:v", CatPropVal)}; !reflect.DeepEqual(x.asked, w) {
		t.Errorf("pageview interned %q, want %q", x.asked, w)
	}

	ev := record.Hit{Ms: 1000, Event: true, EventRow: "Signup:12:EUR", Seg: seg}
	x = ids{}
	h = HitOf(&ev, NoVisit, 0, x.id)
	if h.Kind != KindEvent || h.Name != 1 || h.Value != 2 || h.Unit != 3 || h.Page != 4 || h.Flags&HitInteractive == 0 {
		t.Errorf("event: %+v (interned %q)", h, x.asked)
	}
	ev.Seg.NonInteractive = true
	if h := HitOf(&ev, NoVisit, 0, x.id); h.Flags&HitInteractive != 0 {
		t.Errorf("non-interactive event is interactive: %+v", h)
	}

	en := record.Hit{Ms: 1000, Event: true, Seg: seg}
	en.Seg.Engagement = true
	x = ids{}
	h = HitOf(&en, 3, 0, x.id)
	if h.Kind != KindEngagement || h.Engaged != 1500 || h.Scroll != 40 || h.Name != 0 || h.Page != 1 {
		t.Errorf("engagement: %+v (interned %q)", h, x.asked)
	}
}

// TestVisitAttrs: a visit's attributes, its referrer kept only when
// external, and each interned under its kind.
func TestVisitAttrs(t *testing.T) {
	r := record.Hit{RefHost: "news.example", Country: "FR:x", Browser: "Firefox",
		Seg: record.Seg{RefURL: "news.example/item", Landing: "utm_source=mail", Region: "FR-75"}}
	got := map[Cat]map[string]bool{}
	id := func(cat Cat, s string) uint32 {
		if got[cat] == nil {
			got[cat] = map[string]bool{}
		}
		got[cat][s] = true
		return uint32(len(s))
	}
	a := VisitAttrs(&r, true, id)
	if a[AttrReferrer] != uint32(len("news.example/item")) || a[AttrCountry] != 2 || a[AttrBrowser] != uint32(len("Firefox")) {
		t.Errorf("attrs %v", a)
	}
	if !got[CatReferrer]["news.example/item"] || !got[CatUTM]["mail"] || !got[CatVisit]["FR"] || !got[CatVisit]["FR-75"] {
		t.Errorf("interned %v", got)
	}
	if a := VisitAttrs(&r, false, id); a[AttrReferrer] != 0 {
		t.Errorf("internal referrer kept: %v", a)
	}
}

// TestAnswers: an answer is found by its key and tag only, copied in and
// out, dropped with its website; a nil cache keeps nothing.
func TestAnswers(t *testing.T) {
	c := NewAnswers(0, 1<<20)
	cfg, goals := new(int), new(int)
	tag := Tag{Config: cfg, Goals: goals}
	res := query.Result{Results: []query.Row{{Dimensions: []any{"/"}, Metrics: []any{int64(1)}}}}
	c.Put("k", 1, tag, res)
	res.Results[0].Metrics[0] = int64(2)
	got, ok := c.Get("k", tag)
	if !ok || got.Results[0].Metrics[0] != int64(1) {
		t.Fatalf("Get: %+v, %v", got, ok)
	}
	got.Results[0].Metrics[0] = int64(3)
	if again, _ := c.Get("k", tag); again.Results[0].Metrics[0] != int64(1) {
		t.Errorf("an answer changed through a copy: %+v", again)
	}
	if _, ok := c.Get("k", Tag{Config: new(int), Goals: goals}); ok {
		t.Error("found under another configuration")
	}
	c.Drop(2)
	if _, ok := c.Get("k", tag); !ok {
		t.Error("dropped with another website")
	}
	c.Drop(1)
	if _, ok := c.Get("k", tag); ok {
		t.Error("kept after its website's drop")
	}
	var none *Answers = NewAnswers(-1, 1<<20)
	none.Put("k", 1, tag, res)
	if _, ok := none.Get("k", tag); ok {
		t.Error("a nil cache found an answer")
	}
}

// TestChunks: a day is read whole under the limit (or without one), else
// in as many chunks as its rows need.
func TestChunks(t *testing.T) {
	d := &Day{OffV: 1000, OffH: 10000}
	est := wholeBytes(d)
	for _, c := range []struct {
		limit int64
		want  int
	}{{0, 1}, {est, 1}, {est - 1, 2}, {est / 3, 4}} {
		if n := Chunks(d, c.limit); n != c.want {
			t.Errorf("Chunks(limit %d of %d) = %d, want %d", c.limit, est, n, c.want)
		}
	}
}
