package engine

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
)

// TestImportOwnsHits: Import counts as Track (unkeyed) and TrackOnce
// (keyed, once) do, and lets go of every part's hits once enriched, so
// that an import's memory shrinks as it counts (SPEC §13): after a call of
// several parts its hits are zero values.
func TestImportOwnsHits(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	mk := func(site uint32) []Hit {
		hits := make([]Hit, 2_500)
		for i := range hits {
			hits[i] = hardHit(site, now.AddDate(0, 0, -2), fmt.Sprint("v", i%300), fmt.Sprintf("/p/%d", i))
		}
		return hits
	}
	for _, key := range []string{"", "import-1"} {
		t.Run("key "+key, func(t *testing.T) {
			e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }})
			defer e.Close()
			twin, tsite := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }})
			defer twin.Close()
			ctx := context.Background()
			hits := mk(site)
			res, err := e.Import(ctx, key, hits)
			if err != nil || res.Accepted != len(hits) {
				t.Fatalf("Import: %+v, %v", res.Accepted, err)
			}
			for i := range hits {
				if !reflect.ValueOf(hits[i]).IsZero() {
					t.Fatalf("hit %d kept after Import: %+v", i, hits[i])
				}
			}
			want, err := twin.Track(ctx, mk(tsite)...)
			if err != nil {
				t.Fatal(err)
			}
			day := buckets.DateFromTime(now.AddDate(0, 0, -2))
			got, err := e.Unscoped().Totals(ctx, site, day, day)
			if err != nil {
				t.Fatal(err)
			}
			exp, err := twin.Unscoped().Totals(ctx, tsite, day, day)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(exp, got); diff != "" || res.Accepted != want.Accepted {
				t.Errorf("Import counted otherwise than Track (-Track +Import):\n%s", diff)
			}
			if key == "" {
				return
			}
			again, err := e.Import(ctx, key, mk(site))
			if err != nil || !again.Repeated {
				t.Fatalf("a repeat of the key: %+v, %v, want Repeated", again, err)
			}
		})
	}
}
