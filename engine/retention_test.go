package engine_test

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/engine"
)

// TestRetentionDropOutlivesTimeZoneChange: a day that retention dropped stays
// dropped when the website's time zone then moves the cut back a day
// (Europe/Berlin to America/New_York late in the UTC evening), across clean
// restarts and power losses (metamorphic seed 988). Open used to drop the
// dates of its cut in memory only, leaving the day and the site record that
// listed it in the store, so a later Open with the earlier cut showed it
// again; and what Open dropped was stored only by the next snapshot, so a
// power loss before it did the same.
func TestRetentionDropOutlivesTimeZoneChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		// logged: the old day's hit is still only in the log (no snapshot
		// before the first restart).
		logged bool
		// crash: the second restart is a power loss, right after the time
		// zone change.
		crash bool
	}{
		{"stored/close", false, false},
		{"stored/crash", false, true},
		{"logged/crash", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock("2026-07-22T12:00:00Z") // 14:00 in Berlin, 08:00 in New York
			fs := vfs.NewCrashableMem()
			o := &engine.Options{FS: fs, Dir: "data", Now: c.Now, SnapshotEvery: -1, Retention: 43, SaltPeriod: engine.SaltMonth}
			e, err := engine.Open(o)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { e.Close() }()
			w := newSite(t, e, "tz.example", func(in *engine.WebsiteInput) { in.Timezone = str("Europe/Berlin") })
			// 2026-06-09 is 43 days before 2026-07-22: kept until Berlin's
			// 2026-07-23.
			old := pv("2026-06-09T12:00:00Z", "https://tz.example/old", func(h *engine.Hit) { h.Live = false })
			track(t, e, old, pv("2026-07-22T12:00:00Z", "https://tz.example/new"))
			if got := rows(t, e, w.ID, "pageviews", "2026-06-01", "2026-07-31"); got["2026-06-09"] != 1 {
				t.Fatalf("before the cut: pageviews %v, want 2026-06-09 counted", got)
			}
			restart := func(crash bool, meanwhile func()) {
				t.Helper()
				if crash {
					clone := fs.CrashClone(vfs.CrashCloneCfg{}) // the synced data only
					e.Close()
					fs = clone
					o.FS = fs
				} else if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				meanwhile()
				if e, err = engine.Open(o); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.logged {
				if err := e.Snapshot(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// Open at 23:30 UTC: 2026-07-23 in Berlin (cut 2026-06-10),
			// still 2026-07-22 in New York (cut 2026-06-09).
			restart(tc.logged, func() { c.Set("2026-07-22T23:30:00Z") })
			want := map[string]uint64{"2026-07-22": 1}
			if diff := diffIfNot(want, rows(t, e, w.ID, "pageviews", "2026-06-01", "2026-07-31")); diff != "" {
				t.Fatalf("after the cut mismatch (-want +got):\n%s", diff)
			}
			if _, err := e.Unscoped().UpdateWebsite(ctx, w.ID, engine.WebsiteInput{Timezone: str("America/New_York")}); err != nil {
				t.Fatal(err)
			}
			restart(tc.crash, func() {})
			if diff := diffIfNot(want, rows(t, e, w.ID, "pageviews", "2026-06-01", "2026-07-31")); diff != "" {
				t.Fatalf("after the time zone change mismatch (-want +got):\n%s", diff)
			}
			// A new hit of that day counts: the cut is New York's now.
			track(t, e, old)
			want["2026-06-09"] = 1
			if diff := diffIfNot(want, rows(t, e, w.ID, "pageviews", "2026-06-01", "2026-07-31")); diff != "" {
				t.Fatalf("after an import into the day mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
