package engine

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
)

// TestEngagementReplayedOnce: an engagement report applied between a
// snapshot's trim point and its collection of the website (here: another
// website's batch, logged before it, still waits in its pending queue, so
// the trim point stays below the report) is in the snapshot's day, so the
// snapshot must also store the website's last applied sequence; otherwise a
// crash and the replay of the log apply the report a second time (its
// engaged time counted twice in time_on_page).
func TestEngagementReplayedOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pending bool // another website's batch pending at the second snapshot
	}{
		{name: "plain"},
		{name: "other website pending", pending: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fs := vfs.NewCrashableMem()
			now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
			clock := func() time.Time { return now }
			e, site := hardEngine(t, fs, Options{Now: clock})
			other := "other.example"
			acc, _, err := NewTestAccount()
			if err != nil {
				t.Fatal(err)
			}
			w2, err := e.Owner(acc.ID).CreateWebsite(ctx, WebsiteInput{Domain: &other})
			if err != nil {
				t.Fatal(err)
			}
			at := now.Add(-time.Hour)
			pv := hardHit(site, at, "v1", "/p")
			eng := pv
			eng.Time = at.Add(20 * time.Second)
			eng.Engagement = &Engagement{EngagedMs: 15000, ScrollDepth: 60}

			if _, err := e.Track(ctx, pv); err != nil {
				t.Fatal(err)
			}
			if err := e.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			var st2 *siteState
			if tc.pending {
				// A batch of the other website is logged (its sequence
				// number taken) and waits to be applied.
				st2 = e.sites[w2.ID].state
				sh := e.shardOf(w2.ID)
				sh.mu.Lock()
				st2.pending = append(st2.pending, pendingHit{seq: e.seq.Add(1)})
				sh.mu.Unlock()
			}
			if _, err := e.Track(ctx, eng); err != nil {
				t.Fatal(err)
			}
			if err := e.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.pending {
				sh := e.shardOf(w2.ID)
				sh.mu.Lock()
				st2.pending = nil
				sh.mu.Unlock()
			}
			query := func(e *Engine) string {
				t.Helper()
				q, err := ParseQuery([]byte(`{"site_id":"hard.example","date_range":"all","metrics":["visitors","pageviews","time_on_page","scroll_depth"],"dimensions":["event:page"]}`))
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Unscoped().Query(ctx, site, q)
				if err != nil {
					t.Fatal(err)
				}
				b, err := json.Marshal(res.Results)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			want := query(e) // the engine that never crashed
			if want != `[{"dimensions":["/p"],"metrics":[1,1,15,60]}]` {
				t.Fatalf("before the crash: %s", want)
			}
			clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 2))})
			e.Close() // writes to the old file system only
			e2, err := Open(&Options{FS: clone, Dir: "data", SnapshotEvery: -1, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			defer e2.Close()
			if diff := cmp.Diff(want, query(e2)); diff != "" {
				t.Errorf("after crash and replay: mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
