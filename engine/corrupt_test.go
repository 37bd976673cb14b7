package engine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// corruptStore is a store to damage: one website with hits on two days, a
// snapshot (day buckets, strings, visitor state, site meta), then a log tail
// of hits after it. The live engine stays open; copy makes a crash-consistent
// copy of it (a backup, which keeps the log tail) for each case.
type corruptStore struct {
	fs         snapshot.FS
	live       *engine.Engine
	now        func() time.Time
	site       uint32
	day1, day2 buckets.Date // day1 is closed (compacted); day2 is today
	copies     int
}

func newCorruptStore(t testing.TB) *corruptStore {
	t.Helper()
	now := time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC)
	c := &corruptStore{fs: snapshot.NewMemFS(), now: func() time.Time { return now }}
	c.day1, c.day2 = buckets.DateFromTime(now)-1, buckets.DateFromTime(now)
	e, err := engine.Open(&engine.Options{FS: c.fs, Dir: "data", Now: c.now, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c.live = e
	ctx := context.Background()
	acc, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	domain := "corrupt.example"
	w, err := e.Owner(acc.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
	if err != nil {
		t.Fatal(err)
	}
	c.site = w.ID
	hits := func(day time.Time, n int) []engine.Hit {
		var hs []engine.Hit
		for i := range n {
			hs = append(hs, engine.Hit{
				Time:       day.Add(time.Duration(i) * time.Minute),
				URL:        fmt.Sprintf("https://corrupt.example/p/%d?utm_campaign=c%d", i%7, i%3),
				Referrer:   []string{"", "https://www.google.com/", "https://news.example.net/a"}[i%3],
				UserAgent:  crashUA,
				IP:         netip.AddrFrom4([4]byte{8, 8, byte(i % 11), 1}),
				Language:   "de-DE",
				Resolution: "1280x800",
			})
		}
		return hs
	}
	mustTrack := func(hs []engine.Hit) {
		if _, err := e.Track(ctx, hs...); err != nil {
			t.Fatal(err)
		}
	}
	mustTrack(hits(now.Add(-30*time.Hour), 40))
	mustTrack(hits(now.Add(-6*time.Hour), 20))
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	mustTrack(hits(now.Add(-3*time.Hour), 20)) // the log tail
	return c
}

// copy backs the live engine up to a fresh directory and returns its name.
func (c *corruptStore) copy(t testing.TB) string {
	t.Helper()
	c.copies++
	dir := fmt.Sprintf("copy-%d", c.copies)
	if err := c.live.Backup(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// edit opens dir with package snapshot (the engine closed) and runs fn.
func (c *corruptStore) edit(t testing.TB, dir string, fn func(s *snapshot.Store) error) {
	t.Helper()
	s, err := snapshot.Open(&snapshot.Options{Dir: dir, FS: c.fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(s); err != nil {
		s.Close()
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func (c *corruptStore) open(dir string) (*engine.Engine, error) {
	return engine.Open(&engine.Options{FS: c.fs, Dir: dir, Now: c.now, SnapshotEvery: -1})
}

// lastLogEntry returns the last entry of the log tail.
func lastLogEntry(s *snapshot.Store) (uint64, []byte, error) {
	var seq uint64
	var data []byte
	err := s.ReplayLog(0, func(q uint64, d []byte) error {
		seq, data = q, append([]byte(nil), d...)
		return nil
	})
	if err == nil && seq == 0 {
		err = errors.New("no log tail")
	}
	return seq, data, err
}

// damage returns a damaged copy of b: cut to n bytes (n < 0: len+n), with
// byte 0 set to first when first >= 0, and tail appended.
type damage struct {
	cut   int
	first int
	tail  []byte
}

func (d damage) apply(b []byte) []byte {
	b = append([]byte{}, b...) // non-nil: a nil value would delete the record
	switch {
	case d.cut < 0:
		b = b[:max(0, len(b)+d.cut)]
	case d.cut > 0:
		b = b[:min(len(b), d.cut)]
	}
	if d.first >= 0 && len(b) > 0 {
		b[0] = byte(d.first)
	}
	return append(b, d.tail...)
}

var (
	truncLast  = damage{cut: -1, first: -1}
	emptied    = damage{cut: -1 << 30, first: -1}
	newVersion = damage{first: 0x7e}
	trailing   = damage{first: -1, tail: []byte{0, 0, 0}}
)

func half(b []byte) damage { return damage{cut: len(b) / 2, first: -1} }

// TestCorruptOpen damages one stored value at a time and checks that Open
// fails with an error naming what is damaged and where (the website, the
// day or salt period, the log entry), rather than panicking or starting
// with silently missing data.
func TestCorruptOpen(t *testing.T) {
	c := newCorruptStore(t)
	site := fmt.Sprint(c.site)
	for _, tc := range []struct {
		name string
		edit func(s *snapshot.Store) error
		want []string // substrings of the error
	}{
		{
			name: "log record truncated",
			edit: editLog(func(b []byte) []byte { return half(b).apply(b) }),
			want: []string{"log entry", "malformed log record"},
		},
		{
			name: "log record cut by one byte",
			edit: editLog(truncLast.apply),
			want: []string{"log entry", "malformed log record"},
		},
		{
			name: "log record empty",
			edit: editLog(emptied.apply),
			want: []string{"log entry", "malformed log record"},
		},
		{
			name: "log record of a newer version",
			edit: editLog(newVersion.apply),
			want: []string{"log entry", "malformed log record", "version 126"},
		},
		{
			name: "log record with trailing bytes",
			edit: editLog(trailing.apply),
			want: []string{"log entry", "trailing bytes"},
		},
		{
			name: "site meta truncated",
			edit: editMeta(c.site, func(b []byte) []byte { return half(b).apply(b) }),
			want: []string{"website " + site + " state"},
		},
		{
			name: "site meta cut by one byte",
			edit: editMeta(c.site, truncLast.apply),
			want: []string{"website " + site + " state"},
		},
		{
			name: "site meta empty",
			edit: editMeta(c.site, emptied.apply),
			want: []string{"website " + site + " state"},
		},
		{
			name: "site meta of a newer version",
			edit: editMeta(c.site, newVersion.apply),
			want: []string{"website " + site + " state", "version 126"},
		},
		{
			name: "site meta with trailing bytes",
			edit: editMeta(c.site, trailing.apply),
			want: []string{"website " + site + " state", "trailing bytes"},
		},
		{
			// Replay applies the log tail to this day: the error comes
			// from the goroutine that applies, and stops the reading.
			name: "day the log tail is applied to, truncated",
			edit: func(s *snapshot.Store) error {
				data, err := s.Day(c.site, int32(c.day2))
				if err != nil {
					return err
				}
				return s.WriteSnapshot(&snapshot.Snapshot{Days: []snapshot.DayRecord{{Website: c.site, Date: int32(c.day2), Data: half(data).apply(data)}}})
			},
			want: []string{"website " + site + " day " + c.day2.String()},
		},
		{
			name: "salt of the wrong length",
			edit: func(s *snapshot.Store) error {
				return s.Put(snapshot.KindSalt, uint64(uint32(int32(c.day2))), []byte{1, 2, 3})
			},
			want: []string{"salt"},
		},
		{
			name: "website record garbled",
			edit: func(s *snapshot.Store) error {
				return s.Put(snapshot.KindWebsite, uint64(c.site), []byte(`{"id":`))
			},
			want: []string{"website " + site},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := c.copy(t)
			c.edit(t, dir, tc.edit)
			e, err := c.open(dir)
			if err == nil {
				e.Close()
				t.Fatalf("Open succeeded on a damaged store; want an error containing %q", tc.want)
			}
			t.Logf("Open: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestCorruptVisitorState: visitor state is read when a hit of its salt
// period comes (not at Open); a damaged chunk then fails that Track with an
// error naming the website and the period, and counts nothing.
func TestCorruptVisitorState(t *testing.T) {
	c := newCorruptStore(t)
	for _, d := range []damage{half([]byte("0123456789")), truncLast, emptied, newVersion, trailing} {
		dir := c.copy(t)
		c.edit(t, dir, editState(c.site, c.day1, d.apply))
		e, err := c.open(dir)
		if err != nil {
			t.Fatalf("%+v: Open: %v", d, err)
		}
		before := e.Metrics().Tracked
		_, err = e.Track(context.Background(), engine.Hit{
			Time: c.day1.In(time.UTC).Add(20 * time.Hour), URL: "/late", Website: c.site,
			IP: netip.AddrFrom4([4]byte{8, 8, 1, 1}), UserAgent: crashUA,
		})
		if err == nil {
			t.Errorf("%+v: Track into a period with damaged visitor state succeeded", d)
		} else if want := fmt.Sprintf("website %d period %v", c.site, c.day1); !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: Track error %q does not contain %q", d, err, want)
		}
		if got := e.Metrics().Tracked; got != before {
			t.Errorf("%+v: tracked %d hits after a failed Track", d, got-before)
		}
		e.Close()
	}
}

// TestCorruptLegacyStrings: a damaged chunk of the string table of the
// layout before self-contained days fails Open (the migration) with an
// error naming the website.
func TestCorruptLegacyStrings(t *testing.T) {
	c := newCorruptStore(t)
	for _, data := range [][]byte{{}, {0x7e}, {1, 0xff, 0xff, 0xff, 0xff, 0x0f}} {
		dir := c.copy(t)
		c.edit(t, dir, func(s *snapshot.Store) error {
			return s.WriteSnapshot(&snapshot.Snapshot{Strings: []snapshot.StringsChunk{{Website: c.site, From: 0, Data: data}}})
		})
		e, err := c.open(dir)
		if err == nil {
			e.Close()
			t.Errorf("%x: Open succeeded on a damaged strings chunk", data)
			continue
		}
		if want := fmt.Sprintf("website %d", c.site); !strings.Contains(err.Error(), want) {
			t.Errorf("Open error %q does not name the website (%q)", err, want)
		}
	}
}

func editLog(f func([]byte) []byte) func(*snapshot.Store) error {
	return func(s *snapshot.Store) error {
		seq, data, err := lastLogEntry(s)
		if err != nil {
			return err
		}
		return s.Append(snapshot.LogEntry{Seq: seq, Data: f(data)})
	}
}

func editState(site uint32, period buckets.Date, f func([]byte) []byte) func(*snapshot.Store) error {
	return func(s *snapshot.Store) error {
		var rec *snapshot.StateChunk
		err := s.ScanStateChunks(site, int32(period), func(c uint32, data []byte) error {
			if c == 0 {
				rec = &snapshot.StateChunk{Website: site, Period: int32(period), Chunk: c, Data: f(data)}
			}
			return nil
		})
		if err == nil && rec == nil {
			err = fmt.Errorf("no visitor state of period %v", period)
		}
		if err != nil {
			return err
		}
		return s.WriteSnapshot(&snapshot.Snapshot{Chunks: []snapshot.StateChunk{*rec}})
	}
}

func editMeta(site uint32, f func([]byte) []byte) func(*snapshot.Store) error {
	return func(s *snapshot.Store) error {
		var rec *snapshot.SiteRecord
		err := s.ScanSites(func(w uint32, data []byte) error {
			if w == site {
				rec = &snapshot.SiteRecord{Website: w, Data: f(data)}
			}
			return nil
		})
		if err == nil && rec == nil {
			err = errors.New("no site record")
		}
		if err != nil {
			return err
		}
		return s.WriteSnapshot(&snapshot.Snapshot{Sites: []snapshot.SiteRecord{*rec}})
	}
}

// TestCorruptDay damages the stored value of a closed day. Open succeeds
// (days are read on demand), every query that reads the damaged part fails
// with an error naming the website and the day (never zeros), queries of
// other days still work, and a hit on the damaged day is refused rather
// than counted on an empty bucket. A value holds the day's buckets, then its
// segments: damage at the end (seg) is in the segments, which the 17
// statistics do not read (they answer from the intact buckets), while a
// segment query does.
func TestCorruptDay(t *testing.T) {
	c := newCorruptStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		d    func([]byte) damage
		seg  bool
	}{
		{"truncated", half, false},
		{"cut by one byte", func([]byte) damage { return truncLast }, true},
		{"empty", func([]byte) damage { return emptied }, false},
		{"newer version", func([]byte) damage { return newVersion }, false},
		{"trailing bytes", func([]byte) damage { return trailing }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := c.copy(t)
			c.edit(t, dir, func(s *snapshot.Store) error {
				data, err := s.Day(c.site, int32(c.day1))
				if err != nil {
					return err
				}
				return s.WriteSnapshot(&snapshot.Snapshot{Days: []snapshot.DayRecord{{Website: c.site, Date: int32(c.day1), Data: tc.d(data).apply(data)}}})
			})
			e, err := c.open(dir)
			if err != nil {
				t.Fatalf("Open: %v (days are read on demand: want the query to fail instead)", err)
			}
			defer e.Close()
			want := fmt.Sprintf("website %d day %s", c.site, c.day1)
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Errorf("%s on a damaged day succeeded; want an error containing %q", what, want)
				} else if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %q does not contain %q", what, err, want)
				}
			}
			for _, name := range []string{"page", "visitors", "pageviews_hours", "browser"} {
				_, err := e.Unscoped().Stat(ctx, engine.StatQuery{Website: c.site, Name: name, From: c.day1, To: c.day2})
				if tc.seg {
					if err != nil {
						t.Errorf("Stat(%s), the buckets intact: %v", name, err)
					}
				} else {
					check("Stat("+name+")", err)
				}
			}
			_, err = e.Unscoped().Totals(ctx, c.site, c.day1, c.day1)
			if tc.seg {
				if err != nil {
					t.Errorf("Totals, the buckets intact: %v", err)
				}
			} else {
				check("Totals", err)
			}
			q, err := engine.ParseQuery([]byte(fmt.Sprintf(`{"site_id":"corrupt.example","date_range":["%s","%s"],"metrics":["visitors"],"dimensions":["visit:source"]}`, c.day1, c.day2)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Unscoped().Query(ctx, c.site, q)
			check("Query", err)
			_, err = e.Track(ctx, engine.Hit{Website: c.site, Time: c.now().Add(-30 * time.Hour), URL: "/late", UserAgent: crashUA, IP: netip.MustParseAddr("9.9.9.9")})
			check("Track on the damaged day", err)

			// The other day is intact.
			p, err := e.Unscoped().Stat(ctx, engine.StatQuery{Website: c.site, Name: "pageviews", From: c.day2, To: c.day2})
			if err != nil {
				t.Fatalf("Stat of an intact day: %v", err)
			}
			if len(p.Rows) != 1 || p.Rows[0].Count != 40 {
				t.Errorf("pageviews of the intact day = %+v, want 40", p.Rows)
			}
		})
	}
}

// TestNewerFormatVersion: a store written by a newer format version is
// refused with snapshot.ErrVersion and a message naming both versions.
func TestNewerFormatVersion(t *testing.T) {
	c := newCorruptStore(t)
	dir := c.copy(t)
	// The format version key (snapshot/keys.go: 0x01 'v', a big-endian
	// uint64) is written with Pebble directly: package snapshot has no way
	// to write a version it does not know, by design.
	db, err := pebble.Open(dir, &pebble.Options{FS: c.fs, Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte{0x01, 'v'}, binary.BigEndian.AppendUint64(nil, snapshot.FormatVersion+1), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := c.open(dir)
	if err == nil {
		e.Close()
		t.Fatal("Open succeeded on a store of a newer format version")
	}
	t.Logf("Open: %v", err)
	if !errors.Is(err, snapshot.ErrVersion) {
		t.Errorf("Open error %q: errors.Is(err, snapshot.ErrVersion) = false", err)
	}
	for _, w := range []string{fmt.Sprint(snapshot.FormatVersion + 1), fmt.Sprint(snapshot.FormatVersion)} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Open error %q does not name version %s", err, w)
		}
	}
}

// quietPebble discards Pebble's informational logging.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)           {}
func (quietPebble) Errorf(string, ...any)          {}
func (quietPebble) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

// TestCorruptMissingDay removes the stored bucket of a day that the
// website's meta lists as having data. Queries of that day must not answer
// zeros as if the day had no hits.
func TestCorruptMissingDay(t *testing.T) {
	c := newCorruptStore(t)
	dir := c.copy(t)
	c.edit(t, dir, func(s *snapshot.Store) error {
		return s.WriteSnapshot(&snapshot.Snapshot{Days: []snapshot.DayRecord{{Website: c.site, Date: int32(c.day1)}}})
	})
	e, err := c.open(dir)
	if err != nil {
		t.Logf("Open: %v", err)
		return // refusing the store is fine
	}
	defer e.Close()
	p, err := e.Unscoped().Stat(context.Background(), engine.StatQuery{Website: c.site, Name: "pageviews", From: c.day1, To: c.day1})
	if err == nil {
		t.Fatalf("a day listed in the site meta but absent from the store reads as no data (%d rows), "+
			"while Track on that day fails with %q", len(p.Rows), trackErr(e, c))
	}
	if want := fmt.Sprintf("website %d day %s", c.site, c.day1); !strings.Contains(err.Error(), want) {
		t.Errorf("Stat error %q does not contain %q", err, want)
	}
}

func trackErr(e *engine.Engine, c *corruptStore) error {
	_, err := e.Track(context.Background(), engine.Hit{Website: c.site, Time: c.now().Add(-30 * time.Hour), URL: "/late", UserAgent: crashUA, IP: netip.MustParseAddr("9.9.9.9")})
	return err
}
