package snapshot

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestUsage: every family's keys and values are summed where they belong,
// and a day's value is split where split says.
func TestUsage(t *testing.T) {
	s, _ := memStore(t)
	var want Usage
	set := func(sum *int64, key []byte, val string) {
		t.Helper()
		if err := s.db.Set(key, []byte(val), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		*sum += int64(len(key) + len(val))
	}
	set(&want.Registry, registryKey(KindAccount, 7), "an account")
	set(&want.Log, logKey(3), "a log entry")
	set(&want.Sites, siteKey(2), "a site")
	set(&want.Strings, stringsKey(2, 0), "strings")
	set(&want.State, stateKey(2, 5), "old state")
	set(&want.State, chunkKey(2, 5, 1), "a chunk")
	set(&want.Parts, partKey(2, 100, 0), "a part of a day")
	var day int64
	set(&day, dayKey(2, 100), "BBBB|segments") // split: the 8 bytes after '|'
	set(&day, dayKey(3, -4), "BBBB")           // split: none
	want.DaySegments, want.Days = 8, day-8

	u, err := s.Usage(context.Background(), func(v []byte) int {
		for i, c := range v {
			if c == '|' {
				return len(v) - i - 1
			}
		}
		return 0
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Meta <= 0 {
		t.Errorf("the format version's key was not counted: %+v", u)
	}
	u.Meta = 0
	if u != want {
		t.Errorf("usage %+v, want %+v", u, want)
	}
}

// TestUsageStops: a done context stops the scan.
func TestUsageStops(t *testing.T) {
	s, _ := memStore(t)
	for i := range 10_000 {
		if err := s.db.Set(logKey(uint64(i)), []byte("entry"), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Usage(ctx, func([]byte) int { return 0 }); err != context.Canceled {
		t.Errorf("Usage with a cancelled context: %v", err)
	}
}
