package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLoggerFloodLimited logs the same error 10,000 times through serve's
// logger, as a store failing in a retry loop did (144,621 lines in 20 s,
// issue #11): a few lines pass, then one says how many were suppressed.
func TestLoggerFloodLimited(t *testing.T) {
	var buf syncBuffer
	c := &cli{stderr: &buf}
	log := c.newLogger(&Config{LogLevel: "info", LogFormat: "json"})
	elog := log.With("component", "engine")
	start := time.Now()
	for i := range 10000 {
		elog.Error("snapshot failed", "err", "open 00042.sst: too many open files", "attempt", i)
	}
	if time.Since(start) > defaultFloodLimits.window/2 {
		t.Skip("the machine is too slow to log 10,000 lines in half a window")
	}
	lines := buf.lines(t)
	if got := len(lines); got != defaultFloodLimits.burst {
		t.Fatalf("%d lines during the flood, want %d", got, defaultFloodLimits.burst)
	}
	// The summary comes when the window ends, without any further record.
	deadline := time.Now().Add(3 * defaultFloodLimits.window)
	for len(buf.lines(t)) == defaultFloodLimits.burst && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	lines = buf.lines(t)
	if len(lines) != defaultFloodLimits.burst+1 {
		t.Fatalf("%d lines after the window, want %d", len(lines), defaultFloodLimits.burst+1)
	}
	sum := lines[len(lines)-1]
	want := map[string]any{"level": "ERROR", "msg": "log lines suppressed", "component": "engine",
		"message": "snapshot failed", "suppressed": float64(10000 - defaultFloodLimits.burst), "window": "1s"}
	delete(sum, "time")
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("summary mismatch (-want +got):\n%s", diff)
	}
}

func TestFloodHandler(t *testing.T) {
	const window = 100 * time.Millisecond
	lim := floodLimits{burst: 3, window: window, keys: 4}
	type rec struct {
		level slog.Level
		msg   string
		n     int // times
	}
	tests := []struct {
		name string
		recs []rec
		// want counts the lines written by message, summaries as
		// "suppressed <message> <n>".
		want map[string]int
	}{
		{name: "flood", recs: []rec{{slog.LevelError, "disk full", 100}},
			want: map[string]int{"disk full": 3, "suppressed disk full 97": 1}},
		{name: "under the burst", recs: []rec{{slog.LevelWarn, "slow", 3}},
			want: map[string]int{"slow": 3}},
		{name: "info is not limited", recs: []rec{{slog.LevelInfo, "request", 50}},
			want: map[string]int{"request": 50}},
		{name: "distinct messages", recs: []rec{{slog.LevelError, "a", 5}, {slog.LevelError, "b", 2}, {slog.LevelWarn, "a", 4}},
			want: map[string]int{"a": 6, "b": 2, "suppressed a 2": 1, "suppressed a 1": 1}},
		{name: "numbers do not make a message new", recs: []rec{
			{slog.LevelError, "http: Accept error: too many open files; retrying in 5ms", 2},
			{slog.LevelError, "http: Accept error: too many open files; retrying in 10ms", 2},
		}, want: map[string]int{
			"http: Accept error: too many open files; retrying in 5ms":               2,
			"http: Accept error: too many open files; retrying in 10ms":              1,
			"suppressed http: Accept error: too many open files; retrying in 10ms 1": 1,
		}},
		{name: "more messages than keys", recs: []rec{
			{slog.LevelError, "ka", 1}, {slog.LevelError, "kb", 1}, {slog.LevelError, "kc", 1}, {slog.LevelError, "kd", 1},
			{slog.LevelError, "x one", 1}, {slog.LevelError, "x two", 1}, {slog.LevelError, "x three", 1}, {slog.LevelError, "x four", 1},
		}, want: map[string]int{"ka": 1, "kb": 1, "kc": 1, "kd": 1, "x one": 1, "x two": 1, "x three": 1,
			"suppressed (other messages) 1": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf syncBuffer
			h := newFloodHandler(slog.NewJSONHandler(&buf, nil), lim)
			clock := fakeClock(h)
			log := slog.New(h)
			for _, r := range tt.recs {
				for range r.n {
					log.Log(context.Background(), r.level, r.msg)
				}
			}
			clock.advance(3 * window)
			got := map[string]int{}
			for _, l := range buf.lines(t) {
				if l["msg"] == "log lines suppressed" {
					got["suppressed "+l["message"].(string)+" "+strconv.Itoa(int(l["suppressed"].(float64)))]++
				} else {
					got[l["msg"].(string)]++
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFloodHandlerNextWindow checks that a message passes again in the next
// window, with the summary of the last one before it, whether the timer
// that writes a summary fires on time or late (once a window late made the
// two records meant to share a window fall in different ones, under the
// race detector on two busy cores).
func TestFloodHandlerNextWindow(t *testing.T) {
	const window = 300 * time.Millisecond
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprint("late=", late), func(t *testing.T) {
			var buf syncBuffer
			h := newFloodHandler(slog.NewJSONHandler(&buf, nil), floodLimits{burst: 1, window: window, keys: 10})
			clock := fakeClock(h)
			log := slog.New(h)
			for range 3 {
				log.Error("again")
				log.Error("again")
				if late {
					clock.now = clock.now.Add(2 * window) // the timers have not fired
				} else {
					clock.advance(2 * window)
				}
			}
			clock.advance(window)
			var msgs []string
			for _, l := range buf.lines(t) {
				msgs = append(msgs, l["msg"].(string)+" "+fmt.Sprint(l["suppressed"]))
			}
			want := []string{"again <nil>", "log lines suppressed 1", "again <nil>", "log lines suppressed 1", "again <nil>", "log lines suppressed 1"}
			if diff := cmp.Diff(want, msgs); diff != "" {
				t.Errorf("lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// testClock is a floodState's clock and timers, moved by the test.
type testClock struct {
	now    time.Time
	timers []testTimer
}

type testTimer struct {
	at time.Time
	f  func()
}

// fakeClock gives h's state a clock that moves only by advance.
func fakeClock(h *floodHandler) *testClock {
	c := &testClock{now: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)}
	h.st.now = func() time.Time { return c.now }
	h.st.afterFunc = func(d time.Duration, f func()) { c.timers = append(c.timers, testTimer{c.now.Add(d), f}) }
	return c
}

// advance moves the clock by d, firing the timers due meanwhile in order.
func (c *testClock) advance(d time.Duration) {
	end := c.now.Add(d)
	for {
		slices.SortStableFunc(c.timers, func(a, b testTimer) int { return a.at.Compare(b.at) })
		if len(c.timers) == 0 || c.timers[0].at.After(end) {
			break
		}
		tm := c.timers[0]
		c.timers = c.timers[1:]
		c.now = tm.at
		tm.f()
	}
	c.now = end
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// lines decodes the JSON lines written so far.
func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for l := range strings.Lines(b.b.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		out = append(out, m)
	}
	return out
}
