package cli

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// floodLimits bound how many identical warnings and errors are logged
// (SPEC §13: a store failing in a retry loop once wrote 144,621 lines in
// 20 s).
type floodLimits struct {
	// burst is how many records of one message pass per window; the others
	// are counted, and one "log lines suppressed" record says how many when
	// the window ends.
	burst int
	// window is the period the burst is counted over.
	window time.Duration
	// keys bounds the messages tracked at once. Beyond it, records of new
	// messages share one key, "(other messages)", so that a flood of
	// distinct messages is limited too.
	keys int
}

// defaultFloodLimits are serve's: 5 identical lines a second, 1,024
// messages tracked.
var defaultFloodLimits = floodLimits{burst: 5, window: time.Second, keys: 1024}

// Message keys.
const (
	// floodMinLevel is the least level limited: info and debug records (a
	// line per request) always pass.
	floodMinLevel = slog.LevelWarn
	// floodKeyLen is how many bytes of a message make its key.
	floodKeyLen = 256
	// floodOther is the key and message of the records beyond
	// floodLimits.keys.
	floodOther = "(other messages)"
)

// floodHandler is a slog.Handler that passes at most floodLimits.burst
// records of one message (with level floodMinLevel or above) per window
// to next. Messages that differ only in their digits ("retrying in 5ms",
// "retrying in 10ms") are one message. The handlers WithAttrs and WithGroup
// derive share the counts.
type floodHandler struct {
	next slog.Handler
	st   *floodState
}

// floodState are the counts of a floodHandler and the handlers it derives.
type floodState struct {
	lim floodLimits
	// now and afterFunc are the clock and its timers (time.Now and
	// time.AfterFunc; tests set others). A window ends when the clock says
	// so, whenever the timer that writes its summary fires.
	now       func() time.Time
	afterFunc func(time.Duration, func())
	mu        sync.Mutex
	seen      map[floodKey]*floodEntry // by message; guarded by mu
	windows   uint64                   // windows started; guarded by mu
}

type floodKey struct {
	level slog.Level
	msg   string
}

// floodEntry counts one message in its current window. Its fields are
// guarded by floodState.mu.
type floodEntry struct {
	start      time.Time // of the window
	window     uint64    // the window's number, so that a late timer knows its own
	n          int       // records in the window
	suppressed int       // records not passed in the window
	// Of the first suppressed record: the message (as sent) and the handler
	// that got it, which writes the summary with its attributes.
	msg string
	h   slog.Handler
}

// newFloodHandler returns next limited by lim.
func newFloodHandler(next slog.Handler, lim floodLimits) *floodHandler {
	st := &floodState{lim: lim, now: time.Now, seen: make(map[floodKey]*floodEntry)}
	st.afterFunc = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	return &floodHandler{next: next, st: st}
}

func (h *floodHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *floodHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &floodHandler{next: h.next.WithAttrs(as), st: h.st}
}

func (h *floodHandler) WithGroup(name string) slog.Handler {
	return &floodHandler{next: h.next.WithGroup(name), st: h.st}
}

// Handle passes r to the next handler unless its message is flooding.
func (h *floodHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < floodMinLevel || h.st.pass(r, h.next) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

// pass counts r and reports whether it may be written. When r's message
// had records suppressed in a window that has ended, their summary is
// written first.
func (st *floodState) pass(r slog.Record, next slog.Handler) bool {
	key := floodKey{level: r.Level, msg: messageKey(r.Message)}
	now := st.now()
	st.mu.Lock()
	e := st.seen[key]
	if e == nil {
		if len(st.seen) >= st.lim.keys {
			st.forgetLocked(now)
		}
		if len(st.seen) >= st.lim.keys {
			key.msg = floodOther
			e = st.seen[key]
		}
		if e == nil {
			st.windows++
			e = &floodEntry{start: now, window: st.windows}
			st.seen[key] = e
		}
	}
	var sum *floodSummary
	if now.Sub(e.start) >= st.lim.window {
		sum = e.takeSummary(st.lim.window) // its timer has not fired yet
		e.start, e.n = now, 0              // a new window
		st.windows++
		e.window = st.windows
	}
	e.n++
	ok := e.n <= st.lim.burst
	if !ok {
		if e.suppressed == 0 {
			e.msg, e.h = r.Message, next
			if key.msg == floodOther {
				e.msg = floodOther
			}
			w := e.window
			st.afterFunc(e.start.Add(st.lim.window).Sub(now), func() { st.report(key, r.Level, w) })
		}
		e.suppressed++
	}
	st.mu.Unlock()
	sum.write(r.Level)
	return ok
}

// forgetLocked drops the entries whose window has ended and that wait for
// no report.
func (st *floodState) forgetLocked(now time.Time) {
	for k, e := range st.seen {
		if e.suppressed == 0 && now.Sub(e.start) >= st.lim.window {
			delete(st.seen, k)
		}
	}
}

// report writes the summary of key's window number w, which has ended,
// unless a record after it wrote it already.
func (st *floodState) report(key floodKey, level slog.Level, w uint64) {
	st.mu.Lock()
	var sum *floodSummary
	if e := st.seen[key]; e != nil && e.window == w {
		sum = e.takeSummary(st.lim.window)
	}
	st.mu.Unlock()
	sum.write(level)
}

// floodSummary is the "log lines suppressed" record of a window.
type floodSummary struct {
	n      int
	msg    string
	h      slog.Handler
	window time.Duration
}

// takeSummary returns the summary of e's window and clears its count, or
// nil when it suppressed nothing. floodState.mu must be held.
func (e *floodEntry) takeSummary(window time.Duration) *floodSummary {
	if e.suppressed == 0 {
		return nil
	}
	s := &floodSummary{n: e.suppressed, msg: e.msg, h: e.h, window: window}
	e.suppressed, e.msg, e.h = 0, "", nil
	return s
}

func (s *floodSummary) write(level slog.Level) {
	if s == nil {
		return
	}
	r := slog.NewRecord(time.Now(), level, "log lines suppressed", 0)
	r.AddAttrs(slog.String("message", s.msg), slog.Int("suppressed", s.n), slog.String("window", s.window.String()))
	_ = s.h.Handle(context.Background(), r)
}

// messageKey is the key of a message: its first floodKeyLen bytes, every
// run of digits as one '#'.
func messageKey(msg string) string {
	msg = msg[:min(len(msg), floodKeyLen)]
	b := make([]byte, 0, len(msg))
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if '0' <= c && c <= '9' {
			if len(b) == 0 || b[len(b)-1] != '#' {
				b = append(b, '#')
			}
			continue
		}
		b = append(b, c)
	}
	return string(b)
}
