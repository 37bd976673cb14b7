package httpd

import (
	"net/http"
	"strings"
	"testing"
)

// TestGolden serves one request per endpoint and error shape on a fresh
// fixture and compares the answer with testdata/<name>.json.
func TestGolden(t *testing.T) {
	const ndjson = `{"time":"2026-11-20T10:00:00Z","page":"https://example.com/a?utm_campaign=x","referrer":"https://www.google.com/","user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0","ip":"8.8.8.8","screen_resolution":"1920x1080","language":"en-US"}
{"time":"2026-11-20T11:00:00+01:00","page":"/b","visitor":"v-1","user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0","event":{"name":"Signup","value":5,"unit":"USD"}}
{"time":"2026-11-20T10:05:00Z","page":"/c","ip":"8.8.4.4","user_agent":"Googlebot/2.1 (+http://www.google.com/bot.html)"}
`
	tests := []struct {
		name     string
		opts     *Options
		setup    func(f *fixture)
		req      func(f *fixture) request
		wantCode int
	}{
		{name: "healthz", wantCode: 200,
			req: func(f *fixture) request { return request{method: "GET", path: "/healthz"} }},

		// Websites.
		{name: "websites_list", wantCode: 200,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/websites", key: f.alice} }},
		{name: "websites_list_public_prefix", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/public/api/v1/websites", key: f.alice}
			}},
		{name: "websites_list_params", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/websites?search=EXAMPLE&search_by=domain&sort_by=domain&sort=asc&per_page=25&page=1", key: f.alice}
			}},
		{name: "websites_list_fallbacks", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/websites?sort_by=url&sort=up&per_page=7&page=0&q=a+b%2Fc", key: f.alice}
			}},
		{name: "websites_list_past_end", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/websites?page=5", key: f.alice}
			}},
		{name: "websites_list_empty", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/websites?search=nothing", key: f.alice}
			}},
		{name: "website_show", wantCode: 200,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/websites/2", key: f.alice} }},
		{name: "website_store_json", wantCode: 201,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites", key: f.alice, ctype: "application/json;charset=utf-8",
					body: `{"domain":"https://www.New-Site.com/","privacy":2,"password":"secret","email":true,"exclude_bots":false,"exclude_params":"utm_source\nfbclid","exclude_ips":"10.0.0.0/8","timezone":"America/New_York"}`}
			}},
		{name: "website_store_form", wantCode: 201,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites", key: f.alice, ctype: "application/x-www-form-urlencoded",
					body: "domain=form.example&privacy=0&exclude_ips=1.2.3.4%0A5.6.7.0%2F24"}
			}},
		{name: "website_store_multipart", wantCode: 201,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites", key: f.alice, ctype: "multipart/form-data; boundary=XX",
					body: "--XX\r\nContent-Disposition: form-data; name=\"domain\"\r\n\r\nmultipart.example\r\n--XX\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n1\r\n--XX--\r\n"}
			}},
		{name: "website_store_422_required", wantCode: 422,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites", key: f.alice, ctype: "application/json", body: `{"privacy":5}`}
			}},
		{name: "website_store_422_taken", wantCode: 422,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites", key: f.bob, ctype: "application/json", body: `{"domain":"www.example.com"}`}
			}},
		{name: "website_store_422_types", wantCode: 422,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites", key: f.alice, ctype: "application/json", body: `{"domain":["a.com"],"timezone":{"x":1}}`}
			}},
		{name: "website_store_400_json", wantCode: 400,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites", key: f.alice, ctype: "application/json", body: `{"domain":`}
			}},
		{name: "website_store_413", wantCode: 413,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites", key: f.alice, ctype: "application/x-www-form-urlencoded",
					body: "domain=a.com&exclude_params=" + strings.Repeat("x", 300<<10)}
			}},
		{name: "website_update_patch", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "PATCH", path: "/api/v1/websites/1", key: f.alice, ctype: "application/json",
					body: `{"domain":"ignored.com","privacy":0,"exclude_bots":0,"exclude_params":"&"}`}
			}},
		{name: "website_update_put_form", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "PUT", path: "/api/v1/websites/1", key: f.alice, ctype: "application/x-www-form-urlencoded",
					body: "email=1&timezone=Asia%2FTokyo"}
			}},
		{name: "website_update_null_clears", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "PATCH", path: "/api/v1/websites/2", key: f.alice, ctype: "application/json",
					body: `{"exclude_params":null,"exclude_ips":null,"timezone":null}`}
			}},
		{name: "website_update_422", wantCode: 422,
			req: func(f *fixture) request {
				return request{method: "PATCH", path: "/api/v1/websites/1", key: f.alice, ctype: "application/json",
					body: `{"privacy":2,"timezone":"Mars/Olympus","exclude_ips":"not an ip"}`}
			}},
		{name: "website_delete", wantCode: 200,
			req: func(f *fixture) request { return request{method: "DELETE", path: "/api/v1/websites/2", key: f.alice} }},

		// Statistics.
		{name: "stats_page", wantCode: 200, setup: (*fixture).seedStatsT,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/stats/1?name=page&from=2026-11-01&to=2026-11-21", key: f.alice}
			}},
		{name: "stats_page_3", wantCode: 200, setup: (*fixture).seedStatsT,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/stats/1?name=page&from=2026-11-01&to=2026-11-21&sort_by=value&sort=asc&page=3", key: f.alice}
			}},
		{name: "stats_search", wantCode: 200, setup: (*fixture).seedStatsT,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/stats/1?name=page&from=2026-11-01&to=2026-11-21&search=P1&search_by=value&per_page=25", key: f.alice}
			}},
		{name: "stats_browser", wantCode: 200, setup: (*fixture).seedStatsT,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/stats/1?name=browser&from=2026-11-20&to=2026-11-20", key: f.alice}
			}},
		{name: "stats_past_last", wantCode: 200, setup: (*fixture).seedStatsT,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/stats/1?name=page&from=2026-11-01&to=2026-11-21&page=9", key: f.alice}
			}},
		{name: "stats_empty", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/stats/1?name=visitors&from=2026-11-01&to=2026-11-21", key: f.alice}
			}},
		{name: "stats_422_required", wantCode: 422,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/stats/1", key: f.alice} }},
		{name: "stats_422_invalid", wantCode: 422,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/stats/1?name=nope&from=2026-13-01&to=21/11/2026", key: f.alice}
			}},
		{name: "stats_422_order", wantCode: 422,
			req: func(f *fixture) request {
				return request{method: "GET", path: "/api/v1/stats/1?name=page&from=2026-11-21&to=2026-11-01", key: f.alice}
			}},

		// Account.
		{name: "account", wantCode: 200,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/account", key: f.alice} }},

		// Import.
		{name: "import_ndjson", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/x-ndjson", body: ndjson}
			}},
		{name: "import_array", wantCode: 200,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites/3/events", key: f.bob, ctype: "application/json",
					body: `[{"time":"2026-11-20T10:00:00Z","page":"https://unrelated.host/x","ip":"2001:db8::1"}]`}
			}},
		{name: "import_422", wantCode: 422,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/x-ndjson",
					body: `{"time":"2026-11-20T10:00:00Z","page":"/ok","ip":"8.8.8.8"}
{"time":"yesterday","page":"ftp://x","ip":"999.1.1.1"}
{"page":"/x"}
{"time":"2026-11-25T00:00:00Z","page":7,"visitor":"v","event":{"value":[1]}}
[1]
`}
			}},
		{name: "import_422_empty", wantCode: 422,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/json", body: `[]`}
			}},
		{name: "import_413_events", wantCode: 413,
			req: func(f *fixture) request {
				return request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/x-ndjson",
					body: strings.Repeat(`{"time":"2026-11-20T10:00:00Z","page":"/","ip":"8.8.8.8"}`+"\n", maxImportEvents+1)}
			}},

		// Errors.
		{name: "error_401_missing", wantCode: 401,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/websites"} }},
		{name: "error_401_wrong", wantCode: 401,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/nowhere", key: "ws_wrong"} }},
		{name: "error_404_id", wantCode: 404,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/websites/99", key: f.alice} }},
		{name: "error_404_other_account", wantCode: 404,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/websites/3", key: f.alice} }},
		{name: "error_404_bad_id", wantCode: 404,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/websites/-1", key: f.alice} }},
		{name: "error_404_path", wantCode: 404,
			req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/nowhere", key: f.alice} }},
		{name: "error_404_outside_api", wantCode: 404,
			req: func(f *fixture) request { return request{method: "GET", path: "/nowhere"} }},
		{name: "error_405", wantCode: 405,
			req: func(f *fixture) request { return request{method: "DELETE", path: "/api/v1/account", key: f.alice} }},
		{name: "error_429", wantCode: 429, opts: &Options{RateLimit: 1},
			setup: func(f *fixture) { f.do(request{method: "GET", path: "/api/v1/account", key: f.alice}) },
			req:   func(f *fixture) request { return request{method: "GET", path: "/api/v1/account", key: f.alice} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.opts)
			if tt.setup != nil {
				tt.setup(f)
			}
			w := f.do(tt.req(f))
			if w.Code != tt.wantCode {
				t.Errorf("status = %d, want %d\n%s", w.Code, tt.wantCode, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			golden(t, tt.name, w.Body.Bytes())
		})
	}
}

func (f *fixture) seedStatsT() { f.seedStats(f.t) }

// TestStoreStatus checks that store answers HTTP 201 while its body says 200.
func TestStoreStatus(t *testing.T) {
	f := newFixture(t, nil)
	w := f.do(request{method: "POST", path: "/api/v1/websites", key: f.alice, ctype: "application/json", body: `{"domain":"x.org"}`})
	if w.Code != http.StatusCreated {
		t.Fatalf("status = %d, want 201", w.Code)
	}
	if !strings.HasSuffix(strings.TrimSpace(w.Body.String()), `"status":200}`) {
		t.Errorf("body = %s, want status 200", w.Body)
	}
}
