package httpd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// Public Plausible API clients from npm, installed unchanged and pointed at
// a test server (README, "Plausible-compatible API"):
//
//   - plausible@2.2.1 (Schotsl/Plausible): its constructor takes the base
//     URL, the only setting changed.
//   - @jackdbd/plausible-client@1.0.2: its endpoints are fixed to
//     https://plausible.io, but every call takes the fetch client to use
//     (its documented fetchClient option); the one given here sends the
//     same request to the test server instead of plausible.io, with the
//     key as a Bearer token, and returns the JSON body, as its own
//     makeEleventyFetch does.
//
// Neither speaks Stats API v2 or the Sites API (the npm registry reachable
// here has no client for them); plausible-api@1.0.1 was tried too but has
// plausible.io built in with no way to change it.
//
// Both are pinned in internal/conformance/testdata/package-lock.json, whose suite
// runs them against the binary; this test runs them against the handler
// with a seeded fixture.
const npmDir = "internal/conformance/testdata"

// npmClients are the clients this test imports, by their directory in
// node_modules.
var npmClients = []string{"plausible", "@jackdbd/plausible-client"}

// clientScript runs each client's calls and prints {call: result} as JSON.
const clientScript = `
import Plausible from "plausible";
import { aggregate, breakdown, timeseries } from "@jackdbd/plausible-client/stats/api";

const base = process.env.WEBSTATS_URL, key = process.env.WEBSTATS_KEY, site = "example.com";
const out = {};
const schotsl = new Plausible(key, site, base);
out.schotsl_realtime = await schotsl.getRealtime();
out.schotsl_aggregate = await schotsl.getAggregate("7d", "visitors,pageviews,bounce_rate,visit_duration", true, null, "2026-11-20");
out.schotsl_timeseries = await schotsl.getTimeseries("7d", "visitors,pageviews", null, "date", "2026-11-20");
out.schotsl_breakdown = await schotsl.getBreakdown("30d", "visitors,bounce_rate", "visit:source", null, 10, 1, "2026-11-20");
out.schotsl_breakdown_filtered = await schotsl.getBreakdown("30d", "visitors", "event:page", "event:page==/blog/*", null, null, "2026-11-20");
// Issue #37: a country breakdown answered 400 for every period.
out.schotsl_breakdown_country = await new Plausible(key, "blog.example.org", base).getBreakdown("30d", "visitors", "visit:country", null, null, null, "2026-11-20");
try {
  await schotsl.getAggregate("7d", "baa");
} catch (e) {
  out.schotsl_error = e.message;
}

const fetchClient = async (url) => {
  const res = await fetch(url.replace("https://plausible.io", base), { headers: { Authorization: "Bearer " + key } });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error);
  return body;
};
const cfg = { fetchClient, siteId: site };
out.jackdbd_aggregate = await aggregate(cfg, { metrics: "visitors,visits,pageviews", period: "30d", compare: "previous_period" });
out.jackdbd_timeseries = await timeseries(cfg, { period: "6mo", interval: "month" });
out.jackdbd_breakdown = await breakdown(cfg, { metrics: "visitors,pageviews", period: "30d", limit: 3 });
console.log(JSON.stringify(out));
`

func TestPlausibleClientsNPM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node")
	}
	node, err := exec.LookPath("node")
	for _, c := range npmClients {
		if err == nil {
			_, err = os.Stat(filepath.Join(npmDir, "node_modules", c, "package.json"))
		}
	}
	if err != nil {
		// .ci/run installs them: a missing client fails there.
		msg := fmt.Sprintf("Plausible's npm clients are not installed (%v): run `npm ci --prefix httpd/%s`", err, npmDir)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := newFixture(t, nil)
	f.plSeed(t)
	// Visitors from two countries and one unknown on website 2.
	var countries []engine.Hit
	for _, addr := range []string{"8.8.8.8", "9.9.9.9", "1.1.1.1", "203.0.113.9"} {
		h := plPV("2026-11-19 12:00", "x", "https://blog.example.org/")
		h.Website, h.IP = 2, netip.MustParseAddr(addr)
		countries = append(countries, h)
	}
	f.track(t, nil, countries...)
	srv := httptest.NewServer(f.s)
	defer srv.Close()
	// The script comes on stdin, so node resolves its imports from the
	// working directory's node_modules.
	run := exec.CommandContext(ctx, node, "--input-type=module", "-")
	run.Dir = npmDir
	run.Stdin = strings.NewReader(clientScript)
	run.Env = append(os.Environ(), "WEBSTATS_URL="+srv.URL, "WEBSTATS_KEY="+f.alice)
	out, err := run.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("clients' results: %s", out)

	// What each call must have read: the same server's own answer
	// (the "results" of the v1 body), reshaped as the client reshapes it.
	results := func(path string) any {
		w := f.do(request{method: "GET", path: path, key: f.alice})
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		return body["results"]
	}
	want := map[string]any{
		"schotsl_realtime":           1.0,
		"schotsl_aggregate":          results("/api/v1/stats/aggregate?site_id=example.com&period=7d&metrics=visitors,pageviews,bounce_rate,visit_duration&compare=previous_period&date=2026-11-20").(map[string]any)["visitors"],
		"schotsl_timeseries":         results("/api/v1/stats/timeseries?site_id=example.com&period=7d&metrics=visitors,pageviews&interval=date&date=2026-11-20"),
		"schotsl_breakdown":          results("/api/v1/stats/breakdown?site_id=example.com&period=30d&metrics=visitors,bounce_rate&property=visit:source&limit=10&page=1&date=2026-11-20"),
		"schotsl_breakdown_filtered": results("/api/v1/stats/breakdown?site_id=example.com&period=30d&metrics=visitors&property=event:page&filters=event:page%3D%3D/blog/*&date=2026-11-20"),
		"schotsl_breakdown_country": []any{
			map[string]any{"country": "US", "visitors": 2.0},
			map[string]any{"country": "AU", "visitors": 1.0},
		},
		"schotsl_error":      "The metric `baa` is not recognized. Find valid metrics from the documentation: https://plausible.io/docs/stats-api#metrics",
		"jackdbd_aggregate":  results("/api/v1/stats/aggregate?site_id=example.com&metrics=visitors,visits,pageviews&period=30d&compare=previous_period"),
		"jackdbd_timeseries": results("/api/v1/stats/timeseries?site_id=example.com&interval=month&metrics=visitors&period=6mo"),
		"jackdbd_breakdown":  results("/api/v1/stats/breakdown?site_id=example.com&limit=3&metrics=visitors,pageviews&page=1&period=30d&property=event:page"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clients' results mismatch (-server +client):\n%s", diff)
	}
	// And the numbers are the seeded ones, not merely consistent.
	if v := got["schotsl_aggregate"].(map[string]any)["value"]; v != 3.0 {
		t.Errorf("visitors of the 7 days to 2026-11-20 (U1, U2, U3): %v, want 3", v)
	}
	if rows := got["schotsl_breakdown_filtered"].([]any); len(rows) != 2 || !strings.HasPrefix(rows[0].(map[string]any)["page"].(string), "/blog/") {
		t.Errorf("pages under /blog/: %v", rows)
	}
}
