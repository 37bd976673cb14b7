//go:build !race

package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestTrackLargeBatchAllocations (issue #38 row 7): tracking an import of
// 10,000 events of about 1 KiB of new values allocates in proportion to
// the events, not several times over: the log batch's records are encoded
// into buffers that are never grown (encodeLarge). Before, one buffer
// grown by append kept every outgrown copy alive through the log entries
// (42 MiB live for 10 MiB of records, profiled on the binary) and
// allocated 29 MB more here. The bound is a multiple of the
// bytes of values sent, not of anything the engine reports.
func TestTrackLargeBatchAllocations(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }})
	defer e.Close()
	pad := strings.Repeat("x", 200)
	hits := make([]Hit, 10_000)
	sent := 0
	for i := range hits {
		u := fmt.Sprintf("r-%d", i)
		h := hardHit(site, now.Add(-26*time.Hour), fmt.Sprint("v", i%1000), "/imp/"+u+"/"+pad)
		h.Referrer = "https://" + u + ".example/" + pad
		h.Props = []Prop{{Key: "k", Value: u}, {Key: "pad", Value: pad}}
		hits[i] = h
		sent += len(h.URL) + len(h.Referrer) + len(u) + len(pad)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := e.Track(context.Background(), hits...)
	runtime.ReadMemStats(&after)
	if err != nil || res.Accepted != len(hits) {
		t.Fatalf("track: %+v, %v", res, err)
	}
	got := int64(after.TotalAlloc - before.TotalAlloc)
	// What Track allocates per byte of values sent (enrichment, the
	// records, their log entries and batch, the day's buckets and
	// segments): 19.6 times at this commit, 24.2 before encodeLarge.
	const factor = 22
	bound := int64(factor * sent)
	t.Logf("%d events, %d bytes of values sent: Track allocated %d bytes (%.1f× the values)", len(hits), sent, got, float64(got)/float64(sent))
	if got > bound {
		t.Errorf("Track of %d events allocated %d bytes, want at most %d (%d× the %d bytes of values sent)", len(hits), got, bound, factor, sent)
	}
}
