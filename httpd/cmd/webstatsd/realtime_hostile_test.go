package main

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"
)

// TestHostileRealtimeFlood (issue #38 row 9, SPEC §13: the realtime window
// is counted in the budget and capped): a flood of new visitors in the
// current minutes, imported 10,000 at a time (80,000 in the short run,
// 300,000 under -hostile.long), keeps the realtime slots under a fixed
// size (webstats_realtime_bytes, at most 5 minutes of 4,096 keys), and the
// realtime API still answers the exact number of visitors sent. (Before,
// a website's slots held up to 15.7 MB outside the budget, and a minute
// of more than 65,536 visitors was undercounted.)
//
// The server's RSS is logged, not bounded (the current salt period's
// visitor state is paged: TestHostileVisitorFlood).
//
// Reproduce: go test ./httpd/cmd/webstatsd -run TestHostileRealtimeFlood
// -v [-hostile.long]
func TestHostileRealtimeFlood(t *testing.T) {
	const (
		events = 10_000
		// 5 minutes of rtSlotKeys keys of 8 bytes, with append's slack.
		realtimeBound = 5 * 4096 * 8 * 5 / 4
	)
	requests := 8
	if *hostileLong {
		requests = 30
	}
	bin := buildBinary(t)
	srv := startServer(t, bin, filepath.Join(t.TempDir(), "data"), "-memory-budget", "64MiB", "-snapshot-every", "5s")
	key := srv.adminKey(t)
	base := srv.base()
	id := createSite(t, base, key, url.Values{"domain": {"realtime.example"}, "privacy": {"0"}})
	idle, err := readRSS(srv.pid())
	if err != nil {
		t.Fatal(err)
	}
	stats := watch(srv.pid())
	defer stats.peaks()
	// One minute of the realtime window: the flood ends well within the
	// 5 minutes it counts.
	at := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	hc := keepAlive(1, 2*time.Minute)
	defer hc.CloseIdleConnections()
	lines := make([]string, events)
	for r := range requests {
		for i := range lines {
			lines[i] = `{"time":"` + at + `","page":"/p","visitor":"v` + fmt.Sprint(r*events+i) + `","user_agent":"` + chromeUA + `"}`
		}
		if code, n, err := importEvents(hc, base, key, id, lines); err != nil || code != http.StatusOK || n != events {
			t.Fatalf("import %d: status %d, %d accepted, %v", r, code, n, err)
		}
	}
	api := &client{t: t, base: base + "/api/v1", key: key}
	var visitors int
	api.do("GET", "/stats/realtime/visitors?site_id=realtime.example", "", "", http.StatusOK, &visitors)
	if want := requests * events; visitors != want {
		t.Errorf("realtime visitors = %d after %d new visitors in the last minutes, want %d", visitors, want, want)
	}
	rtBytes := metric(t, base, "webstats_realtime_bytes")
	if rtBytes < 0 || rtBytes > realtimeBound {
		t.Errorf("webstats_realtime_bytes = %v after the flood, want in [0, %d]", rtBytes, realtimeBound)
	}
	peak, _, _ := stats.peaks()
	t.Logf("%d new visitors: realtime answers %d; webstats_realtime_bytes %v, webstats_visitor_state_bytes %v; RSS idle %s, peak %s",
		requests*events, visitors, rtBytes, metric(t, base, "webstats_visitor_state_bytes"), mib(idle), mib(peak))
	if n := srv.stderr.Panics(); n > 0 {
		t.Errorf("the server logged %d panics:\n%s", n, srv.stderr.String())
	}
	srv.stop(t)
}
