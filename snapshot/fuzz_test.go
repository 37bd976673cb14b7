package snapshot

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// FuzzKeys feeds random bytes to every key decoder: none panics, every
// failure is ErrCorrupt, and every success re-encodes to the same bytes.
func FuzzKeys(f *testing.F) {
	for _, k := range [][]byte{
		registryKey(KindWebsite, 7), logKey(42), dayKey(3, -5), stringsKey(3, 100),
		stateKey(3, 9), chunkKey(3, -9, 2), partKey(3, -5, 1), siteKey(3), versionKey, trimKey, {}, {prefixWebsite}, {0xff},
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		check := func(name string, err error, re []byte) {
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: %v is not ErrCorrupt", name, err)
				}
				return
			}
			if !bytes.Equal(re, key) {
				t.Fatalf("%s: %x re-encodes to %x", name, key, re)
			}
		}
		k, id, err := parseRegistryKey(key)
		check("registry", err, registryKey(k, id))
		seq, err := parseLogKey(key)
		check("log", err, logKey(seq))
		w, d, err := parseDayKey(key)
		check("day", err, dayKey(w, d))
		w, from, err := parseStringsKey(key)
		check("strings", err, stringsKey(w, from))
		w, p, err := parseStateKey(key)
		check("state", err, stateKey(w, p))
		w, p, c, err := parseChunkKey(key)
		check("chunk", err, chunkKey(w, p, c))
		w, d, c, err = parsePartKey(key)
		check("day part", err, partKey(w, d, c))
		w, err = parseSiteKey(key)
		check("site", err, siteKey(w))
	})
}

// FuzzMeta feeds random bytes to the format version and trim point decoders.
func FuzzMeta(f *testing.F) {
	f.Add(encodeUint64(1))
	f.Add(encodeUint64(0))
	f.Add([]byte("v1"))
	f.Fuzz(func(t *testing.T, val []byte) {
		for name, dec := range map[string]func([]byte) (uint64, error){"version": decodeVersion, "trim": decodeTrim} {
			v, err := dec(val)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: %v is not ErrCorrupt", name, err)
				}
				continue
			}
			if !bytes.Equal(encodeUint64(v), val) {
				t.Fatalf("%s: %x decodes to %d", name, val, v)
			}
		}
	})
}

func TestKeyOrder(t *testing.T) {
	// Byte order of keys is numeric order, negative dates first.
	dates := []int32{-2147483648, -1000, -1, 0, 1, 1000, 2147483647}
	for i := 1; i < len(dates); i++ {
		if bytes.Compare(dayKey(1, dates[i-1]), dayKey(1, dates[i])) >= 0 {
			t.Errorf("day key of %d does not sort before %d", dates[i-1], dates[i])
		}
	}
	if bytes.Compare(logKey(255), logKey(256)) >= 0 {
		t.Error("log keys out of order")
	}
	if bytes.Compare(prefixEnd(websitePrefix(1)), websitePrefix(2)) != 0 {
		t.Error("prefixEnd of website 1 is not website 2's prefix")
	}
	if got := prefixEnd([]byte{0xff, 0xff}); got != nil {
		t.Errorf("prefixEnd(ffff) = %x, want nil", got)
	}
}

func TestChunkKeys(t *testing.T) {
	t.Run("round trip", func(t *testing.T) {
		for _, tc := range []struct {
			website uint32
			period  int32
			chunk   uint32
		}{
			{website: 0, period: 0, chunk: 0},
			{website: 1, period: -1, chunk: 1},
			{website: 7, period: 20000, chunk: 255},
			{website: math.MaxUint32, period: math.MinInt32, chunk: math.MaxUint32},
			{website: 3, period: math.MaxInt32, chunk: 0},
		} {
			w, p, c, err := parseChunkKey(chunkKey(tc.website, tc.period, tc.chunk))
			if err != nil || w != tc.website || p != tc.period || c != tc.chunk {
				t.Errorf("chunkKey(%d, %d, %d) parses as %d, %d, %d, %v", tc.website, tc.period, tc.chunk, w, p, c, err)
			}
		}
	})
	t.Run("order", func(t *testing.T) {
		// By website, then period (negative first), then chunk.
		keys := [][]byte{
			chunkKey(1, math.MinInt32, 0), chunkKey(1, -1, 0), chunkKey(1, -1, 1), chunkKey(1, -1, math.MaxUint32),
			chunkKey(1, 0, 0), chunkKey(1, 1, 0), chunkKey(1, 1, 256), chunkKey(1, math.MaxInt32, math.MaxUint32),
			chunkKey(2, math.MinInt32, 0),
		}
		for i := 1; i < len(keys); i++ {
			if bytes.Compare(keys[i-1], keys[i]) >= 0 {
				t.Errorf("key %d (%x) does not sort before key %d (%x)", i-1, keys[i-1], i, keys[i])
			}
		}
		// A period's range holds its chunks and ends before the next period.
		for _, p := range []int32{math.MinInt32, -1, 0, 1, math.MaxInt32 - 1} {
			end := prefixEnd(chunkPeriodPrefix(1, p))
			if bytes.Compare(chunkKey(1, p, math.MaxUint32), end) >= 0 || bytes.Compare(end, chunkKey(1, p+1, 0)) > 0 {
				t.Errorf("period %d: range end %x is not between its last chunk and the next period", p, end)
			}
		}
	})
	t.Run("no overlap", func(t *testing.T) {
		// The chunk sub-family lies inside the website's prefix (DeleteWebsite
		// removes it) and outside the day, strings and state ranges.
		lo, hi := websiteSubPrefix(9, subChunk), prefixEnd(websiteSubPrefix(9, subChunk))
		for _, k := range [][]byte{chunkKey(9, math.MinInt32, 0), chunkKey(9, math.MaxInt32, math.MaxUint32)} {
			if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
				t.Errorf("chunk key %x outside [%x, %x)", k, lo, hi)
			}
			if !bytes.HasPrefix(k, websitePrefix(9)) {
				t.Errorf("chunk key %x outside website 9's prefix", k)
			}
		}
		for _, sub := range []byte{subDay, subStrings, subState} {
			p := websiteSubPrefix(9, sub)
			if bytes.Compare(prefixEnd(p), lo) > 0 {
				t.Errorf("sub-family %d's range [%x, %x) overlaps chunks from %x", sub, p, prefixEnd(p), lo)
			}
			for _, k := range [][]byte{dayKey(9, math.MaxInt32), stringsKey(9, math.MaxUint32), stateKey(9, math.MaxInt32)} {
				if _, _, _, err := parseChunkKey(k); err == nil {
					t.Errorf("%x parses as a chunk key", k)
				}
			}
		}
		if _, _, err := parseStateKey(chunkKey(9, 1, 1)); err == nil {
			t.Error("a chunk key parses as a state key")
		}
	})
}
