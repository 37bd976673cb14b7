package engine_test

import (
	"context"
	"testing"
	"time"
)

// TestStoreUsage: a closed day's buckets and segments are both counted,
// apart, with the registry and the visitor state; a log trimmed by the
// snapshot holds little; more hits make more segments.
func TestStoreUsage(t *testing.T) {
	c := newClock("2026-03-01T10:00:00Z")
	e, _ := openMem(t, c)
	newSite(t, e, "usage.example")
	usage := func(hits int) (days, segs int64) {
		t.Helper()
		for i := range hits {
			track(t, e, pv("2026-03-01T10:00:00Z", "https://usage.example/p"+string(rune('a'+i%26))))
		}
		c.Add(48 * time.Hour) // the day closes
		if err := e.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		u, err := e.StoreUsage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if u.Days <= 0 || u.DaySegments <= 0 || u.Registry <= 0 || u.State <= 0 || u.Sites <= 0 {
			t.Fatalf("after %d hits: %+v", hits, u)
		}
		return u.Days, u.DaySegments
	}
	_, few := usage(5)
	_, more := usage(200)
	if more <= few {
		t.Errorf("segments: %d bytes after 5 hits, %d after 205", few, more)
	}
}
