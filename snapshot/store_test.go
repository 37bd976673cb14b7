package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/go-cmp/cmp"
)

// memStore opens a Store on a fresh MemFS and closes it at the end of t.
func memStore(t *testing.T) (*Store, FS) {
	t.Helper()
	fs := NewMemFS()
	s, err := Open(&Options{Dir: "db", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fs
}

// reopen closes s and opens its directory again.
func reopen(t *testing.T, s *Store, fs FS) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(&Options{Dir: s.Dir(), FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	return s2
}

type rec struct {
	ID   uint64
	Data string
}

func scanAll(t *testing.T, s *Store, k Kind) []rec {
	t.Helper()
	var got []rec
	if err := s.Scan(k, func(id uint64, v []byte) error {
		got = append(got, rec{id, string(v)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRegistry(t *testing.T) {
	s, fs := memStore(t)
	must(t, s.Put(KindWebsite, 2, []byte("two")))
	must(t, s.Put(KindWebsite, 1, []byte("one")))
	must(t, s.Put(KindWebsite, 1<<40, []byte("big")))
	must(t, s.Put(KindAccount, 1, []byte("account")))
	must(t, s.Put(KindWebsite, 3, []byte("three")))
	must(t, s.Delete(KindWebsite, 3))
	must(t, s.Delete(KindWebsite, 99)) // missing: fine
	must(t, s.Put(KindSalt, 0, []byte{}))

	for _, tc := range []struct {
		name    string
		kind    Kind
		id      uint64
		want    string
		wantErr error
	}{
		{name: "present", kind: KindWebsite, id: 1, want: "one"},
		{name: "other kind same id", kind: KindAccount, id: 1, want: "account"},
		{name: "large id", kind: KindWebsite, id: 1 << 40, want: "big"},
		{name: "empty value", kind: KindSalt, id: 0, want: ""},
		{name: "deleted", kind: KindWebsite, id: 3, wantErr: ErrNotFound},
		{name: "never written", kind: KindCounter, id: 1, wantErr: ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Get(tc.kind, tc.id)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Get: err %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}

	want := []rec{{1, "one"}, {2, "two"}, {1 << 40, "big"}}
	if diff := cmp.Diff(want, scanAll(t, s, KindWebsite)); diff != "" {
		t.Errorf("Scan mismatch (-want +got):\n%s", diff)
	}
	// The value returned by Get is the caller's.
	v, _ := s.Get(KindWebsite, 1)
	v[0] = 'X'
	if v2, _ := s.Get(KindWebsite, 1); string(v2) != "one" {
		t.Errorf("Get returned shared memory: %q", v2)
	}
	if err := s.Put(0, 1, nil); err == nil {
		t.Error("Put of kind 0: no error")
	}
	// An error of fn stops the scan and comes back as is.
	stop := errors.New("stop")
	n := 0
	if err := s.Scan(KindWebsite, func(uint64, []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Scan with failing fn: %v after %d calls", err, n)
	}

	s = reopen(t, s, fs)
	if diff := cmp.Diff(want, scanAll(t, s, KindWebsite)); diff != "" {
		t.Errorf("Scan after reopen mismatch (-want +got):\n%s", diff)
	}
}

type entry struct {
	Seq  uint64
	Data string
}

func replay(t *testing.T, s *Store, after uint64) []entry {
	t.Helper()
	var got []entry
	if err := s.ReplayLog(after, func(seq uint64, data []byte) error {
		got = append(got, entry{seq, string(data)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestLog(t *testing.T) {
	s, fs := memStore(t)
	must(t, s.Append(LogEntry{Seq: 3, Data: []byte("c")}, LogEntry{Seq: 1, Data: []byte("a")}))
	must(t, s.Append(LogEntry{Seq: 2, Data: []byte("b")}))
	must(t, s.Append(LogEntry{Seq: 300, Data: []byte("z")}))
	must(t, s.Append())
	if err := s.Append(LogEntry{Seq: 0}); err == nil {
		t.Error("Append of Seq 0: no error")
	}
	all := []entry{{1, "a"}, {2, "b"}, {3, "c"}, {300, "z"}}
	for _, tc := range []struct {
		after uint64
		want  []entry
	}{
		{after: 0, want: all},
		{after: 1, want: all[1:]},
		{after: 3, want: all[3:]},
		{after: 299, want: all[3:]},
		{after: 300, want: nil},
		{after: ^uint64(0), want: nil},
	} {
		t.Run(fmt.Sprintf("after=%d", tc.after), func(t *testing.T) {
			if diff := cmp.Diff(tc.want, replay(t, s, tc.after)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	s = reopen(t, s, fs)
	if diff := cmp.Diff(all, replay(t, s, 0)); diff != "" {
		t.Errorf("after reopen: mismatch (-want +got):\n%s", diff)
	}
}

func TestSnapshotTrim(t *testing.T) {
	s, fs := memStore(t)
	for seq := uint64(1); seq <= 10; seq++ {
		must(t, s.Append(LogEntry{Seq: seq, Data: []byte{byte(seq)}}))
	}
	must(t, s.WriteSnapshot(&Snapshot{
		Days:  []DayRecord{{Website: 1, Date: 5, Data: []byte("d5")}},
		Sites: []SiteRecord{{Website: 1, Data: []byte("seq=6")}},
		Trim:  6,
	}))
	if got := s.Trim(); got != 6 {
		t.Errorf("Trim() = %d, want 6", got)
	}
	seqs := func() []uint64 {
		var out []uint64
		for _, e := range replay(t, s, 0) {
			out = append(out, e.Seq)
		}
		return out
	}
	if diff := cmp.Diff([]uint64{7, 8, 9, 10}, seqs()); diff != "" {
		t.Errorf("replay after trim 6: mismatch (-want +got):\n%s", diff)
	}
	if n, _ := s.logCount(); n != 4 {
		t.Errorf("log holds %d entries after trim, want 4 (trimmed entries not deleted)", n)
	}

	// A smaller trim point is ignored, the rest of the snapshot is written.
	must(t, s.WriteSnapshot(&Snapshot{Days: []DayRecord{{Website: 1, Date: 6, Data: []byte("d6")}}, Trim: 2}))
	if got := s.Trim(); got != 6 {
		t.Errorf("Trim() after smaller trim = %d, want 6", got)
	}
	if _, err := s.Day(1, 6); err != nil {
		t.Errorf("Day written with an ignored trim: %v", err)
	}
	// An entry appended late, below the trim point, is never replayed.
	must(t, s.Append(LogEntry{Seq: 5, Data: []byte("late")}))
	if diff := cmp.Diff([]uint64{7, 8, 9, 10}, seqs()); diff != "" {
		t.Errorf("replay with a late entry below trim: mismatch (-want +got):\n%s", diff)
	}

	s = reopen(t, s, fs)
	if got := s.Trim(); got != 6 {
		t.Errorf("Trim() after reopen = %d, want 6", got)
	}
	if diff := cmp.Diff([]uint64{7, 8, 9, 10}, seqs()); diff != "" {
		t.Errorf("replay after reopen: mismatch (-want +got):\n%s", diff)
	}
	must(t, s.WriteSnapshot(&Snapshot{Trim: 100}))
	if diff := cmp.Diff([]uint64(nil), seqs()); diff != "" {
		t.Errorf("replay after trim 100: mismatch (-want +got):\n%s", diff)
	}
	must(t, s.WriteSnapshot(&Snapshot{Trim: ^uint64(0)}))
	if got := s.Trim(); got != ^uint64(0) {
		t.Errorf("Trim() = %d, want max", got)
	}
}

type day struct {
	Date int32
	Data string
}

func days(t *testing.T, s *Store, website uint32, from, to int32) []day {
	t.Helper()
	var got []day
	if err := s.Days(website, from, to, func(d int32, data []byte) error {
		got = append(got, day{d, string(data)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDays(t *testing.T) {
	s, _ := memStore(t)
	dates := []int32{-2147483648, -400, -1, 0, 1, 20000, 2147483647}
	sn := &Snapshot{}
	for _, w := range []uint32{0, 7, 8, ^uint32(0)} {
		for _, d := range dates {
			sn.Days = append(sn.Days, DayRecord{Website: w, Date: d, Data: fmt.Appendf(nil, "%d/%d", w, d)})
		}
	}
	must(t, s.WriteSnapshot(sn))
	all := make([]day, len(dates))
	for i, d := range dates {
		all[i] = day{d, fmt.Sprintf("7/%d", d)}
	}
	for _, tc := range []struct {
		name     string
		from, to int32
		want     []day
	}{
		{name: "everything", from: minDate, to: maxDate, want: all},
		{name: "negative only", from: -500, to: -1, want: all[1:3]},
		{name: "around zero", from: -1, to: 1, want: all[2:5]},
		{name: "single day", from: 20000, to: 20000, want: all[5:6]},
		{name: "empty range", from: 2, to: 19999, want: nil},
		{name: "from after to", from: 5, to: -5, want: nil},
		{name: "max date", from: 30000, to: maxDate, want: all[6:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, days(t, s, 7, tc.from, tc.to)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	got, err := s.Day(^uint32(0), -400)
	if err != nil || string(got) != "4294967295/-400" {
		t.Errorf("Day = %q, %v", got, err)
	}
	if _, err := s.Day(7, 2); !errors.Is(err, ErrNotFound) {
		t.Errorf("Day of a missing date: %v, want ErrNotFound", err)
	}

	// Nil Data deletes; retention deletes before a date.
	must(t, s.WriteSnapshot(&Snapshot{Days: []DayRecord{{Website: 7, Date: 0}}}))
	must(t, s.DeleteDaysBefore(7, 1))
	must(t, s.DeleteDaysBefore(8, minDate)) // nothing before the first date
	if diff := cmp.Diff(all[4:], days(t, s, 7, minDate, maxDate)); diff != "" {
		t.Errorf("after deletes: mismatch (-want +got):\n%s", diff)
	}
	if n := len(days(t, s, 8, minDate, maxDate)); n != len(dates) {
		t.Errorf("website 8 has %d days, want %d", n, len(dates))
	}
}

type chunk struct {
	Key  int64
	Data string
}

// perWebsite collects the strings, states and site record of website.
func perWebsite(t *testing.T, s *Store, website uint32) (strs, states []chunk, site string) {
	t.Helper()
	must(t, s.ScanStrings(website, func(from uint32, d []byte) error {
		strs = append(strs, chunk{int64(from), string(d)})
		return nil
	}))
	must(t, s.ScanStates(website, func(p int32, d []byte) error {
		states = append(states, chunk{int64(p), string(d)})
		return nil
	}))
	must(t, s.ScanSites(func(w uint32, d []byte) error {
		if w == website {
			site = string(d)
		}
		return nil
	}))
	return strs, states, site
}

func TestWebsiteData(t *testing.T) {
	s, fs := memStore(t)
	must(t, s.Put(KindWebsite, 1, []byte("site one")))
	for _, w := range []uint32{1, 2} {
		must(t, s.WriteSnapshot(&Snapshot{
			Days:    []DayRecord{{Website: w, Date: -3, Data: []byte("d")}, {Website: w, Date: 3, Data: []byte("d")}},
			Strings: []StringsChunk{{Website: w, From: 100, Data: []byte("s100")}, {Website: w, From: 0, Data: []byte("s0")}},
			States:  []StateRecord{{Website: w, Period: 5, Data: []byte("p5")}, {Website: w, Period: -5, Data: []byte("p-5")}, {Website: w, Period: 6, Data: []byte("p6")}},
			Sites:   []SiteRecord{{Website: w, Data: fmt.Appendf(nil, "site %d", w)}},
		}))
	}
	must(t, s.WriteSnapshot(&Snapshot{States: []StateRecord{{Website: 2, Period: 6}}})) // nil deletes

	strs, states, site := perWebsite(t, s, 2)
	if diff := cmp.Diff([]chunk{{0, "s0"}, {100, "s100"}}, strs); diff != "" {
		t.Errorf("strings mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]chunk{{-5, "p-5"}, {5, "p5"}}, states); diff != "" {
		t.Errorf("states mismatch (-want +got):\n%s", diff)
	}
	if site != "site 2" {
		t.Errorf("site = %q", site)
	}

	must(t, s.DeleteWebsite(1))
	s = reopen(t, s, fs)
	for _, tc := range []struct {
		website   uint32
		wantDays  int
		wantStrs  int
		wantState int
		wantSite  string
	}{
		{website: 1},
		{website: 2, wantDays: 2, wantStrs: 2, wantState: 2, wantSite: "site 2"},
	} {
		t.Run(fmt.Sprintf("website=%d", tc.website), func(t *testing.T) {
			strs, states, site := perWebsite(t, s, tc.website)
			got := []any{len(days(t, s, tc.website, minDate, maxDate)), len(strs), len(states), site}
			want := []any{tc.wantDays, tc.wantStrs, tc.wantState, tc.wantSite}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("days, strings, states, site: mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// The registry is the caller's business.
	if _, err := s.Get(KindWebsite, 1); err != nil {
		t.Errorf("DeleteWebsite touched the registry: %v", err)
	}
	must(t, s.DeleteWebsite(^uint32(0))) // last website: upper bound has no successor
}

func TestLocked(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   FS
		dir  string
	}{
		{name: "disk", dir: t.TempDir()},
		{name: "mem", fs: NewMemFS(), dir: "db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(&Options{Dir: tc.dir, FS: tc.fs})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(&Options{Dir: tc.dir, FS: tc.fs})
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("second Open: %v, want ErrLocked", err)
			}
			want := fmt.Sprintf("snapshot: data directory %q is in use by another process (is webstatsd running?)", tc.dir)
			if err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
			must(t, s.Close())
			s, err = Open(&Options{Dir: tc.dir, FS: tc.fs})
			if err != nil {
				t.Fatalf("Open after Close: %v", err)
			}
			s.Close()
		})
	}
}

// rawDB opens the Pebble database under a store directory, bypassing Open.
func rawDB(t *testing.T, fs FS, dir string) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, FormatMajorVersion: formatMajorVersion})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     map[string][]byte // raw keys written before Open
		wantErr error
		wantMsg string
	}{
		{
			name:    "newer version",
			set:     map[string][]byte{string(versionKey): encodeUint64(FormatVersion + 1)},
			wantErr: ErrVersion,
			wantMsg: fmt.Sprintf(`snapshot: data directory "db" has format version %d, this program reads up to %d`, FormatVersion+1, FormatVersion),
		},
		{
			name:    "garbled version",
			set:     map[string][]byte{string(versionKey): []byte("v1")},
			wantErr: ErrCorrupt,
			wantMsg: "snapshot: open db: corrupt data: format version value is 2 bytes (7631), want 8",
		},
		{
			name:    "version zero",
			set:     map[string][]byte{string(versionKey): encodeUint64(0)},
			wantErr: ErrCorrupt,
		},
		{
			name:    "garbled trim",
			set:     map[string][]byte{string(versionKey): encodeUint64(1), string(trimKey): {1, 2, 3}},
			wantErr: ErrCorrupt,
			wantMsg: "snapshot: open db: corrupt data: trim point value is 3 bytes (010203), want 8",
		},
		{
			name:    "data without version",
			set:     map[string][]byte{"foreign key": []byte("x")},
			wantErr: ErrCorrupt,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewMemFS()
			db := rawDB(t, fs, "db")
			for k, v := range tc.set {
				must(t, db.Set([]byte(k), v, pebble.Sync))
			}
			must(t, db.Close())
			s, err := Open(&Options{Dir: "db", FS: fs})
			if err == nil {
				s.Close()
				t.Fatal("Open: no error")
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Open: %v, want %v", err, tc.wantErr)
			}
			if tc.wantMsg != "" && err.Error() != tc.wantMsg {
				t.Errorf("message:\n%s\nwant:\n%s", err, tc.wantMsg)
			}
			// The lock was released: the directory can be opened again.
			db = rawDB(t, fs, "db")
			db.Close()
		})
	}
	if _, err := Open(nil); err == nil || !strings.Contains(err.Error(), "Dir is required") {
		t.Errorf("Open(nil): %v", err)
	}
	if _, err := Open(&Options{Dir: "x", FS: NewMemFS(), CacheSize: -1}); err == nil {
		t.Error("Open with negative CacheSize: no error")
	}
}

// TestMalformedKeys writes keys of the wrong shape into each family's range
// and checks that every reader reports ErrCorrupt instead of panicking.
func TestMalformedKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  []byte
		read func(s *Store) error
	}{
		{
			name: "registry",
			key:  append(registryPrefix(KindAccount), 1, 2),
			read: func(s *Store) error { return s.Scan(KindAccount, func(uint64, []byte) error { return nil }) },
		},
		{
			name: "log",
			key:  []byte{prefixLog, 0xff, 1},
			read: func(s *Store) error { return s.ReplayLog(0, func(uint64, []byte) error { return nil }) },
		},
		{
			name: "day",
			key:  append(dayKey(1, 5), 0),
			read: func(s *Store) error { return s.Days(1, minDate, maxDate, func(int32, []byte) error { return nil }) },
		},
		{
			name: "strings",
			key:  websiteSubPrefix(1, subStrings),
			read: func(s *Store) error { return s.ScanStrings(1, func(uint32, []byte) error { return nil }) },
		},
		{
			name: "state",
			key:  append(websiteSubPrefix(1, subState), 1),
			read: func(s *Store) error { return s.ScanStates(1, func(int32, []byte) error { return nil }) },
		},
		{
			name: "chunk",
			key:  append(chunkPeriodPrefix(1, 5), 1),
			read: func(s *Store) error { return s.ScanStateChunks(1, 5, func(uint32, []byte) error { return nil }) },
		},
		{
			name: "chunk",
			key:  append(chunkPeriodPrefix(1, 5), 1),
			read: func(s *Store) error { return s.StatePeriods(1, func(int32) error { return nil }) },
		},
		{
			name: "site",
			key:  []byte{prefixSite, 1},
			read: func(s *Store) error { return s.ScanSites(func(uint32, []byte) error { return nil }) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := memStore(t)
			must(t, s.db.Set(tc.key, []byte("v"), pebble.Sync))
			err := tc.read(s)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read: %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), "malformed "+tc.name+" key") {
				t.Errorf("message %q does not say what is malformed", err)
			}
		})
	}
}

// TestMigration exercises the migration machinery with a synthetic format
// version 2 that renames registry kind 5 to kind 6.
func TestMigration(t *testing.T) {
	fs := NewMemFS()
	s, err := open(&Options{Dir: "db", FS: fs}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Put(5, 1, []byte("a")))
	must(t, s.Put(5, 2, []byte("b")))
	must(t, s.Close())

	ran := 0
	v2 := []migration{{
		from: 1,
		what: "move kind 5 to kind 6",
		run: func(db *pebble.DB, b *pebble.Batch) error {
			ran++
			it, err := db.NewIter(&pebble.IterOptions{LowerBound: registryPrefix(5), UpperBound: registryPrefix(6)})
			if err != nil {
				return err
			}
			for it.First(); it.Valid(); it.Next() {
				_, id, err := parseRegistryKey(it.Key())
				if err != nil {
					it.Close()
					return err
				}
				must(t, b.Set(registryKey(6, id), it.Value(), nil))
				must(t, b.Delete(it.Key(), nil))
			}
			return it.Close()
		},
	}}
	for range 2 { // the second open finds version 2 and migrates nothing
		s, err = open(&Options{Dir: "db", FS: fs}, 2, v2)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]rec{{1, "a"}, {2, "b"}}, scanAll(t, s, 6)); diff != "" {
			t.Errorf("kind 6 mismatch (-want +got):\n%s", diff)
		}
		if got := scanAll(t, s, 5); len(got) != 0 {
			t.Errorf("kind 5 still holds %v", got)
		}
		must(t, s.Close())
	}
	if ran != 1 {
		t.Errorf("migration ran %d times, want 1", ran)
	}
	// A version 1 program refuses the migrated store.
	if _, err := open(&Options{Dir: "db", FS: fs}, 1, nil); !errors.Is(err, ErrVersion) {
		t.Errorf("Open of a version 2 store: %v, want ErrVersion", err)
	}
	// A missing step is an error, not a silent skip.
	if _, err := open(&Options{Dir: "db", FS: fs}, 3, v2); err == nil || !strings.Contains(err.Error(), "no migration from format version 2") {
		t.Errorf("open with a missing migration: %v", err)
	}
}

func TestClosed(t *testing.T) {
	s, _ := memStore(t)
	must(t, s.Close())
	for name, err := range map[string]error{
		"Close":       s.Close(),
		"Put":         s.Put(KindAccount, 1, nil),
		"Append":      s.Append(LogEntry{Seq: 1}),
		"ReplayLog":   s.ReplayLog(0, nil),
		"Days":        s.Days(1, 0, 1, nil),
		"Snapshot":    s.WriteSnapshot(&Snapshot{}),
		"Compact":     s.Compact(),
		"DeleteSites": s.DeleteWebsite(1),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if _, err := s.Get(KindAccount, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
}

func TestCompactDiskUsage(t *testing.T) {
	s, _ := memStore(t)
	sn := &Snapshot{}
	for d := range int32(100) {
		sn.Days = append(sn.Days, DayRecord{Website: 1, Date: d, Data: bytes.Repeat([]byte{byte(d)}, 1000)})
	}
	must(t, s.WriteSnapshot(sn))
	must(t, s.Compact())
	if u := s.DiskUsage(); u == 0 {
		t.Error("DiskUsage = 0 after writing 100 kB")
	}
	if n := len(days(t, s, 1, minDate, maxDate)); n != 100 {
		t.Errorf("%d days after Compact, want 100", n)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCompactLogReclaimsTrimmedSpace(t *testing.T) {
	s, err := Open(&Options{Dir: t.TempDir(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	data := make([]byte, 200)
	for i := range 20_000 {
		for j := range data {
			data[j] = byte(rng.Uint32()) // incompressible
		}
		if err := s.Append(LogEntry{Seq: uint64(i + 1), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(); err != nil { // the entries are in sstables now
		t.Fatal(err)
	}
	before := s.DiskUsage()
	if err := s.WriteSnapshot(&Snapshot{Trim: 20_000}); err != nil {
		t.Fatal(err)
	}
	if err := s.CompactLog(); err != nil {
		t.Fatal(err)
	}
	// The WAL files stay (Pebble recycles them): a fixed cost. The
	// entries' own 4 MB in sstables must be gone. Pebble deletes the
	// compacted files in the background, after CompactLog returns (under
	// -race on two busy cores, not yet when it returned): wait for it.
	after := s.DiskUsage()
	for deadline := time.Now().Add(10 * time.Second); int64(before)-int64(after) < 3<<20 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		after = s.DiskUsage()
	}
	if reclaimed := int64(before) - int64(after); reclaimed < 3<<20 {
		t.Errorf("disk %d bytes after trimming and compacting the log, %d before: %d reclaimed, want ≥ 3 MiB", after, before, reclaimed)
	}
	n := 0
	if err := s.ReplayLog(0, func(uint64, []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("replay after trim: %d entries, %v", n, err)
	}
}

// stateOf returns website's state chunks by period, read through
// StatePeriods and ScanStateChunks.
func stateOf(t *testing.T, s *Store, website uint32) map[int32][]chunk {
	t.Helper()
	got := map[int32][]chunk{}
	var periods []int32
	must(t, s.StatePeriods(website, func(p int32) error {
		periods = append(periods, p)
		return nil
	}))
	for _, p := range periods {
		must(t, s.ScanStateChunks(website, p, func(c uint32, data []byte) error {
			got[p] = append(got[p], chunk{int64(c), string(data)})
			return nil
		}))
		if len(got[p]) == 0 {
			t.Errorf("StatePeriods lists period %d, which has no chunk", p)
		}
	}
	if !slices.IsSorted(periods) {
		t.Errorf("StatePeriods not ascending: %v", periods)
	}
	return got
}

// TestStateChunks: chunks are upserted and deleted by WriteSnapshot,
// DropPeriods removes a period's chunks and its old-form state in the same
// batch as the rest (chunks written in it survive), and DeleteWebsite removes
// them all.
func TestStateChunks(t *testing.T) {
	s, fs := memStore(t)
	must(t, s.WriteSnapshot(&Snapshot{
		Days:    []DayRecord{{Website: 1, Date: 5, Data: []byte("day")}},
		Strings: []StringsChunk{{Website: 1, From: 0, Data: []byte("s0")}},
		States:  []StateRecord{{Website: 1, Period: 5, Data: []byte("old 5")}, {Website: 1, Period: 7, Data: []byte("old 7")}},
		Chunks: []StateChunk{
			{Website: 1, Period: 5, Chunk: 2, Data: []byte("5.2")},
			{Website: 1, Period: 5, Chunk: 0, Data: []byte("5.0")},
			{Website: 1, Period: 5, Chunk: 256, Data: []byte("5.256")},
			{Website: 1, Period: -2, Chunk: 1, Data: []byte("-2.1")},
			{Website: 1, Period: 7, Chunk: 0, Data: []byte("7.0")},
			{Website: 2, Period: 5, Chunk: 0, Data: []byte("w2 5.0")},
			{Website: 1, Period: 8, Chunk: 0, Data: []byte{}}, // empty, not deleted
		},
	}))
	want := map[int32][]chunk{
		-2: {{1, "-2.1"}},
		5:  {{0, "5.0"}, {2, "5.2"}, {256, "5.256"}},
		7:  {{0, "7.0"}},
		8:  {{0, ""}},
	}
	if diff := cmp.Diff(want, stateOf(t, s, 1)); diff != "" {
		t.Errorf("chunks mismatch (-want +got):\n%s", diff)
	}

	// One snapshot: delete a chunk (nil Data), drop period 5 and write it
	// anew, drop period -2 entirely, with a day in the same batch.
	must(t, s.WriteSnapshot(&Snapshot{
		Days:        []DayRecord{{Website: 1, Date: 6, Data: []byte("day 6")}},
		Chunks:      []StateChunk{{Website: 1, Period: 7, Chunk: 0}, {Website: 1, Period: 5, Chunk: 9, Data: []byte("new 5.9")}},
		DropPeriods: []PeriodRef{{Website: 1, Period: 5}, {Website: 1, Period: -2}},
	}))
	s = reopen(t, s, fs)
	want = map[int32][]chunk{
		5: {{9, "new 5.9"}},
		8: {{0, ""}},
	}
	if diff := cmp.Diff(want, stateOf(t, s, 1)); diff != "" {
		t.Errorf("chunks after drop mismatch (-want +got):\n%s", diff)
	}
	_, states, _ := perWebsite(t, s, 1)
	if diff := cmp.Diff([]chunk{{7, "old 7"}}, states); diff != "" {
		t.Errorf("old-form states after drop mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]day{{5, "day"}, {6, "day 6"}}, days(t, s, 1, minDate, maxDate)); diff != "" {
		t.Errorf("days mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int32][]chunk{5: {{0, "w2 5.0"}}}, stateOf(t, s, 2)); diff != "" {
		t.Errorf("website 2 mismatch (-want +got):\n%s", diff)
	}

	// An error of fn stops the scans and comes back as is.
	stop := errors.New("stop")
	if err := s.StatePeriods(1, func(int32) error { return stop }); err != stop {
		t.Errorf("StatePeriods: %v, want fn's error", err)
	}
	if err := s.ScanStateChunks(1, 5, func(uint32, []byte) error { return stop }); err != stop {
		t.Errorf("ScanStateChunks: %v, want fn's error", err)
	}

	must(t, s.DeleteWebsite(1))
	if got := stateOf(t, s, 1); len(got) != 0 {
		t.Errorf("chunks after DeleteWebsite: %v", got)
	}
	if diff := cmp.Diff(map[int32][]chunk{5: {{0, "w2 5.0"}}}, stateOf(t, s, 2)); diff != "" {
		t.Errorf("website 2 after deleting website 1 mismatch (-want +got):\n%s", diff)
	}
}

// TestDayParts checks that a day's sealed parts are read with their day,
// in order and only without a gap, that Days skips them, and that they go
// with their day (retention, website delete).
func TestDayParts(t *testing.T) {
	s, _ := memStore(t)
	must(t, s.WriteSnapshot(&Snapshot{
		Days: []DayRecord{{Website: 1, Date: 4, Data: []byte("d4")}, {Website: 1, Date: 5, Data: []byte("d5")}, {Website: 2, Date: 5, Data: []byte("w2")}},
		Parts: []DayPart{
			{Website: 1, Date: 4, Part: 0, Data: []byte("4.0")},
			{Website: 1, Date: 5, Part: 1, Data: []byte("5.1")},
			{Website: 1, Date: 5, Part: 0, Data: []byte("5.0")},
			{Website: 1, Date: 5, Part: 3, Data: []byte("5.3")}, // after a gap: not read
			{Website: 2, Date: 5, Part: 0, Data: []byte("w2.0")},
		},
	}))
	type dayParts struct {
		Date  int32
		Data  string
		Parts []string
	}
	read := func(website uint32, want func(int32) bool) []dayParts {
		t.Helper()
		var got []dayParts
		if err := s.DaysWithParts(website, minDate, maxDate, want, func(d int32, data []byte, parts [][]byte) error {
			dp := dayParts{Date: d, Data: string(data)}
			for _, p := range parts {
				dp.Parts = append(dp.Parts, string(p))
			}
			got = append(got, dp)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := []dayParts{{4, "d4", []string{"4.0"}}, {5, "d5", []string{"5.0", "5.1"}}}
	if diff := cmp.Diff(want, read(1, nil)); diff != "" {
		t.Errorf("DaysWithParts mismatch (-want +got):\n%s", diff)
	}
	// A day skipped by want lends its parts to no other day.
	only := func(date int32) func(int32) bool { return func(d int32) bool { return d == date } }
	if diff := cmp.Diff(want[1:], read(1, only(5))); diff != "" {
		t.Errorf("DaysWithParts of day 5 mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[:1], read(1, only(4))); diff != "" {
		t.Errorf("DaysWithParts of day 4 mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]day{{4, "d4"}, {5, "d5"}}, days(t, s, 1, minDate, maxDate)); diff != "" {
		t.Errorf("Days mismatch (-want +got):\n%s", diff)
	}
	must(t, s.DeleteDaysBefore(1, 5))
	want = []dayParts{{5, "d5", []string{"5.0", "5.1"}}}
	if diff := cmp.Diff(want, read(1, nil)); diff != "" {
		t.Errorf("after DeleteDaysBefore(5) mismatch (-want +got):\n%s", diff)
	}
	must(t, s.DeleteWebsite(1))
	if got := read(1, nil); len(got) != 0 {
		t.Errorf("after DeleteWebsite: %v", got)
	}
	if diff := cmp.Diff([]dayParts{{5, "w2", []string{"w2.0"}}}, read(2, nil)); diff != "" {
		t.Errorf("website 2 mismatch (-want +got):\n%s", diff)
	}
}

// TestWriteSnapshotDropDays checks retention inside a snapshot: the days and
// parts before the date go in the batch that writes the site record, a day
// written by the same snapshot stays, and other websites are not touched.
func TestWriteSnapshotDropDays(t *testing.T) {
	s, _ := memStore(t)
	must(t, s.WriteSnapshot(&Snapshot{
		Days:  []DayRecord{{Website: 1, Date: 3, Data: []byte("d3")}, {Website: 1, Date: 4, Data: []byte("d4")}, {Website: 1, Date: 5, Data: []byte("d5")}, {Website: 2, Date: 3, Data: []byte("w2")}},
		Parts: []DayPart{{Website: 1, Date: 4, Part: 0, Data: []byte("4.0")}},
	}))
	must(t, s.WriteSnapshot(&Snapshot{
		DropDays: []DaysBefore{{Website: 1, Date: 5}, {Website: 3, Date: minDate}},
		Days:     []DayRecord{{Website: 1, Date: 3, Data: []byte("d3 again")}},
		Sites:    []SiteRecord{{Website: 1, Data: []byte("meta")}},
	}))
	if diff := cmp.Diff([]day{{3, "d3 again"}, {5, "d5"}}, days(t, s, 1, minDate, maxDate)); diff != "" {
		t.Errorf("website 1 mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]day{{3, "w2"}}, days(t, s, 2, minDate, maxDate)); diff != "" {
		t.Errorf("website 2 mismatch (-want +got):\n%s", diff)
	}
	err := s.DaysWithParts(1, 4, 4, nil, func(d int32, data []byte, parts [][]byte) error {
		t.Errorf("day %d after the drop: %q, parts %q", d, data, parts)
		return nil
	})
	must(t, err)
}

// TestScanPanicClosesIterator checks that a callback's panic, recovered by
// the caller, leaves no iterator open: Pebble's Close would panic on one.
func TestScanPanicClosesIterator(t *testing.T) {
	s, err := Open(&Options{FS: NewMemFS(), Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteSnapshot(&Snapshot{Days: []DayRecord{{Website: 1, Date: 10, Data: []byte("day")}}}); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != "decoding" {
				t.Errorf("recovered %v, want the callback's panic", r)
			}
		}()
		s.Days(1, 0, 20, func(int32, []byte) error { panic("decoding") })
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
