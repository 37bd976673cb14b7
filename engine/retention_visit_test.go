package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestRetentionDroppedVisitRowNotReused: a late import into a day older
// than the retention cut counts until the next snapshot drops the day, but
// the visitor state of its salt period (which ends after the cut) stays,
// with each visitor's segments row in the dropped day. When a later import
// made the day again, a returning visitor's old row number was a row of the
// new day — another visitor's — and the hit continued that visit: two
// visitors merged into one visit (fewer visitors, a duration where each
// had none, wrong bounce and exit page). Metamorphic seed 9 did this only
// when a concurrent snapshot dropped the day in the middle of an import.
func TestRetentionDroppedVisitRowNotReused(t *testing.T) {
	ctx := context.Background()
	c := newClock("2026-07-20T12:00:00Z")
	// Monthly salt: July's visitor state outlives the days of early July
	// that a 5-day retention drops.
	e, _ := openMem(t, c, func(o *engine.Options) { o.Retention = 5; o.SaltPeriod = engine.SaltMonth })
	w := newSite(t, e, "ret.example")
	hit := func(when, path, visitor string) engine.Hit {
		return pv(when, "https://ret.example"+path, func(h *engine.Hit) { h.Live = false; h.Visitor = visitor })
	}
	// A and B start visits in rows 0 and 1 of 2026-07-02.
	track(t, e, hit("2026-07-02T10:00:00Z", "/a", "A"), hit("2026-07-02T10:01:00Z", "/b", "B"))
	if err := e.Snapshot(ctx); err != nil { // retention drops 2026-07-02
		t.Fatal(err)
	}
	// The day again: C's visit is its row 0, then A comes back within 30
	// minutes of A's last hit, whose row was 0 of the dropped day.
	track(t, e, hit("2026-07-02T10:05:00Z", "/c", "C"))
	track(t, e, hit("2026-07-02T10:20:00Z", "/a2", "A"))
	q, err := engine.ParseQuery([]byte(`{"site_id":"ret.example","date_range":["2026-07-02","2026-07-02"],` +
		`"metrics":["visitors","visits","bounce_rate","visit_duration"],"dimensions":["visit:exit_page"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Unscoped().Query(ctx, w.ID, q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(res.Results)
	if err != nil {
		t.Fatal(err)
	}
	// A's visit row went with the day: A's hit starts a visit of its own
	// (as when the hits are imported after the snapshot, in any order).
	want := `[{"dimensions":["/a2"],"metrics":[1,1,100,0]},{"dimensions":["/c"],"metrics":[1,1,100,0]}]`
	if string(got) != want {
		t.Fatalf("2026-07-02 by exit page:\n got %s\nwant %s", got, want)
	}
}
