package main

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestHostileVisitorFlood (issue #38 row 9, SPEC §13: the current salt
// period's visitor state is counted in the budget and paged like the
// rest): a flood of new visitors of today, imported 10,000 at a time
// (200,000 in the short run, about 17 MiB of visitor state at 88 bytes a
// visitor, twice -memory-budget 8MiB; 2,000,000 under -hostile.long),
// must leave at most the budget of visitor state resident
// (webstats_visitor_state_bytes) once a snapshot has written it. Paging
// must not cost exactness (SPEC §2.2, "a returning visitor keeps their
// id within a salt period, however long ago it was written"): 20,000 of
// the flood's visitors come back 10 minutes later with 5,000 new ones,
// and after a restart 10,000 more come back, and the Plausible v2 and
// phpAnalytics v1 APIs answer exactly N+5,000 visitors and visits (every
// return is within 30 minutes of the visitor's last pageview, so it
// continues their visit) and N+25,000 then N+35,000 pageviews.
//
// The server's RSS is logged, not bounded: its peak comes during the
// imports in a row (under -hostile.long, +75 to +192 MiB over the idle
// process: issue #38 row 7 in a row, README "Limits"), not from the
// visitor state, which the test bounds.
//
// On main at 7ea4ea9, where the current period's state is counted but
// never paged (evictIdleLocked skips it), the state stays at 16.8 MiB
// after the flood, 17.2 MiB after the returns, and 17.2 MiB again after
// the restart (the whole period is read back on the first return), so the
// three memory assertions fail, while every count is exact; the short run
// takes about 55 s on a loaded 2-core machine (the v2 query of the day's
// 225,000 hits about 7 s of it).
//
// Reproduce: go test ./httpd/cmd/webstatsd -run TestHostileVisitorFlood
// -v [-hostile.long]
func TestHostileVisitorFlood(t *testing.T) {
	const (
		events   = 10_000
		budget   = 8 << 20
		returns  = 20_000 // of the flood's visitors, before the restart
		newcomer = 5_000
		again    = 10_000 // of the flood's visitors, after the restart
		settle   = 20 * time.Second
	)
	n := 200_000
	if *hostileLong {
		n = 2_000_000
	}
	// The flood, the returns and the returns after the restart in one
	// local day (UTC) of one salt period, each within 30 minutes of the
	// first, and out of the realtime window (5 minutes), so its slots stay
	// small and the budget is the visitor state's.
	now := time.Now().UTC()
	t0 := now.Add(-20 * time.Minute)
	if midnight := now.Truncate(24 * time.Hour); t0.Before(midnight) {
		t0 = midnight.Add(time.Minute) // minutes ahead at most: accepted
	}
	day := t0.Format(time.DateOnly)
	t1 := time.Now()
	bin := buildBinary(t)
	t.Logf("built in %v", time.Since(t1).Round(time.Millisecond))
	data := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, bin, data, "-memory-budget", "8MiB", "-snapshot-every", "1s", "-rate-limit", "0")
	key := srv.adminKey(t)
	base := srv.base()
	const domain = "visitors.example"
	id := createSite(t, base, key, url.Values{"domain": {domain}, "privacy": {"0"}})
	idle, err := readRSS(srv.pid())
	if err != nil {
		t.Fatal(err)
	}
	stats := watch(srv.pid())
	defer stats.peaks()
	hc := keepAlive(1, 2*time.Minute)
	defer hc.CloseIdleConnections()

	// send imports the visitors ids (v<i>) at one time, 10,000 a request.
	send := func(base, what string, at time.Time, ids []int) {
		t.Helper()
		ts := at.Format(time.RFC3339)
		for len(ids) > 0 {
			part := ids[:min(events, len(ids))]
			ids = ids[len(part):]
			lines := make([]string, len(part))
			for i, v := range part {
				lines[i] = `{"time":"` + ts + `","page":"/p","visitor":"v` + fmt.Sprint(v) + `","user_agent":"` + chromeUA + `"}`
			}
			if code, got, err := importEvents(hc, base, key, id, lines); err != nil || code != http.StatusOK || got != len(part) {
				t.Fatalf("%s: status %d, %d of %d accepted, %v", what, code, got, len(part), err)
			}
		}
	}
	// span returns the ids from, from+step, … (count of them).
	span := func(from, step, count int) []int {
		ids := make([]int, count)
		for i := range ids {
			ids[i] = from + i*step
		}
		return ids
	}
	// settled waits, at most settle, for the visitor state to be within
	// the budget (a snapshot writes it, eviction pages it out), and
	// returns it. Once a wait has failed, the next ones wait a few
	// snapshots only (the run stays short where nothing is paged).
	settled := func(base, when string) float64 {
		t.Helper()
		wait := settle
		if t.Failed() {
			wait = 3 * time.Second
		}
		deadline := time.Now().Add(wait)
		state := metric(t, base, "webstats_visitor_state_bytes")
		for state > budget && time.Now().Before(deadline) {
			time.Sleep(250 * time.Millisecond)
			state = metric(t, base, "webstats_visitor_state_bytes")
		}
		t.Logf("%s: webstats_visitor_state_bytes %s, resident %s, realtime %s, keys %s, open segments %s; %v snapshots",
			when, mib(int64(state)), mib(int64(metric(t, base, "webstats_resident_bytes"))), mib(int64(metric(t, base, "webstats_realtime_bytes"))),
			mib(int64(metric(t, base, "webstats_key_bytes"))), mib(int64(metric(t, base, "webstats_segments_open_bytes"))), metric(t, base, "webstats_snapshots_total"))
		if state < 0 || state > budget {
			t.Errorf("%s: webstats_visitor_state_bytes = %s after waiting up to %v for a snapshot, want in [0, %s] (-memory-budget 8MiB: the current salt period's visitor state is paged out)",
				when, mib(int64(state)), wait, mib(budget))
		}
		return state
	}
	// totals checks the day's visitors, visits and pageviews on the v2 and
	// v1 APIs.
	totals := func(base, when string, visitors, pageviews int) {
		t.Helper()
		took := []string{}
		start := time.Now()
		lap := func(what string) {
			took = append(took, fmt.Sprintf("%s %v", what, time.Since(start).Round(time.Millisecond)))
			start = time.Now()
		}
		defer func() { t.Logf("%s: the APIs answered in %v", when, took) }()
		var v2 struct {
			Results []struct{ Metrics []float64 } `json:"results"`
		}
		body := `{"site_id":"` + domain + `","metrics":["visitors","visits","pageviews"],"date_range":["` + day + `","` + day + `"]}`
		(&client{t: t, base: base, key: key}).do("POST", "/api/v2/query", "application/json", body, http.StatusOK, &v2)
		lap("v2")
		want := []float64{float64(visitors), float64(visitors), float64(pageviews)}
		if len(v2.Results) != 1 || !slices.Equal(v2.Results[0].Metrics, want) {
			t.Errorf("%s: POST /api/v2/query visitors, visits, pageviews of %s = %+v, want %v", when, day, v2.Results, want)
		}
		v1 := &client{t: t, base: base + "/api/v1", key: key}
		for name, want := range map[string]int{"visitors": visitors, "pageviews": pageviews, "landing_page": visitors} {
			var page struct {
				Data []struct {
					Value string `json:"value"`
					Count int    `json:"count"`
				} `json:"data"`
			}
			v1.do("GET", fmt.Sprintf("/stats/%d?name=%s&from=%s&to=%s", id, name, day, day), "", "", http.StatusOK, &page)
			lap("v1 " + name)
			if len(page.Data) != 1 || page.Data[0].Count != want {
				t.Errorf("%s: GET /api/v1/stats/%d?name=%s of %s = %+v, want one row of %d", when, id, name, day, page.Data, want)
			}
		}
	}

	t1 = time.Now()
	send(base, "flood", t0, span(0, 1, n))
	t.Logf("%d new visitors imported in %v", n, time.Since(t1).Round(time.Millisecond))
	settled(base, "after the flood")

	// Returning visitors, whose state was paged out (one in n/returns, so
	// every chunk of 256), and new ones, 10 minutes later.
	t1 = time.Now()
	ids := append(span(0, n/returns, returns), span(n, 1, newcomer)...)
	send(base, "returns", t0.Add(10*time.Minute), ids)
	t.Logf("%d returning and %d new visitors imported in %v", returns, newcomer, time.Since(t1).Round(time.Millisecond))
	totals(base, "after the returns", n+newcomer, n+returns+newcomer)
	settled(base, "after the returns")
	peak, _, _ := stats.peaks()
	t.Logf("RSS idle %s, peak %s (+%s)", mib(idle), mib(peak), mib(peak-idle))
	if p := srv.stderr.Panics(); p > 0 {
		t.Errorf("the server logged %d panics:\n%s", p, srv.stderr.String())
	}
	t1 = time.Now()
	srv.stop(t)

	// After a restart the state is read back from the store: old
	// visitors (none of the returns before: n/returns/2 plus multiples of
	// n/again, n/again a multiple of n/returns) are no new visitors.
	srv = startServer(t, bin, data, "-memory-budget", "8MiB", "-snapshot-every", "1s", "-rate-limit", "0")
	base = srv.base()
	t.Logf("stopped and started again in %v", time.Since(t1).Round(time.Millisecond))
	settled(base, "after the restart")
	send(base, "returns after the restart", t0.Add(15*time.Minute), span(n/returns/2, n/again, again))
	totals(base, "after the restart", n+newcomer, n+returns+newcomer+again)
	settled(base, "after the returns after the restart")
	if rss, err := readRSS(srv.pid()); err == nil {
		t.Logf("RSS after the restart and the returns %s", mib(rss))
	}
	if peak-idle > 64<<20 {
		// Logged: the peak comes during the imports in a row (issue #38
		// row 7 in a row, README "Limits"), not from the visitor state.
		t.Logf("RSS grew by %s over the idle %s with %d new visitors: more than SPEC §13's 64 MiB for one import", mib(peak-idle), mib(idle), n)
	}
	if p := srv.stderr.Panics(); p > 0 {
		t.Errorf("the server logged %d panics after the restart:\n%s", p, srv.stderr.String())
	}
	srv.stop(t)
}
