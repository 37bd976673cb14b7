package httpd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/snapshot"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// epoch is the fixed time of the test clocks.
var epoch = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: epoch} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is a server over a fresh in-memory engine with two accounts:
// alice (id 1) owns websites 1 example.com and 2 blog.example.org; bob (id 2)
// owns website 3 other.net.
type fixture struct {
	t        *testing.T
	e        *engine.Engine
	s        *Server
	clock    *clock
	alice    string // API keys
	bob      string
	aliceID  uint32
	bobID    uint32
	websites [3]engine.Website
}

// newFixture opens the fixture; opts may be nil (rate limiting is then off,
// so that tests may send any number of requests).
func newFixture(t testing.TB, opts *Options) *fixture {
	return newFixtureOn(t, opts, &engine.Options{FS: snapshot.NewMemFS(), NoSync: true, SnapshotEvery: -1})
}

// newFixtureOn is newFixture on an engine opened with eo (its Now set
// here): a cluster node, for one.
func newFixtureOn(t testing.TB, opts *Options, eo *engine.Options) *fixture {
	tt, _ := t.(*testing.T)
	f := &fixture{t: tt, clock: newClock()}
	eopts := *eo
	eopts.Now = f.clock.Now
	e, err := engine.Open(&eopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	f.e = e
	if opts == nil {
		opts = &Options{RateLimit: -1}
	}
	o := *opts
	if o.Now == nil {
		o.Now = f.clock.Now
	}
	if f.s, err = New(e, &o); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, key, err := identity.Must(e).CreateAccount(ctx, "Alice", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	f.alice, f.aliceID = key, a.ID
	b, key, err := identity.Must(e).CreateAccount(ctx, "Bob", "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	f.bob, f.bobID = key, b.ID
	for i, w := range []struct {
		account uint32
		in      engine.WebsiteInput
	}{
		{a.ID, engine.WebsiteInput{Domain: ptr("example.com")}},
		{a.ID, engine.WebsiteInput{Domain: ptr("blog.example.org"), ExcludeParams: ptr("fbclid"), Privacy: ptr("0"), Email: ptr("1"), Timezone: ptr("Europe/Paris")}},
		{b.ID, engine.WebsiteInput{Domain: ptr("other.net")}},
	} {
		web, err := e.Owner(w.account).CreateWebsite(ctx, w.in)
		if err != nil {
			t.Fatal(err)
		}
		f.websites[i] = web
	}
	return f
}

func ptr[T any](v T) *T { return &v }

// seedStats tracks pageviews on website 1 on 2026-11-20: page /p01 … /p23
// with 1 … 23 views (from distinct visitors), in Chrome and Firefox.
func (f *fixture) seedStats(t testing.TB) {
	var hits []engine.Hit
	day := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	uas := []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
	}
	n := 0
	for p := 1; p <= 23; p++ {
		for v := 0; v < p; v++ {
			n++
			hits = append(hits, engine.Hit{
				Time:      day.Add(time.Duration(n) * time.Second),
				URL:       "https://example.com/p" + twoDigits(p),
				UserAgent: uas[n%2],
				IP:        netip.AddrFrom4([4]byte{8, 8, byte(n >> 8), byte(n)}),
				Language:  "en-US",
				Website:   1,
			})
		}
	}
	if _, err := f.e.Track(context.Background(), hits...); err != nil {
		t.Fatal(err)
	}
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }

// request is one HTTP request of a test.
type request struct {
	method string
	path   string
	key    string // API key; "" sends no Authorization
	ctype  string // Content-Type
	body   string
	header map[string]string
}

// do serves req and returns the recorder.
func (f *fixture) do(req request) *httptest.ResponseRecorder {
	return serve(f.s, req)
}

func serve(h http.Handler, req request) *httptest.ResponseRecorder {
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	r := httptest.NewRequest(req.method, req.path, body)
	if req.key != "" {
		r.Header.Set("Authorization", "Bearer "+req.key)
	}
	if req.ctype != "" {
		r.Header.Set("Content-Type", req.ctype)
	}
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// decode decodes a JSON answer into a generic value.
func decode(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, b)
	}
	return v
}

// golden compares the JSON body with testdata/name.json (indented), or
// rewrites the file with -update.
func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(body), "", "  "); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, body)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./httpd/ -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
