package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// The engine's decoders (log records, visitor state, site meta) are
// unexported, so they are fuzzed through the store: the fuzzed bytes are
// written where the engine keeps such a value, then the engine is opened.
// Whatever Open accepts must then work: queries, tracking, a snapshot, and
// a reopen of what the engine wrote itself.

// fuzzOpen copies the fixture, lets edit write the fuzzed value, and opens
// the engine on the copy. It returns nil when Open refused the store.
func fuzzOpen(t *testing.T, c *corruptStore, edit func(s *snapshot.Store) error) (*engine.Engine, string) {
	dir := c.copy(t)
	t.Cleanup(func() { c.fs.RemoveAll(dir) })
	c.edit(t, dir, edit)
	e, err := c.open(dir)
	if err != nil {
		if err.Error() == "" {
			t.Fatal("Open failed with an empty error message")
		}
		return nil, dir
	}
	return e, dir
}

// fuzzExercise runs queries over a wide range, tracks a few hits on the
// fixture's days, snapshots, closes and reopens e's store. Errors of the
// queries and of Track are allowed (a value may be accepted by Open but name
// days the store lacks); panics and a failed reopen are not.
func fuzzExercise(t *testing.T, c *corruptStore, e *engine.Engine, dir string) {
	ctx := context.Background()
	for _, name := range []string{"page", "visitors", "referrer", "browser"} {
		e.Unscoped().Stat(ctx, engine.StatQuery{Website: c.site, Name: name, From: c.day2 - engine.MaxRangeDays + 2, To: c.day2 + 1})
	}
	e.Unscoped().Totals(ctx, c.site, c.day1-400, c.day2)
	for _, body := range []string{
		`{"site_id":"x","metrics":["visitors","visits","bounce_rate","visit_duration","events"],"date_range":"all"}`,
		`{"site_id":"x","metrics":["visitors","pageviews"],"date_range":"all","dimensions":["visit:source","event:page"],"filters":[["has_done",["contains","event:page",["/"]]]]}`,
		`{"site_id":"x","metrics":["visitors","events"],"date_range":"all","dimensions":["time:day","event:props:k","visit:city"]}`,
	} {
		q, err := engine.ParseQuery([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		e.Unscoped().Query(ctx, c.site, q)
	}
	for i := range 5 {
		e.Track(ctx, engine.Hit{
			Website:   c.site,
			Time:      c.now().Add(time.Duration(i-2) * 20 * time.Hour),
			URL:       fmt.Sprintf("/fuzz/%d", i),
			Referrer:  []string{"", "https://duckduckgo.com/"}[i%2],
			UserAgent: crashUA,
			IP:        netip.AddrFrom4([4]byte{1, 2, 3, byte(i % 3)}),
		})
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Logf("snapshot: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	e2, err := c.open(dir)
	if err != nil {
		t.Fatalf("reopen of a store the engine accepted and then wrote itself: %v", err)
	}
	if _, err := e2.Unscoped().Totals(ctx, c.site, c.day1, c.day2); err != nil {
		t.Logf("totals after reopen: %v", err)
	}
	e2.Close()
}

// fuzzRecord encodes a log record the way package record does (version 1), for
// seeds that reach the corners of the decoder.
func fuzzRecord(website uint32, date, back int64, flags byte, ms int64, strs ...string) []byte {
	b := []byte{1}
	b = binary.AppendUvarint(b, uint64(website))
	b = binary.AppendVarint(b, date)
	b = binary.AppendVarint(b, back)
	b = append(b, flags)
	b = binary.AppendVarint(b, ms)
	b = binary.LittleEndian.AppendUint64(b, 0x0123456789abcdef)
	for i := range 12 {
		s := ""
		if i < len(strs) {
			s = strs[i]
		}
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// fuzzMark is an idempotency key's log entry (engine/idem.go): tag,
// website, key digest, time, nonce, accepted and n dropped counts.
func fuzzMark(website uint32, ms int64, accepted uint64, n int) []byte {
	b := []byte{0xf0}
	b = binary.AppendUvarint(b, uint64(website))
	b = append(b, make([]byte, 16)...)
	b = binary.AppendVarint(b, ms)
	b = binary.LittleEndian.AppendUint64(b, 7)
	b = binary.AppendUvarint(b, accepted)
	b = binary.AppendUvarint(b, uint64(n))
	for i := range n {
		b = binary.AppendUvarint(b, uint64(i))
	}
	return b
}

// FuzzLogRecord appends the input as a log entry after the fixture's log
// tail, then opens the engine, which replays it.
func FuzzLogRecord(f *testing.F) {
	c := newCorruptStore(f)
	dir := c.copy(f)
	c.edit(f, dir, func(s *snapshot.Store) error {
		return s.ReplayLog(0, func(_ uint64, data []byte) error {
			f.Add(append([]byte(nil), data...))
			f.Add(append([]byte(nil), data[:len(data)-1]...))
			return nil
		})
	})
	c.fs.RemoveAll(dir)
	d := int64(c.day2)
	ms := c.now().UnixMilli()
	for _, seed := range [][]byte{
		nil,
		{1},
		fuzzRecord(c.site, d, 0, 12, ms, "/p", "www.google.com", "", "Chrome", "Windows", "desktop", "1x1", "en", "DE:Germany", "EU:Europe", ""),
		fuzzRecord(c.site, d, 0, 0x80|23, ms, "", "", "", "", "", "", "", "", "", "", "", "Signup::"),
		fuzzRecord(c.site, d, 31, 0x7f, -ms, "/x"),
		fuzzRecord(c.site, 1<<31-1, 31, 23, 1<<62, "/late"),
		fuzzRecord(c.site, -1<<31, 0, 0, -1<<62, "/early"),
		fuzzRecord(c.site, d-400, 3, 5, ms-400*86400000, "/old", "news.example.org"),
		fuzzRecord(c.site+1, d, 0, 1, ms, "/unknown-site"),
		fuzzRecord(0, d, 0, 1, ms),
		fuzzRecord(1<<32-1, d, 0, 1, ms),
		fuzzMark(c.site, ms, 3, 6),
		fuzzMark(c.site, ms, 1<<32-1, 7),
		fuzzMark(c.site+1, ms, 1, 6),
		fuzzMark(c.site, -ms, 0, 65),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, dir := fuzzOpen(t, c, func(s *snapshot.Store) error {
			seq, _, err := lastLogEntry(s)
			if err != nil {
				return err
			}
			return s.Append(snapshot.LogEntry{Seq: seq + 1, Data: data})
		})
		if e != nil {
			fuzzExercise(t, c, e, dir)
		}
	})
}

// FuzzVisitorState stores the input as the visitor state of today's salt
// period, then opens the engine and tracks hits in that period.
func FuzzVisitorState(f *testing.F) {
	c := newCorruptStore(f)
	dir := c.copy(f)
	c.edit(f, dir, func(s *snapshot.Store) error {
		return s.ScanStates(c.site, func(_ int32, data []byte) error {
			f.Add(append([]byte(nil), data...))
			f.Add(append([]byte(nil), data[:len(data)/2]...))
			return nil
		})
	})
	c.fs.RemoveAll(dir)
	state := func(first uint32, visitors ...int64) []byte {
		b := []byte{1}
		b = binary.AppendUvarint(b, uint64(first))
		b = binary.AppendUvarint(b, uint64(len(visitors)))
		for i, last := range visitors {
			b = binary.LittleEndian.AppendUint64(b, uint64(i%2)) // repeated hashes
			b = binary.AppendVarint(b, last)
			b = binary.AppendUvarint(b, uint64(i))
		}
		return b
	}
	ms := c.now().UnixMilli()
	for _, seed := range [][]byte{
		nil,
		{1, 0, 0},
		state(0, ms, 0, -ms),
		state(1<<32-3, ms, ms),
		state(1<<32-1, ms),
		state(7, 1<<62, -1<<62, ms-3600000),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, dir := fuzzOpen(t, c, func(s *snapshot.Store) error {
			return s.WriteSnapshot(&snapshot.Snapshot{States: []snapshot.StateRecord{{Website: c.site, Period: int32(c.day2), Data: data}}})
		})
		if e != nil {
			fuzzExercise(t, c, e, dir)
		}
	})
}

// TestVisitorIDOverflow: a visitor state whose dense ids end just below 2^32
// is accepted by Open; numbering more visitors is refused (never wrapped to
// 0), so the state written at the next snapshot reads back.
func TestVisitorIDOverflow(t *testing.T) {
	c := newCorruptStore(t)
	dir := c.copy(t)
	ms := c.now().UnixMilli()
	b := []byte{1}
	b = binary.AppendUvarint(b, 1<<32-2)
	b = binary.AppendUvarint(b, 1)
	b = binary.LittleEndian.AppendUint64(b, 42)
	b = binary.AppendVarint(b, ms)
	b = binary.AppendUvarint(b, 0)
	c.edit(t, dir, func(s *snapshot.Store) error {
		return s.WriteSnapshot(&snapshot.Snapshot{States: []snapshot.StateRecord{{Website: c.site, Period: int32(c.day2), Data: b}}})
	})
	e, err := c.open(dir)
	if err != nil {
		t.Skipf("Open refuses ids this close to 2^32 (%v): fine", err)
	}
	ctx := context.Background()
	for i := range 3 {
		_, err := e.Track(ctx, engine.Hit{Website: c.site, URL: "/v", UserAgent: crashUA, IP: netip.AddrFrom4([4]byte{5, 5, 5, byte(i)})})
		if err != nil {
			t.Logf("Track %d: %v", i, err) // refusing to number more visitors would be fine
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = c.open(dir)
	if err != nil {
		t.Fatalf("reopen after numbering past the last visitor id: %v", err)
	}
	e.Close()
}

// FuzzSiteMeta stores the input as the website's meta (last applied
// sequence and the dates with data), then opens the engine.
func FuzzSiteMeta(f *testing.F) {
	c := newCorruptStore(f)
	dir := c.copy(f)
	c.edit(f, dir, func(s *snapshot.Store) error {
		return s.ScanSites(func(_ uint32, data []byte) error {
			f.Add(append([]byte(nil), data...))
			f.Add(append([]byte(nil), data[:len(data)-1]...))
			return nil
		})
	})
	c.fs.RemoveAll(dir)
	meta := func(seq uint64, dates ...int64) []byte {
		b := []byte{1}
		b = binary.AppendUvarint(b, seq)
		b = binary.AppendUvarint(b, uint64(len(dates)))
		for _, d := range dates {
			b = binary.AppendVarint(b, d)
		}
		return b
	}
	d := int64(c.day1)
	for _, seed := range [][]byte{
		nil,
		meta(0),
		meta(0, d, 1),
		meta(1<<64-1, d, 1),
		meta(3, d, 0, 0, 1),            // a date twice
		meta(3, d, 5),                  // a date without a bucket
		meta(3, 1<<31-1, -(1<<32 - 1)), // the extremes
		meta(3, d, -1<<40),
		// Version 2: idempotency keys after the dates.
		append(append([]byte{2}, meta(3, d, 1)[1:]...), 1),
		append(append(append([]byte{2}, meta(3, d, 1)[1:]...), 1), make([]byte, 16+1+7)...),
		append(append([]byte{2}, meta(3)[1:]...), 0xff, 0xff, 0xff, 0xff, 0x0f),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, dir := fuzzOpen(t, c, func(s *snapshot.Store) error {
			return s.WriteSnapshot(&snapshot.Snapshot{Sites: []snapshot.SiteRecord{{Website: c.site, Data: data}}})
		})
		if e != nil {
			fuzzExercise(t, c, e, dir)
		}
	})
}

// FuzzTrack tracks one hit of random strings, then checks that the
// statistics of the hit's day still add up (SPEC §2.3): Σpage =
// Σpageviews_hours = pageviews, every per-visitor dimension sums to the
// visitors, Σlanding_page = Σreferrer = visits ≥ Σcampaign, Σevent = events.
func FuzzTrack(f *testing.F) {
	base := time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC)
	e, err := engine.Open(&engine.Options{FS: snapshot.NewMemFS(), Dir: "data", NoSync: true, SnapshotEvery: -1, Now: func() time.Time { return base }})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	ctx := context.Background()
	acc, _, err := engine.NewTestAccount()
	if err != nil {
		f.Fatal(err)
	}
	domain := "fuzz.example"
	excl := "utm_source\nfbclid"
	w, err := e.Owner(acc.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain, ExcludeParams: &excl})
	if err != nil {
		f.Fatal(err)
	}

	// flags: 1 Website set (import), 2 Domain set (Plausible form), 4 event,
	// 8 live, 16 prefetch.
	f.Add("https://fuzz.example/a?utm_campaign=x&utm_source=y", "https://www.google.com/search?q=1", crashUA, []byte{8, 8, 8, 8}, "1920x1080", "en-US,en;q=0.9", "", "", "", uint8(8), int64(0))
	f.Add("https://www.FUZZ.example:8443/b#frag", "https://fuzz.example/a", "Googlebot/2.1", []byte{1, 1, 1, 1}, "axb", "", "", "", "", uint8(8), int64(-3600))
	f.Add("/imported?x=%zz", "android-app://com.google.android.gm/", "", []byte{}, "99999999x1", "zz", "Buy:Now", "5.50", "EUR:x", uint8(1|4), int64(86400*3))
	f.Add("https://fuzz.example/"+string(make([]byte, 300)), "not a url", "curl/8.0", []byte{0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "", "xx-YY", "Signup", "", "", uint8(2|4), int64(1))
	f.Add("fuzz.example/c", "https://t.co/abc", crashUA, []byte{10, 0, 0, 1}, "1x1", "pt-BR", "", "1e309", "", uint8(2|16), int64(1<<40))
	f.Add("https://fuzz.example/d", "https://m.facebook.com/", crashUA, []byte{9, 9, 9, 9}, "360x800", "en", "", "", "", uint8(1), int64(-1<<40))
	f.Fuzz(func(t *testing.T, url, ref, ua string, ip []byte, res, lang, evName, evValue, evUnit string, flags uint8, offset int64) {
		h := engine.Hit{
			Time:       base.Add(time.Duration(offset) * time.Second),
			URL:        url,
			Referrer:   ref,
			UserAgent:  ua,
			Resolution: res,
			Language:   lang,
			Live:       flags&8 != 0,
			Prefetch:   flags&16 != 0,
		}
		if offset == 0 {
			h.Time = time.Time{} // the engine's clock
		}
		h.IP, _ = netip.AddrFromSlice(ip)
		if flags&1 != 0 {
			h.Website = w.ID
		}
		if flags&2 != 0 {
			h.Domain = domain + ", other.example"
		}
		if flags&4 != 0 {
			h.Event = &engine.Event{Name: evName, Value: []byte(evValue), Unit: evUnit}
		}
		res0, err := e.Track(ctx, h)
		if err != nil {
			t.Fatalf("Track: %v", err)
		}
		dropped := 0
		for _, n := range res0.Dropped {
			dropped += n
		}
		if len(res0.Reasons) != 1 || res0.Accepted+dropped != 1 {
			t.Fatalf("Track of one hit: %+v", res0)
		}
		if res0.Accepted == 0 {
			return
		}
		when := h.Time
		if when.IsZero() {
			when = base
		}
		checkDaySums(t, e, w.ID, buckets.DateFromTime(when.UTC()))
	})
}

// checkDaySums checks that the statistics of one day add up.
func checkDaySums(t *testing.T, e *engine.Engine, site uint32, day buckets.Date) {
	t.Helper()
	ctx := context.Background()
	sum := func(name string) uint64 {
		p, err := e.Unscoped().Stat(ctx, engine.StatQuery{Website: site, Name: name, From: day, To: day, PerPage: 1 << 30})
		if err != nil {
			t.Fatalf("Stat(%s) of %v: %v", name, day, err)
		}
		var n uint64
		for _, r := range p.Rows {
			n += r.Count
		}
		return n
	}
	tot, err := e.Unscoped().Totals(ctx, site, day, day)
	if err != nil {
		t.Fatalf("Totals of %v: %v", day, err)
	}
	pv := sum("pageviews")
	if pv != tot.Pageviews {
		t.Errorf("%v: pageviews %d, Totals.Pageviews %d", day, pv, tot.Pageviews)
	}
	for _, name := range []string{"page", "pageviews_hours"} {
		if n := sum(name); n != pv {
			t.Errorf("%v: Σ%s = %d, want the pageviews %d", day, name, n, pv)
		}
	}
	visitors := sum("visitors")
	if visitors != tot.Visitors {
		t.Errorf("%v: visitors %d, Totals.Visitors %d", day, visitors, tot.Visitors)
	}
	for _, name := range []string{"browser", "os", "device", "resolution", "language", "country", "continent", "city"} {
		if n := sum(name); n != visitors {
			t.Errorf("%v: Σ%s = %d, want the visitors %d", day, name, n, visitors)
		}
	}
	if n := sum("visitors_hours"); n < visitors {
		t.Errorf("%v: Σvisitors_hours = %d < visitors %d", day, n, visitors)
	}
	for _, name := range []string{"landing_page", "referrer"} {
		if n := sum(name); n != tot.Visits {
			t.Errorf("%v: Σ%s = %d, want the visits %d", day, name, n, tot.Visits)
		}
	}
	if n := sum("campaign"); n > tot.Visits {
		t.Errorf("%v: Σcampaign = %d > visits %d", day, n, tot.Visits)
	}
	if n := sum("event"); n != tot.Events {
		t.Errorf("%v: Σevent = %d, want the events %d", day, n, tot.Events)
	}
}

// FuzzDayValue stores the input as the value of a day with data (its
// buckets and its segments store, SPEC §10.1), then opens the engine,
// queries the day with both kinds of query and writes into it.
func FuzzDayValue(f *testing.F) {
	c := newCorruptStore(f)
	dir := c.copy(f)
	c.edit(f, dir, func(s *snapshot.Store) error {
		return s.Days(c.site, int32(c.day1), int32(c.day2), func(_ int32, data []byte) error {
			f.Add(append([]byte(nil), data...))
			f.Add(append([]byte(nil), data[:len(data)-1]...))
			f.Add(append([]byte(nil), data[:len(data)/2]...))
			return nil
		})
	})
	c.fs.RemoveAll(dir)
	for _, seed := range [][]byte{nil, {0xd5}, {0xd5, 0}, {0xd5, 1, 2, 1}, {0xd5, 0xff, 0xff, 0xff, 0xff, 0x0f}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, dir := fuzzOpen(t, c, func(s *snapshot.Store) error {
			return s.WriteSnapshot(&snapshot.Snapshot{Days: []snapshot.DayRecord{{Website: c.site, Date: int32(c.day2), Data: data}}})
		})
		if e != nil {
			fuzzExercise(t, c, e, dir)
		}
	})
}
