package httpd

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fuzzRequest builds a request as the server would parse it, or nil when no
// HTTP/1.1 request could carry these values.
func fuzzRequest(method, target, ctype string, body []byte, key string) *http.Request {
	if method == "" || strings.ContainsFunc(method, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) }) {
		return nil
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || !strings.HasPrefix(u.Path, "/") || strings.ContainsAny(target, " \r\n") {
		return nil
	}
	r := &http.Request{
		Method: method, URL: u, RequestURI: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header), Host: "example.com", RemoteAddr: "192.0.2.1:1234",
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
	if ctype != "" && !strings.ContainsAny(ctype, "\r\n") {
		r.Header.Set("Content-Type", ctype)
	}
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	return r
}

// FuzzAPI sends random methods, paths, queries and bodies through the
// router, with and without a key: no input may answer 5xx, and every answer
// but /metrics, a preflight and a HEAD is JSON with a matching status.
func FuzzAPI(f *testing.F) {
	fx := newFixture(f, nil)
	fx.seedStats(f)
	seeds := []struct {
		method, target, ctype, body string
		auth                        bool
	}{
		{"GET", "/api/v1/websites?search=ex&sort_by=domain&sort=asc&per_page=25&page=2", "", "", true},
		{"POST", "/api/v1/websites", "application/json", `{"domain":"fuzz.example","privacy":1,"email":true,"exclude_ips":null}`, true},
		{"POST", "/public/api/v1/websites", "application/x-www-form-urlencoded", "domain=f2.example&timezone=Europe%2FBerlin", true},
		{"POST", "/api/v1/websites", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"domain\"\r\n\r\nm.example\r\n--B--\r\n", true},
		{"PATCH", "/api/v1/websites/1", "application/json", `{"privacy":"2","password":"x","exclude_params":"&"}`, true},
		{"PUT", "/api/v1/websites/2", "text/plain", `{"email":1e400}`, true},
		{"DELETE", "/api/v1/websites/3", "", "", true},
		{"GET", "/api/v1/stats/1?name=page&from=2026-11-01&to=2026-11-30&search=p&sort_by=value&per_page=100&page=1", "", "", true},
		{"GET", "/api/v1/stats/1?name=visitors_hour&from=0001-01-01&to=9999-12-31", "", "", true},
		{"GET", "/api/v1/stats/4294967295?name=x", "", "", true},
		{"POST", "/api/v1/websites/1/events", "application/x-ndjson", `{"time":"2026-11-20T10:00:00Z","page":"/a","ip":"8.8.8.8","event":{"name":"x","value":1e308}}`, true},
		{"GET", "/api/v1/account", "", "", false},
		{"OPTIONS", "/api/v1/websites", "", "", false},
		{"TRACE", "/api/v1/websites/1", "", "", true},
		{"GET", "/metrics", "", "", false},
		{"GET", "/healthz/x/../", "", "", false},
		{"POST", "/api/v1/websites/%2F/events", "", "[", true},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.ctype, []byte(s.body), s.auth)
	}
	f.Fuzz(func(t *testing.T, method, target, ctype string, body []byte, auth bool) {
		key := ""
		if auth {
			key = fx.alice
		}
		r := fuzzRequest(method, target, ctype, body, key)
		if r == nil {
			return
		}
		w := httptest.NewRecorder()
		fx.s.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s (%q, %q): %d %s", method, target, ctype, body, w.Code, w.Body)
		}
		if r.URL.Path == "/metrics" || w.Code == http.StatusNoContent || method == http.MethodHead ||
			w.Code/100 == 3 || (w.Code == 200 && method == http.MethodOptions) {
			return
		}
		var env struct {
			Status int `json:"status"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
			t.Fatalf("%s %s: answer %d is not JSON: %v\n%s", method, target, w.Code, err, w.Body)
		}
		if want := w.Code; want != 201 && r.URL.Path != "/healthz" && env.Status != want {
			t.Fatalf("%s %s: HTTP %d but body status %d", method, target, w.Code, env.Status)
		}
	})
}

// FuzzImportBody sends random import bodies: the answer is 200, 413 or 422;
// a 200 accounts for every event, and parseImport agrees with the handler.
func FuzzImportBody(f *testing.F) {
	fx := newFixture(f, nil)
	for _, s := range []string{
		`{"time":"2026-11-20T10:00:00Z","page":"https://example.com/a?utm_campaign=x","referrer":"https://www.google.com/","user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0","ip":"8.8.8.8","screen_resolution":"1920x1080","language":"en-US","visitor":"v","event":{"name":"Signup","value":5,"unit":"USD"}}`,
		"{\"time\":\"2026-11-20T10:00:00+05:30\",\"page\":\"/x\",\"visitor\":\"a\"}\n{\"time\":\"2026-11-19T10:00:00Z\",\"page\":\"/y\",\"ip\":\"::1\"}\n",
		`[{"time":"2026-11-20T10:00:00Z","page":"/","ip":"1.1.1.1"},{"time":"2026-11-20T09:00:00Z","page":"/b","ip":"1.1.1.1","event":{"name":"a:b","value":"12.50","unit":null}}]`,
		`[{"time":"2026-11-20T10:00:00Z","page":"http://[::1]:80/","ip":"1.1.1.1"}]`,
		`[{"time":"2026-11-20T10:00:00Z","page":"https://ex ample.com/","ip":"1.1.1.1"}]`,
		`{"time":"0000-01-01T00:00:00Z","page":"/","ip":"1.1.1.1"}`,
		`[1,2`, `"x"`, `{}`, `null`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		hits, perr := parseImport(bytes.NewReader(body), 1, epoch)
		w := fx.do(request{method: "POST", path: "/api/v1/websites/1/events", key: fx.alice, ctype: "application/x-ndjson", body: string(body)})
		switch w.Code {
		case 200:
			if perr != nil {
				t.Fatalf("handler accepted what parseImport refused: %v", perr)
			}
			var res struct {
				Data struct {
					Accepted int            `json:"accepted"`
					Dropped  map[string]int `json:"dropped"`
				} `json:"data"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			n := res.Data.Accepted
			for _, d := range res.Data.Dropped {
				n += d
			}
			if n != len(hits) {
				t.Fatalf("accepted + dropped = %d, want %d events: %s", n, len(hits), w.Body)
			}
			if _, ok := res.Data.Dropped["bot"]; !ok {
				t.Fatalf("dropped lacks bot: %s", w.Body)
			}
			for _, h := range hits {
				if h.Website != 1 || h.Time.IsZero() || h.URL == "" || (h.Visitor == "" && !h.IP.IsValid()) {
					t.Fatalf("bad hit from a valid body: %+v", h)
				}
			}
		case 413, 422:
			if perr == nil && body != nil && len(body) < 1<<20 {
				t.Fatalf("handler refused (%d) what parseImport accepted: %s", w.Code, w.Body)
			}
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}

// FuzzPlainString: whenever plainString decodes a value, json.Unmarshal
// decodes it to the same string (plainString is its fast path).
func FuzzPlainString(f *testing.F) {
	for _, s := range []string{`"a"`, `""`, `"https://example.com/a?b=1"`, `"é"`, `"a\"b"`, `"a\\b"`, `"\u00e9"`, "\"\xff\"", "\"a\tb\"", `"a`, `a"`, `"`, `12`, `null`, ` "a" `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := plainString(raw)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("plainString(%q) = %q, but json.Unmarshal fails: %v", raw, got, err)
		}
		if got != want {
			t.Fatalf("plainString(%q) = %q, json.Unmarshal gives %q", raw, got, want)
		}
	})
}

// FuzzFlatObject: whenever flatObject decodes an event, json.Unmarshal
// decodes it into the same map of raw values (flatObject is its fast path).
func FuzzFlatObject(f *testing.F) {
	for _, s := range []string{
		`{"time":"2026-11-20T10:00:00Z","page":"/a","ip":"8.8.8.8"}`, `{}`, ` { } `, `{"a":1,"a":2}`,
		`{"a":-1.5e3,"b":true,"c":false,"d":null}`, `{"a" : "x" , "b":"y"}`, `{"a":01}`, `{"a":nul}`, `{"a":1"b"}`,
		`{"a":"x\"y"}`, `{"a\u0041":1}`, "{\"\xff\":1}", `{"a":{"b":1}}`, `{"a":[1]}`, `{"a":1,}`, `{"a":1}x`, `{"a"}`, `[1]`, `null`, `{"a":"é"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := flatObject(raw)
		if !ok {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("flatObject(%q) = %q, but json.Unmarshal fails: %v", raw, got, err)
		}
		if len(got) != len(want) {
			t.Fatalf("flatObject(%q) = %q, json.Unmarshal gives %q", raw, got, want)
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || !bytes.Equal(g, v) {
				t.Fatalf("flatObject(%q) = %q, json.Unmarshal gives %q", raw, got, want)
			}
		}
	})
}
