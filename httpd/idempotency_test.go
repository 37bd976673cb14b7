package httpd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/snapshot"
)

// The import's Idempotency-Key (SPEC §3.4 "Retries", issue #38 row 10).

// keyedImport is an import of n pageviews of page on 2026-11-20 (by
// visitors v0…), and one Googlebot hit, with an Idempotency-Key.
func keyedImport(key string, website, n int, page string) request {
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"time":"2026-11-20T10:%02d:00Z","page":%q,"visitor":"v%d"}`, i%60, page, i))
	}
	lines = append(lines, `{"time":"2026-11-20T11:00:00Z","page":"/bot","ip":"66.249.66.1","user_agent":"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"}`)
	r := request{method: "POST", path: fmt.Sprintf("/api/v1/websites/%d/events", website), ctype: "application/x-ndjson", body: strings.Join(lines, "\n")}
	if key != "\x00none" {
		r.header = map[string]string{"Idempotency-Key": key}
	}
	return r
}

// views is the pageviews of page on website on 2026-11-20.
func (f *fixture) views(website uint32, page string) uint64 {
	f.t.Helper()
	p, err := f.e.Unscoped().Stat(context.Background(), engine.StatQuery{Website: website, Name: "page",
		From: engine.DateOf(2026, 11, 20), To: engine.DateOf(2026, 11, 20), PerPage: 100})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, r := range p.Rows {
		if r.Value == page {
			return r.Count
		}
	}
	return 0
}

// wantImport checks an import's answer: 200 with n accepted and one bot,
// and whether it says it repeated an earlier one. It returns the body.
func wantImport(t *testing.T, what string, w *httptest.ResponseRecorder, n int, replayed bool) string {
	t.Helper()
	var body struct {
		Data struct {
			Accepted int            `json:"accepted"`
			Dropped  map[string]int `json:"dropped"`
		} `json:"data"`
	}
	raw := w.Body.String()
	if w.Code != http.StatusOK || json.Unmarshal([]byte(raw), &body) != nil {
		t.Fatalf("%s: %d %s", what, w.Code, raw)
	}
	if body.Data.Accepted != n || body.Data.Dropped["bot"] != 1 || body.Data.Dropped["excluded_ip"] != 0 {
		t.Errorf("%s: answered %s, want %d accepted and 1 bot", what, raw, n)
	}
	if got := w.Header().Get("Idempotent-Replayed") == "true"; got != replayed {
		t.Errorf("%s: Idempotent-Replayed %q, want replayed=%v", what, w.Header().Get("Idempotent-Replayed"), replayed)
	}
	return raw
}

func TestImportIdempotencyKey(t *testing.T) {
	f := newFixture(t, nil)
	send := func(key string, website, n int, page string) *httptest.ResponseRecorder {
		r := keyedImport(key, website, n, page)
		r.key = f.alice
		return f.do(r)
	}
	first := wantImport(t, "first", send("batch-1", 1, 3, "/a"), 3, false)
	again := wantImport(t, "repeat", send("batch-1", 1, 3, "/a"), 3, true)
	if first != again {
		t.Errorf("the repeat answered %s, the first %s: want the same body", again, first)
	}
	// The repeat answers the first's counts whatever it carries, and
	// counts nothing.
	wantImport(t, "repeat with other events", send("batch-1", 1, 5, "/b"), 3, true)
	// Even a body that would not be valid: the key is looked at first.
	bad := keyedImport("batch-1", 1, 1, "/a")
	bad.key, bad.body = f.alice, `{"time":"yesterday"}`
	if got := wantImport(t, "repeat with an invalid body", f.do(bad), 3, true); got != first {
		t.Errorf("the repeat with an invalid body answered %s, the first %s", got, first)
	}
	if a, b := f.views(1, "/a"), f.views(1, "/b"); a != 3 || b != 0 {
		t.Errorf("after repeats: /a %d, /b %d; want 3 and 0", a, b)
	}
	wantImport(t, "another key", send("batch-2", 1, 2, "/a"), 2, false)
	wantImport(t, "the same key on another website", send("batch-1", 2, 4, "/a"), 4, false)
	if a, other := f.views(1, "/a"), f.views(2, "/a"); a != 5 || other != 4 {
		t.Errorf("/a: website 1 %d, website 2 %d; want 5 and 4", a, other)
	}
	// Without the header, a repeat counts again.
	wantImport(t, "no key", send("\x00none", 1, 1, "/c"), 1, false)
	wantImport(t, "no key again", send("\x00none", 1, 1, "/c"), 1, false)
	if got := f.views(1, "/c"); got != 2 {
		t.Errorf("/c without a key: %d views, want 2", got)
	}
	// Seven days on the key is forgotten (the engine's clock).
	f.clock.Advance(engine.KeyTTL - time.Second)
	wantImport(t, "repeat after 7 days less a second", send("batch-1", 1, 3, "/a"), 3, true)
	f.clock.Advance(time.Second)
	wantImport(t, "repeat after 7 days", send("batch-1", 1, 3, "/a"), 3, false)
	if got := f.views(1, "/a"); got != 8 {
		t.Errorf("/a after the key expired: %d views, want 8", got)
	}
}

func TestImportIdempotencyKeyInvalid(t *testing.T) {
	f := newFixture(t, nil)
	for _, key := range []string{"", strings.Repeat("x", 129), "caf\u00e9", "a\x01b", "a\x7fb"} {
		r := keyedImport(key, 1, 2, "/a")
		r.key = f.alice
		w := f.do(r)
		want := `{"message":{"Idempotency-Key":["The Idempotency-Key header must be 1 to 128 printable ASCII characters."]},"status":422}`
		if w.Code != http.StatusUnprocessableEntity || strings.TrimSpace(w.Body.String()) != want {
			t.Errorf("key %q: %d %s, want 422 %s", key, w.Code, w.Body, want)
		}
	}
	// Sent twice: which one would count?
	r := keyedImport("a", 1, 2, "/a")
	r.key = f.alice
	req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
	req.Header.Set("Authorization", "Bearer "+f.alice)
	req.Header.Add("Idempotency-Key", "a")
	req.Header.Add("Idempotency-Key", "b")
	w := httptest.NewRecorder()
	f.s.ServeHTTP(w, req)
	if w.Code != http.StatusUnprocessableEntity {
		t.Errorf("two Idempotency-Key headers: %d %s, want 422", w.Code, w.Body)
	}
	if got := f.views(1, "/a"); got != 0 {
		t.Errorf("%d views counted by refused imports", got)
	}
	// 128 printable characters, spaces inside, are a key.
	r = keyedImport(strings.Repeat("~", 60)+" "+strings.Repeat("!", 67), 1, 2, "/a")
	r.key = f.alice
	wantImport(t, "a key of 128 characters", f.do(r), 2, false)
	// Another account's website: 404 before the key is looked at.
	r = keyedImport("", 3, 2, "/a")
	r.key = f.alice
	if w := f.do(r); w.Code != http.StatusNotFound {
		t.Errorf("another's website with a bad key: %d, want 404", w.Code)
	}
}

// TestImportIdempotencyKeyLimit: past the keys a website holds, a new key
// is refused with 429 and Retry-After (the oldest key's expiry); a held
// key still answers, and an import without a key still counts.
func TestImportIdempotencyKeyLimit(t *testing.T) {
	c := newClock()
	e, err := engine.Open(&engine.Options{FS: snapshot.NewMemFS(), NoSync: true, SnapshotEvery: -1, Now: c.Now, MaxImportKeys: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := New(e, &Options{RateLimit: -1, Now: c.Now})
	a, key, err := identity.Must(e).CreateAccount(context.Background(), "A", "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.Owner(a.ID).CreateWebsite(context.Background(), engine.WebsiteInput{Domain: ptr("a.example")})
	if err != nil {
		t.Fatal(err)
	}
	send := func(k string) *httptest.ResponseRecorder {
		r := keyedImport(k, int(w.ID), 1, "/a")
		r.key = key
		return serve(s, r)
	}
	wantImport(t, "k1", send("k1"), 1, false)
	c.Advance(time.Hour)
	wantImport(t, "k2", send("k2"), 1, false)
	resp := send("k3")
	body := resp.Body.String()
	wantBody := `{"message":"Too Many Attempts.","status":429}`
	if resp.Code != http.StatusTooManyRequests || strings.TrimSpace(body) != wantBody {
		t.Errorf("a third key: %d %s, want 429 %s", resp.Code, body, wantBody)
	}
	// k1 expires 7 days after it was used, an hour ago.
	if ra, _ := strconv.Atoi(resp.Header().Get("Retry-After")); ra != int((engine.KeyTTL - time.Hour).Seconds()) {
		t.Errorf("Retry-After %q, want %d", resp.Header().Get("Retry-After"), int((engine.KeyTTL - time.Hour).Seconds()))
	}
	wantImport(t, "k1 again", send("k1"), 1, true)
	wantImport(t, "no key", send("\x00none"), 1, false)
	c.Advance(engine.KeyTTL - time.Hour)
	wantImport(t, "k3 once k1 expired", send("k3"), 1, false)
}

// TestImportIdempotencyKeyConcurrent: repeats sent while the first is
// under way wait for it; the import counts once.
func TestImportIdempotencyKeyConcurrent(t *testing.T) {
	f := newFixture(t, nil)
	const n = 12
	var wg sync.WaitGroup
	replayed := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			r := keyedImport("same", 1, 500, "/a")
			r.key = f.alice
			w := f.do(r)
			if w.Code != http.StatusOK {
				t.Errorf("call %d: %d %s", i, w.Code, w.Body)
			}
			replayed[i] = w.Header().Get("Idempotent-Replayed") == "true"
		})
	}
	wg.Wait()
	firsts := 0
	for _, r := range replayed {
		if !r {
			firsts++
		}
	}
	if firsts != 1 {
		t.Errorf("%d of %d concurrent calls counted, want 1", firsts, n)
	}
	if got := f.views(1, "/a"); got != 500 {
		t.Errorf("%d views, want 500", got)
	}
}
