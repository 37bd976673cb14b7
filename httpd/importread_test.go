package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// refEvents is SPEC §3.4's reading of an import body, whole: a JSON array
// of events when it begins with '[' (after white space), else NDJSON, one
// event per non-blank line. ok is false for a body that is not JSON where
// it must be (the array, or a line of it).
func refEvents(body []byte) (events [][]byte, ok bool) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var raws []json.RawMessage
		if json.Unmarshal(trimmed, &raws) != nil {
			return nil, false
		}
		for _, r := range raws {
			events = append(events, r)
		}
		return events, true
	}
	for _, line := range bytes.Split(trimmed, []byte{'\n'}) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			events = append(events, line)
		}
	}
	return events, true
}

// randomBody is an import body of n events (some of them longer than
// the reader's 64 KiB buffer) as a JSON array or NDJSON, with white space
// and blank lines anywhere it may be, and when broken a byte changed or
// the body cut or followed by more.
func randomBody(rng *rand.Rand, n int, array, broken bool) []byte {
	// White space as JSON has it (inside an array), and at the body's
	// ends and around NDJSON lines also as bytes.TrimSpace knows it (form
	// feed, vertical tab, NEL, no-break space): the whole body was
	// trimmed so.
	jws := func() string { return []string{"", "", " ", "\n", "\r\n", "\t \n\n"}[rng.IntN(6)] }
	ws := func() string {
		return []string{"", " ", "\n", "\t \n\n", "\f", "\v\n", "\u0085", "\u00a0 "}[rng.IntN(8)]
	}
	var b bytes.Buffer
	b.WriteString(ws())
	if array {
		b.WriteString("[" + jws())
	}
	for i := range n {
		page := "/p" + fmt.Sprint(i)
		if rng.IntN(20) == 0 {
			page += "/" + strings.Repeat("y", 70_000+rng.IntN(10_000))
		}
		ev := fmt.Sprintf(`{"time":"2026-11-20T10:00:00Z",%s"page":%q,"visitor":"v%d","props":{"k":"%d"}}`, jws(), page, i, i)
		if array {
			if i > 0 {
				b.WriteString(jws() + "," + jws())
			}
			b.WriteString(ev)
		} else {
			b.WriteString(ev + "\n" + ws())
		}
	}
	if array {
		b.WriteString(jws() + "]" + ws())
	}
	body := b.Bytes()
	if broken && len(body) > 0 {
		switch rng.IntN(3) {
		case 0:
			body = body[:rng.IntN(len(body))]
		case 1:
			body[rng.IntN(len(body))] = "{}[],:\"x"[rng.IntN(8)]
		default:
			body = append(body, []string{"x", "{}", "]", "[]"}[rng.IntN(4)]...)
		}
	}
	return body
}

// readers are the ways a body arrives: whole, a byte at a time, in halves,
// in random pieces.
func readers(rng *rand.Rand, body []byte) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":  bytes.NewReader(body),
		"bytes":  iotest.OneByteReader(bytes.NewReader(body)),
		"halves": iotest.HalfReader(bytes.NewReader(body)),
		"pieces": &pieces{rng: rng, rest: body},
	}
}

type pieces struct {
	rng  *rand.Rand
	rest []byte
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), 1+p.rng.IntN(9000))], p.rest)
	p.rest = p.rest[n:]
	return n, nil
}

// TestEventReaderModel: the import body read an event at a time as it
// arrives (importread.go) gives the events the whole body gives
// (refEvents), in order and byte for byte, however the body arrives; a
// body that is not JSON where it must be is a 422, never events.
func TestEventReaderModel(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 40
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		body := randomBody(rng, rng.IntN(40), rng.IntN(2) == 0, rng.IntN(3) == 0)
		want, ok := refEvents(body)
		for name, r := range readers(rng, body) {
			evs, err := newEventReader(r)
			var got [][]byte
			for err == nil {
				var raws []json.RawMessage
				if raws, err = evs.next(nil, 1+rng.IntN(7)); len(raws) == 0 {
					break
				}
				for _, r := range raws {
					got = append(got, r)
				}
			}
			var fe fieldErrors
			switch {
			case err != nil && !errors.As(err, &fe):
				t.Fatalf("seed %d, %s: %v, want events or a 422", seed, name, err)
			case !ok && err == nil:
				t.Fatalf("seed %d, %s: a body not JSON read without error: %q", seed, name, body)
			case ok && err != nil:
				t.Fatalf("seed %d, %s: %v on a body the whole reading reads", seed, name, err)
			case ok && !equalEvents(got, want):
				t.Fatalf("seed %d, %s: %d events, want %d (first difference at %d)", seed, name, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func equalEvents(a, b [][]byte) bool { return firstDiff(a, b) < 0 }

func firstDiff(a, b [][]byte) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || !bytes.Equal(a[i], b[i]) {
			return i
		}
	}
	return -1
}

// TestEventReaderBodyError: a body whose reading fails before its end (a
// connection cut, a read deadline, the route's size limit) is that error,
// which the server answers 400, 408 or 413, never a 422 about JSON nor
// events counted from what came.
func TestEventReaderBodyError(t *testing.T) {
	cut := errors.New("connection cut")
	for seed := range 60 {
		rng := rand.New(rand.NewPCG(uint64(seed), 8))
		body := randomBody(rng, 1+rng.IntN(30), rng.IntN(2) == 0, false)
		k := rng.IntN(len(body))
		r := io.MultiReader(bytes.NewReader(body[:k]), iotest.ErrReader(cut))
		if _, err := parseImport(r, 1, epoch); !errors.Is(err, cut) {
			t.Fatalf("seed %d: body cut at %d of %d bytes: %v, want the read error", seed, k, len(body), err)
		}
	}
}

// TestImportEarlyRefusalAnswered: an import refused as its body is read
// (its first event not JSON, 8 MiB more to come) is answered 422 naming
// the event, to a client still sending the rest. (The server reads the
// rest before it answers, as it did when it read the body whole first;
// Go's client gets the answer without that too, so this checks the
// answer, not the draining.)
func TestImportEarlyRefusalAnswered(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.s)
	defer srv.Close()
	line := []byte(`{"time":"2026-11-20T10:00:00Z","page":"/` + strings.Repeat("a", 900) + `","visitor":"v"}` + "\n")
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("not json\n"))
		for range 8 << 20 / len(line) {
			if _, err := pw.Write(line); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/websites/1/events", pr)
	req.Header.Set("Authorization", "Bearer "+f.alice)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("no answer to an import refused early: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(b), "events.0") {
		t.Fatalf("%d %s, want 422 naming events.0", resp.StatusCode, b)
	}
}

// TestImportOverLimitRefused: a body over the 10 MiB limit is a 413
// whatever it holds, as when the body was read whole before it was
// checked: an array whose first element is broken, too, sent without a
// declared length.
func TestImportOverLimitRefused(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.s)
	defer srv.Close()
	body := "[{\"page\": x}, " + strings.Repeat(" ", 11<<20) + "]"
	// Sent without a length (chunked): a declared length over the limit
	// is refused before the handler reads anything.
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/websites/1/events", io.MultiReader(strings.NewReader(body)))
	req.Header.Set("Authorization", "Bearer "+f.alice)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s, want 413", resp.StatusCode, b)
	}
}

// TestImportArrayTooMany: a JSON array of more than 10,000 events is a
// 413 found before the one too many is decoded, as when the body was
// split whole first: 10,001 events, and 10,000 followed by anything.
func TestImportArrayTooMany(t *testing.T) {
	ev := `{"time":"2026-11-20T10:00:00Z","page":"/a","visitor":"v"}`
	many := "[" + strings.Repeat(ev+",", maxImportEvents-1) + ev
	for name, body := range map[string]string{
		"10,000":             many + "]",
		"10,001":             many + "," + ev + "]",
		"10,000 then broken": many + ", junk",
	} {
		_, err := parseImport(strings.NewReader(body), 1, epoch)
		switch {
		case name == "10,000" && err != nil:
			t.Errorf("%s events: %v, want them read", name, err)
		case name != "10,000" && !errors.Is(err, errTooManyEvents):
			t.Errorf("%s events: %v, want the 413", name, err)
		}
	}
}
