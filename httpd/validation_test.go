package httpd

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// errorFields returns the 422 message object of an answer.
func errorFields(t *testing.T, body []byte) map[string][]string {
	t.Helper()
	var got struct {
		Message map[string][]string `json:"message"`
		Status  int                 `json:"status"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("not a 422 body: %v\n%s", err, body)
	}
	if got.Status != 422 {
		t.Fatalf("body status %d, want 422", got.Status)
	}
	return got.Message
}

func TestWebsiteValidation(t *testing.T) {
	long := strings.Repeat("abcdefghi.", 25) + "example"
	tests := []struct {
		name   string
		method string // default POST /websites; PATCH goes to /websites/1
		ctype  string // default JSON
		body   string
		want   map[string][]string // nil: accepted
	}{
		{name: "domain required", body: `{}`, want: map[string][]string{"domain": {"The domain field is required."}}},
		{name: "domain blank", body: `{"domain":"  "}`, want: map[string][]string{"domain": {"The domain field is required."}}},
		{name: "domain null", body: `{"domain":null}`, want: map[string][]string{"domain": {"The domain field is required."}}},
		{name: "domain with path", body: `{"domain":"example.net/blog"}`, want: map[string][]string{"domain": {"The domain format is invalid."}}},
		{name: "domain too long", body: `{"domain":"` + long + `"}`, want: map[string][]string{"domain": {"The domain must not be greater than 255 characters."}}},
		{name: "domain taken", body: `{"domain":"https://www.EXAMPLE.com/"}`, want: map[string][]string{"domain": {"The domain has already been taken."}}},
		{name: "domain taken by another account", body: `{"domain":"other.net"}`, want: map[string][]string{"domain": {"The domain has already been taken."}}},
		{name: "domain array", body: `{"domain":["x.com"]}`, want: map[string][]string{"domain": {"The domain must be a string."}}},
		{name: "domain a huge number", body: `{"domain":1e999}`, want: map[string][]string{"domain": {"The domain must be a string."}}},
		{name: "domain a number", body: `{"domain":12345}`, want: map[string][]string{"domain": {"The domain must be a string."}}},
		{name: "domain a boolean", body: `{"domain":true}`, want: map[string][]string{"domain": {"The domain must be a string."}}},
		{name: "domain bare www", body: `{"domain":"https://www."}`, want: map[string][]string{"domain": {"The domain format is invalid."}}},
		{name: "domain confusable", body: `{"domain":"ⓖⓞⓞⓖⓛⓔ.com"}`, want: map[string][]string{"domain": {"The domain format is invalid."}}},
		{name: "domain full-width", body: `{"domain":"ｅｘａｍｐｌｅ.org"}`, want: map[string][]string{"domain": {"The domain format is invalid."}}},
		{name: "domain form confusable", ctype: "application/x-www-form-urlencoded", body: "domain=%E2%93%96%E2%93%9E%E2%93%9E%E2%93%96%E2%93%9B%E2%93%94.com", want: map[string][]string{"domain": {"The domain format is invalid."}}},
		{name: "domain ok", body: `{"domain":"ok.example"}`},
		{name: "domain IDN", body: `{"domain":"bücher.example"}`},
		{name: "domain from query", ctype: "-", body: ``, method: "POST?domain=q.example"},
		{name: "privacy out of range", body: `{"domain":"a.example","privacy":3}`, want: map[string][]string{"privacy": {"The selected privacy is invalid."}}},
		{name: "privacy text", body: `{"domain":"a.example","privacy":"x"}`, want: map[string][]string{"privacy": {"The selected privacy is invalid."}}},
		{name: "privacy float", body: `{"domain":"a.example","privacy":1.5}`, want: map[string][]string{"privacy": {"The selected privacy is invalid."}}},
		{name: "privacy 1.0 is 1", body: `{"domain":"a.example","privacy":1.0}`},
		{name: "privacy as string", body: `{"domain":"a.example","privacy":"0"}`},
		{name: "email invalid", body: `{"domain":"a.example","email":2}`, want: map[string][]string{"email": {"The selected email is invalid."}}},
		{name: "email boolean", body: `{"domain":"a.example","email":true}`},
		{name: "exclude_bots invalid", body: `{"domain":"a.example","exclude_bots":"yes"}`, want: map[string][]string{"exclude_bots": {"The selected exclude bots is invalid."}}},
		{name: "exclude_bots boolean", body: `{"domain":"a.example","exclude_bots":false}`},
		{name: "password required for privacy 2", body: `{"domain":"a.example","privacy":2}`, want: map[string][]string{"password": {"The password field is required when privacy is 2."}}},
		{name: "password too long", body: `{"domain":"a.example","privacy":2,"password":"` + strings.Repeat("p", 129) + `"}`, want: map[string][]string{"password": {"The password must not be greater than 128 characters."}}},
		{name: "password of NULs", body: `{"domain":"a.example","privacy":2,"password":"\u0000\u0000\u0000"}`, want: map[string][]string{"password": {"The password must not contain control characters."}}},
		{name: "password with a tab", body: `{"domain":"a.example","privacy":2,"password":"a\tb"}`, want: map[string][]string{"password": {"The password must not contain control characters."}}},
		{name: "update password of NULs", method: "PATCH", body: `{"privacy":2,"password":"\u0000"}`, want: map[string][]string{"password": {"The password must not contain control characters."}}},
		{name: "password ok", body: `{"domain":"a.example","privacy":2,"password":"` + strings.Repeat("p", 128) + `"}`},
		{name: "timezone invalid", body: `{"domain":"a.example","timezone":"Local"}`, want: map[string][]string{"timezone": {"The timezone must be a valid timezone."}}},
		{name: "timezone object", body: `{"domain":"a.example","timezone":{}}`, want: map[string][]string{"timezone": {"The timezone must be a string."}}},
		{name: "exclude_ips invalid", body: `{"domain":"a.example","exclude_ips":"1.2.3.4\nx"}`, want: map[string][]string{"exclude_ips": {`The exclude ips must be IP addresses or CIDR ranges, one per line (line 2: "x" is not an IP address or CIDR).`}}},
		{name: "exclude_params too long", body: `{"domain":"a.example","exclude_params":"` + strings.Repeat("p", 65536) + `"}`, want: map[string][]string{"exclude_params": {"The exclude params must not be greater than 65535 characters."}}},
		{name: "several fields", body: `{"privacy":7,"email":7}`, want: map[string][]string{
			"domain": {"The domain field is required."}, "privacy": {"The selected privacy is invalid."}, "email": {"The selected email is invalid."}}},
		{name: "form privacy invalid", ctype: "application/x-www-form-urlencoded", body: "domain=f.example&privacy=9", want: map[string][]string{"privacy": {"The selected privacy is invalid."}}},
		{name: "update privacy invalid", method: "PATCH", body: `{"privacy":-1}`, want: map[string][]string{"privacy": {"The selected privacy is invalid."}}},
		{name: "update password required", method: "PATCH", body: `{"privacy":"2"}`, want: map[string][]string{"password": {"The password field is required when privacy is 2."}}},
		{name: "update domain ignored", method: "PATCH", body: `{"domain":"other.net"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			req := request{method: "POST", path: "/api/v1/websites", key: f.alice, ctype: "application/json", body: tt.body}
			switch {
			case tt.method == "PATCH":
				req.method, req.path = "PATCH", "/api/v1/websites/1"
			case strings.HasPrefix(tt.method, "POST?"):
				req.path += tt.method[4:]
			}
			if tt.ctype == "-" {
				req.ctype = ""
			} else if tt.ctype != "" {
				req.ctype = tt.ctype
			}
			w := f.do(req)
			if tt.want == nil {
				if w.Code != 200 && w.Code != 201 {
					t.Fatalf("status %d, want success: %s", w.Code, w.Body)
				}
				return
			}
			if w.Code != 422 {
				t.Fatalf("status %d, want 422: %s", w.Code, w.Body)
			}
			if diff := cmp.Diff(tt.want, errorFields(t, w.Body.Bytes())); diff != "" {
				t.Errorf("messages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatsValidation(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name  string
		query string
		want  map[string][]string // nil: 200
	}{
		{"all missing", "", map[string][]string{
			"name": {"The name field is required."}, "from": {"The from field is required."}, "to": {"The to field is required."}}},
		{"name missing", "from=2026-11-01&to=2026-11-02", map[string][]string{"name": {"The name field is required."}}},
		{"name unknown", "name=bogus&from=2026-11-01&to=2026-11-02", map[string][]string{"name": {"The selected name is invalid."}}},
		{"name unknown with bad date", "name=bogus&from=x&to=2026-11-02", map[string][]string{
			"name": {"The selected name is invalid."}, "from": {"The from does not match the format Y-m-d."}}},
		{"from format", "name=page&from=2026-1-01&to=2026-11-02", map[string][]string{"from": {"The from does not match the format Y-m-d."}}},
		{"from impossible day", "name=page&from=2026-02-30&to=2026-11-02", map[string][]string{"from": {"The from does not match the format Y-m-d."}}},
		{"to format", "name=page&from=2026-11-01&to=20261102", map[string][]string{"to": {"The to does not match the format Y-m-d."}}},
		{"to missing", "name=page&from=2026-11-01", map[string][]string{"to": {"The to field is required."}}},
		{"to before from", "name=page&from=2026-11-02&to=2026-11-01", map[string][]string{"to": {"The to must be a date after or equal to from."}}},
		{"same day", "name=page&from=2026-11-02&to=2026-11-02", nil},
		{"alias", "name=pageviews_hour&from=2026-11-01&to=2026-11-02", nil},
		{"every name", "name=visitors_hours&from=2026-11-01&to=2026-11-02", nil},
		{"fallbacks", "name=page&from=2026-11-01&to=2026-11-02&sort_by=id&sort=sideways&per_page=1000&page=-4", nil},
		{"huge range is shortened", "name=page&from=1970-01-01&to=2026-11-21", nil},
		{"huge page", "name=page&from=2026-11-01&to=2026-11-02&page=9223372036854775807", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do(request{method: "GET", path: "/api/v1/stats/1?" + tt.query, key: f.alice})
			if tt.want == nil {
				if w.Code != 200 {
					t.Fatalf("status %d, want 200: %s", w.Code, w.Body)
				}
				return
			}
			if w.Code != 422 {
				t.Fatalf("status %d, want 422: %s", w.Code, w.Body)
			}
			if diff := cmp.Diff(tt.want, errorFields(t, w.Body.Bytes())); diff != "" {
				t.Errorf("messages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImportValidation(t *testing.T) {
	const ok = `"time":"2026-11-20T10:00:00Z","page":"/a","ip":"8.8.8.8"`
	tests := []struct {
		name string
		body string
		want map[string][]string // nil: 200
	}{
		{"valid", `{` + ok + `}`, nil},
		{"offset time", `{"time":"2026-11-20T10:00:00.123-07:00","page":"/a","ip":"8.8.8.8"}`, nil},
		{"full URL of another host", `{"time":"2026-11-20T10:00:00Z","page":"https://elsewhere.example/x?y=1","ip":"8.8.8.8"}`, nil},
		{"visitor instead of ip", `{"time":"2026-11-20T10:00:00Z","page":"/a","visitor":"u1"}`, nil},
		{"null optional fields", `{` + ok + `,"referrer":null,"event":null,"visitor":null}`, nil},
		{"time missing", `{"page":"/a","ip":"8.8.8.8"}`, map[string][]string{"events.0.time": {"The events.0.time field is required."}}},
		{"time not RFC 3339", `{"time":"2026-11-20 10:00:00","page":"/a","ip":"8.8.8.8"}`, map[string][]string{"events.0.time": {"The events.0.time must be a valid RFC 3339 date-time."}}},
		{"time without offset", `{"time":"2026-11-20T10:00:00","page":"/a","ip":"8.8.8.8"}`, map[string][]string{"events.0.time": {"The events.0.time must be a valid RFC 3339 date-time."}}},
		{"time a number", `{"time":1700000000,"page":"/a","ip":"8.8.8.8"}`, map[string][]string{"events.0.time": {"The events.0.time must be a string."}}},
		{"time in a day is fine", `{"time":"` + epoch.Add(24*time.Hour).Format(time.RFC3339) + `","page":"/a","ip":"8.8.8.8"}`, nil},
		{"time too far ahead", `{"time":"` + epoch.Add(24*time.Hour+time.Second).Format(time.RFC3339) + `","page":"/a","ip":"8.8.8.8"}`, map[string][]string{"events.0.time": {"The events.0.time must not be more than one day in the future."}}},
		{"page missing", `{"time":"2026-11-20T10:00:00Z","ip":"8.8.8.8"}`, map[string][]string{"events.0.page": {"The events.0.page field is required."}}},
		{"page relative", `{"time":"2026-11-20T10:00:00Z","page":"a/b","ip":"8.8.8.8"}`, map[string][]string{"events.0.page": {"The events.0.page must be a URL or a path starting with /."}}},
		{"page other scheme", `{"time":"2026-11-20T10:00:00Z","page":"ftp://example.com/","ip":"8.8.8.8"}`, map[string][]string{"events.0.page": {"The events.0.page must be a URL or a path starting with /."}}},
		{"page control character", `{"time":"2026-11-20T10:00:00Z","page":"/a\u0000","ip":"8.8.8.8"}`, map[string][]string{"events.0.page": {"The events.0.page must be a URL or a path starting with /."}}},
		{"page too long", `{"time":"2026-11-20T10:00:00Z","page":"/` + strings.Repeat("a", 2048) + `","ip":"8.8.8.8"}`, map[string][]string{"events.0.page": {"The events.0.page must not be greater than 2048 characters."}}},
		{"ip invalid", `{"time":"2026-11-20T10:00:00Z","page":"/a","ip":"8.8.8"}`, map[string][]string{"events.0.ip": {"The events.0.ip must be a valid IP address."}}},
		{"ip with zone", `{"time":"2026-11-20T10:00:00Z","page":"/a","ip":"fe80::1%eth0"}`, map[string][]string{"events.0.ip": {"The events.0.ip must be a valid IP address."}}},
		{"neither visitor nor ip", `{"time":"2026-11-20T10:00:00Z","page":"/a","visitor":""}`, map[string][]string{"events.0.visitor": {"The events.0.visitor field is required when events.0.ip is not present."}}},
		{"visitor a number", `{"time":"2026-11-20T10:00:00Z","page":"/a","visitor":5}`, map[string][]string{"events.0.visitor": {"The events.0.visitor must be a string."}}},
		{"user_agent an object", `{` + ok + `,"user_agent":{}}`, map[string][]string{"events.0.user_agent": {"The events.0.user_agent must be a string."}}},
		{"referrer a bool", `{` + ok + `,"referrer":true}`, map[string][]string{"events.0.referrer": {"The events.0.referrer must be a string."}}},
		{"language too long", `{` + ok + `,"language":"` + strings.Repeat("e", 2049) + `"}`, map[string][]string{"events.0.language": {"The events.0.language must not be greater than 2048 characters."}}},
		{"event not an object", `{` + ok + `,"event":"Signup"}`, map[string][]string{"events.0.event": {"The events.0.event must be an object."}}},
		{"event name missing", `{` + ok + `,"event":{"value":1}}`, map[string][]string{"events.0.event.name": {"The events.0.event.name field is required."}}},
		{"event name only spaces", `{` + ok + `,"event":{"name":"  "}}`, map[string][]string{"events.0.event.name": {"The events.0.event.name field is required."}}},
		// A name of colons is a name, kept as sent (SPEC §2.4).
		{"event name only colons", `{` + ok + `,"event":{"name":" : "}}`, nil},
		{"event name a number", `{` + ok + `,"event":{"name":5}}`, map[string][]string{"events.0.event.name": {"The events.0.event.name must be a string."}}},
		{"event value a bool", `{` + ok + `,"event":{"name":"x","value":true}}`, map[string][]string{"events.0.event.value": {"The events.0.event.value must be a number or a string."}}},
		{"event unit a number", `{` + ok + `,"event":{"name":"x","unit":5}}`, map[string][]string{"events.0.event.unit": {"The events.0.event.unit must be a string."}}},
		{"event ok", `{` + ok + `,"event":{"name":"Pay","value":"12.5","unit":"EUR"}}`, nil},
		// The Plausible form's fields, top-level keys of a line (SPEC §3.4).
		{"plausible fields ok", `{` + ok + `,"event":{"name":"Pay"},"props":{"plan":"pro","n":2,"b":true},"revenue":{"amount":"9.99","currency":"EUR"},"interactive":false,"h":1}`, nil},
		{"props not an object", `{` + ok + `,"props":["a"]}`, map[string][]string{"events.0.props": {"The events.0.props must be an object."}}},
		{"props nested value", `{` + ok + `,"props":{"a":{"b":1},"c":[1],"d":null,"e":"ok"}}`, map[string][]string{
			"events.0.props.a": {"The events.0.props.a must be a string, a number or a boolean."},
			"events.0.props.c": {"The events.0.props.c must be a string, a number or a boolean."},
			"events.0.props.d": {"The events.0.props.d must be a string, a number or a boolean."},
		}},
		{"revenue without event", `{` + ok + `,"revenue":{"amount":1,"currency":"USD"}}`, map[string][]string{"events.0.revenue": {"The events.0.revenue field is only allowed with events.0.event."}}},
		{"revenue and event value", `{` + ok + `,"event":{"name":"Pay","value":3},"revenue":{"amount":1,"currency":"USD"}}`, map[string][]string{"events.0.revenue": {"The events.0.revenue field cannot be combined with events.0.event.value or unit."}}},
		{"revenue not an object", `{` + ok + `,"event":{"name":"Pay"},"revenue":5}`, map[string][]string{"events.0.revenue": {"The events.0.revenue must be an object with amount and currency."}}},
		{"revenue fields", `{` + ok + `,"event":{"name":"Pay"},"revenue":{"amount":true,"currency":5}}`, map[string][]string{
			"events.0.revenue.amount":   {"The events.0.revenue.amount must be a number or a numeric string."},
			"events.0.revenue.currency": {"The events.0.revenue.currency must be a string."},
		}},
		{"revenue fields missing", `{` + ok + `,"event":{"name":"Pay"},"revenue":{}}`, map[string][]string{
			"events.0.revenue.amount":   {"The events.0.revenue.amount field is required."},
			"events.0.revenue.currency": {"The events.0.revenue.currency field is required."},
		}},
		{"interactive not a bool", `{` + ok + `,"event":{"name":"Pay"},"interactive":"no"}`, map[string][]string{"events.0.interactive": {"The events.0.interactive field must be true or false."}}},
		{"interactive false without event", `{` + ok + `,"interactive":false}`, map[string][]string{"events.0.interactive": {"The events.0.interactive field is only allowed with events.0.event."}}},
		{"interactive true on a pageview", `{` + ok + `,"interactive":true}`, nil},
		{"h not 0 or 1", `{` + ok + `,"h":true}`, map[string][]string{"events.0.h": {"The events.0.h field must be 0 or 1."}}},
		{"h 1.0 as the live form reads it", `{` + ok + `,"h":1.0}`, nil},
		{"h 2", `{` + ok + `,"h":2}`, map[string][]string{"events.0.h": {"The events.0.h field must be 0 or 1."}}},
		{"h a string", `{` + ok + `,"h":"1"}`, map[string][]string{"events.0.h": {"The events.0.h field must be 0 or 1."}}},
		{"revenue NaN", `{` + ok + `,"event":{"name":"Pay"},"revenue":{"amount":"NaN","currency":"USD"}}`, map[string][]string{"events.0.revenue.amount": {"The events.0.revenue.amount must be a finite number greater than 0."}}},
		{"revenue Infinity", `{` + ok + `,"event":{"name":"Pay"},"revenue":{"amount":"Infinity","currency":"USD"}}`, map[string][]string{"events.0.revenue.amount": {"The events.0.revenue.amount must be a finite number greater than 0."}}},
		{"revenue 1e999", `{` + ok + `,"event":{"name":"Pay"},"revenue":{"amount":1e999,"currency":"USD"}}`, map[string][]string{"events.0.revenue.amount": {"The events.0.revenue.amount must be a finite number greater than 0."}}},
		{"revenue 0", `{` + ok + `,"event":{"name":"Pay"},"revenue":{"amount":0,"currency":"USD"}}`, map[string][]string{"events.0.revenue.amount": {"The events.0.revenue.amount must be a finite number greater than 0."}}},
		{"revenue currency NUL", `{` + ok + `,"event":{"name":"Pay"},"revenue":{"amount":1,"currency":"\u0000"}}`, map[string][]string{"events.0.revenue.currency": {"The events.0.revenue.currency must not contain control characters."}}},
		{"revenue currency too long", `{` + ok + `,"event":{"name":"Pay"},"revenue":{"amount":1,"currency":"` + strings.Repeat("E", 33) + `"}}`, map[string][]string{"events.0.revenue.currency": {"The events.0.revenue.currency must not be greater than 32 characters."}}},
		{"line not JSON", `{` + ok + "}\n{oops", map[string][]string{"events.1": {"The events.1 must be valid JSON."}}},
		{"line not an object", `{` + ok + "}\n\n\"x\"", map[string][]string{"events.1": {"The events.1 must be a JSON object."}}},
		{"array element not JSON", `[{` + ok + `}, {"a":]`, map[string][]string{"events.1": {"The events.1 must be valid JSON."}}},
		{"array trailing garbage", `[{` + ok + `}] x`, map[string][]string{"events": {"The events must be a JSON array or NDJSON."}}},
		{"empty body", ``, map[string][]string{"events": {"The events field is required."}}},
		{"blank lines only", "\n\n  \n", map[string][]string{"events": {"The events field is required."}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			w := f.do(request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/x-ndjson", body: tt.body})
			if tt.want == nil {
				if w.Code != 200 {
					t.Fatalf("status %d, want 200: %s", w.Code, w.Body)
				}
				return
			}
			if w.Code != 422 {
				t.Fatalf("status %d, want 422: %s", w.Code, w.Body)
			}
			if diff := cmp.Diff(tt.want, errorFields(t, w.Body.Bytes())); diff != "" {
				t.Errorf("messages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestImportAtomic checks that one invalid event means nothing is counted,
// and that a valid import counts in time order under the website.
func TestImportAtomic(t *testing.T) {
	f := newFixture(t, nil)
	ua := `"user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"`
	good := `{"time":"2026-11-20T10:00:00Z","page":"/a","ip":"8.8.8.8",` + ua + `}`
	bad := `{"time":"2026-11-20T10:00:00Z","page":"/a"}`
	if w := f.do(request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, body: good + "\n" + bad}); w.Code != 422 {
		t.Fatalf("status %d, want 422", w.Code)
	}
	stats := func() string {
		w := f.do(request{method: "GET", path: "/api/v1/stats/1?name=pageviews&from=2026-11-20&to=2026-11-20", key: f.alice})
		var got struct{ Data []struct{ Count int } }
		json.Unmarshal(w.Body.Bytes(), &got)
		if len(got.Data) == 0 {
			return "none"
		}
		return strings.Repeat("x", got.Data[0].Count)
	}
	if got := stats(); got != "none" {
		t.Fatalf("after a 422, pageviews = %q, want none", got)
	}
	// Out of order: the later one sent first. Landing page must be /first.
	body := `[{"time":"2026-11-20T10:10:00Z","page":"/second","ip":"8.8.8.8",` + ua + `},
	{"time":"2026-11-20T10:00:00Z","page":"https://anything.example/first","ip":"8.8.8.8",` + ua + `},
	{"time":"2026-11-20T10:20:00Z","page":"/third","ip":"10.1.2.3",` + ua + `}]`
	f.do(request{method: "PATCH", path: "/api/v1/websites/1", key: f.alice, ctype: "application/json", body: `{"exclude_ips":"10.0.0.0/8"}`})
	w := f.do(request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/json", body: body})
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"data":{"accepted":2,"dropped":{"bot":0,"excluded_ip":1}},"status":200}` {
		t.Fatalf("got %d %s", w.Code, w.Body)
	}
	if got := stats(); got != "xx" {
		t.Errorf("pageviews = %d, want 2", len(got))
	}
	w = f.do(request{method: "GET", path: "/api/v1/stats/1?name=landing_page&from=2026-11-20&to=2026-11-20", key: f.alice})
	if !strings.Contains(w.Body.String(), `"data":[{"value":"/first","count":1}]`) {
		t.Errorf("landing pages: %s", w.Body)
	}
}

// TestImportLarge: an import large enough to be decoded in parts at once
// reports the messages of every invalid event, whichever part it is in,
// and counts a valid one whole.
func TestImportLarge(t *testing.T) {
	runtime.GOMAXPROCS(4) // parts even on a one-core machine
	defer runtime.SetDefaultGOMAXPROCS()
	f := newFixture(t, nil)
	const n = 4*importPart + 37
	line := func(i int) string {
		return fmt.Sprintf(`{"time":"2026-11-20T10:%02d:%02dZ","page":"/p%d","ip":"8.8.%d.%d"}`, i/60%60, i%60, i%7, i%200, i%100)
	}
	var good, bad strings.Builder
	for i := range n {
		good.WriteString(line(i) + "\n")
		switch i {
		case 3:
			bad.WriteString(`{"page":"/a","ip":"8.8.8.8"}` + "\n")
		case 2*importPart + 1:
			bad.WriteString(`{"time":"2026-11-20T10:00:00Z","page":"a","ip":"8.8.8.8"}` + "\n")
		case n - 1:
			bad.WriteString(`{"time":"2026-11-20T10:00:00Z","page":"/a","ip":"x"}` + "\n")
		default:
			bad.WriteString(line(i) + "\n")
		}
	}
	w := f.do(request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/x-ndjson", body: bad.String()})
	if w.Code != 422 {
		t.Fatalf("status %d, want 422: %.300s", w.Code, w.Body)
	}
	want := map[string][]string{
		"events.3.time": {"The events.3.time field is required."},
		fmt.Sprintf("events.%d.page", 2*importPart+1): {fmt.Sprintf("The events.%d.page must be a URL or a path starting with /.", 2*importPart+1)},
		fmt.Sprintf("events.%d.ip", n-1):              {fmt.Sprintf("The events.%d.ip must be a valid IP address.", n-1)},
	}
	if diff := cmp.Diff(want, errorFields(t, w.Body.Bytes())); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	// The fields come in event order, whichever part found them.
	_, err := parseImport(strings.NewReader(bad.String()), 1, epoch)
	var fe fieldErrors
	if !errors.As(err, &fe) {
		t.Fatalf("parseImport: %v, want field errors", err)
	}
	var order []string
	for _, e := range fe {
		order = append(order, e.Field)
	}
	if diff := cmp.Diff([]string{"events.3.time", fmt.Sprintf("events.%d.page", 2*importPart+1), fmt.Sprintf("events.%d.ip", n-1)}, order); diff != "" {
		t.Errorf("order of the messages (-want +got):\n%s", diff)
	}
	w = f.do(request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/x-ndjson", body: good.String()})
	if w.Code != 200 || !strings.Contains(w.Body.String(), fmt.Sprintf(`"accepted":%d`, n)) {
		t.Fatalf("valid import: %d %.300s", w.Code, w.Body)
	}
}

// TestFieldErrorsJSON: a 422's messages are grouped by field, the fields in
// the order of their first message.
func TestFieldErrorsJSON(t *testing.T) {
	var fe fieldErrors
	fe.add("a", "1")
	fe.add("b", "1")
	fe.add("a", "2")
	fe.add("c", "1")
	fe.add("b", "2")
	got, err := json.Marshal(fe)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":["1","2"],"b":["1","2"],"c":["1"]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
