package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

func TestEmbed(t *testing.T) {
	ctx := t.Context()
	e, err := engine.Open(nil) // in memory
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, err := newApp(ctx, e, "www.Example.com")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()

	const firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:130.0) Gecko/20100101 Firefox/130.0"
	hits := []struct {
		body, ua, lang string
		wantDropped    string
	}{
		{body: `{"url":"https://example.com/","referrer":"https://news.ycombinator.com/"}`, ua: firefox, lang: "en-GB"},
		{body: `{"url":"https://example.com/pricing","referrer":"https://example.com/"}`, ua: firefox, lang: "en-GB"},
		{body: `{"url":"https://www.example.com/"}`, ua: firefox, lang: "de"},
		{body: `{"url":"https://example.com/?utm_campaign=launch"}`, ua: firefox, lang: "fr"},
		{body: `{"url":"https://example.com/pricing"}`, ua: firefox, lang: "fr"},
		{body: `{"url":"https://example.com/docs"}`, ua: firefox, lang: "fr"},
		{body: `{"url":"https://example.com/"}`, ua: firefox, lang: "", wantDropped: ""}, // no Accept-Language is no bot (SPEC §2.4)
		{body: `{"url":"https://example.com/"}`, ua: "Mozilla/5.0 (compatible; bingbot/2.0)", lang: "en", wantDropped: "bot"},
		{body: `{"url":"https://other.example/"}`, ua: firefox, lang: "en", wantDropped: "unknown-site"},
	}
	for _, h := range hits {
		req, _ := http.NewRequest("POST", srv.URL+"/hit", strings.NewReader(h.body))
		req.Header.Set("User-Agent", h.ua)
		req.Header.Set("Accept-Language", h.lang)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Dropped") != h.wantDropped {
			t.Errorf("POST /hit %s: %s, X-Dropped %q; want 202, %q", h.body, resp.Status, resp.Header.Get("X-Dropped"), h.wantDropped)
		}
	}
	resp, err := http.Post(srv.URL+"/hit", "application/json", strings.NewReader(`{"url":`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("POST /hit with malformed JSON: %s, want 400", resp.Status)
	}

	resp, err = http.Get(srv.URL + "/top-pages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got topPagesResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := []engine.Row{{Value: "/", Count: 3}, {Value: "/pricing", Count: 2}, {Value: "/?utm_campaign=launch", Count: 1}, {Value: "/docs", Count: 1}}
	if diff := cmp.Diff(want, got.Pages); diff != "" {
		t.Errorf("top pages mismatch (-want +got):\n%s", diff)
	}
	if got.From >= got.To {
		t.Errorf("range %s … %s", got.From, got.To)
	}
}
