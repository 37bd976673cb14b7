package snapshot

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzKeys feeds random bytes to every key decoder: none panics, every
// failure is ErrCorrupt, and every success re-encodes to the same bytes.
func FuzzKeys(f *testing.F) {
	for _, k := range [][]byte{
		registryKey(KindWebsite, 7), logKey(42), dayKey(3, -5), stringsKey(3, 100),
		stateKey(3, 9), siteKey(3), versionKey, trimKey, {}, {prefixWebsite}, {0xff},
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
