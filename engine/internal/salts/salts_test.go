package salts

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webstats/webstats/buckets"
)

func TestPeriod(t *testing.T) {
	d := func(y int, m time.Month, day int) buckets.Date { return buckets.DateOf(y, m, day) }
	for _, tt := range []struct {
		p          Period
		date       buckets.Date
		start, end buckets.Date
	}{
		{Day, d(2026, 3, 5), d(2026, 3, 5), d(2026, 3, 5)},
		{Week, d(2026, 3, 5), d(2026, 3, 2), d(2026, 3, 8)},     // a Thursday
		{Week, d(2026, 3, 2), d(2026, 3, 2), d(2026, 3, 8)},     // a Monday
		{Week, d(2026, 1, 1), d(2025, 12, 29), d(2026, 1, 4)},   // across a year
		{Week, d(1969, 12, 31), d(1969, 12, 29), d(1970, 1, 4)}, // before day 0
		{Month, d(2024, 2, 29), d(2024, 2, 1), d(2024, 2, 29)},
		{Month, d(2026, 12, 31), d(2026, 12, 1), d(2026, 12, 31)},
	} {
		start := tt.p.Start(tt.date)
		if end := tt.p.End(start); start != tt.start || end != tt.end {
			t.Errorf("period %d of %s: %s to %s, want %s to %s", tt.p, tt.date, start, end, tt.start, tt.end)
		}
	}
}

// TestHash: the explicit visitor string replaces IP and user agent; an
// IPv4-mapped address is its IPv4 address; salt and website matter.
func TestHash(t *testing.T) {
	s := Salt{1, 2, 3}
	ip4, mapped := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("::ffff:192.0.2.1")
	base := Hash(s, 1, "", ip4, "UA")
	for _, tt := range []struct {
		name string
		got  uint64
		same bool
	}{
		{"mapped", Hash(s, 1, "", mapped, "UA"), true},
		{"visitor string", Hash(s, 1, "v", ip4, "UA"), false},
		{"visitor string ignores IP", Hash(s, 1, "v", mapped, "other"), false},
		{"other agent", Hash(s, 1, "", ip4, "UA2"), false},
		{"other website", Hash(s, 2, "", ip4, "UA"), false},
		{"other salt", Hash(Salt{9}, 1, "", ip4, "UA"), false},
	} {
		if (tt.got == base) != tt.same {
			t.Errorf("%s: same hash %v, want %v", tt.name, tt.got == base, tt.same)
		}
	}
	if Hash(s, 1, "v", ip4, "UA") != Hash(s, 1, "v", mapped, "other") {
		t.Error("a visitor string's hash depends on IP or user agent")
	}
}

// TestBoxGet: concurrent callers of a period share one make; a failed or
// panicking make is not kept, and the next caller makes again.
func TestBoxGet(t *testing.T) {
	var b Box
	ctx := context.Background()
	var makes atomic.Int32
	release := make(chan struct{})
	mk := func() (Salt, error) {
		makes.Add(1)
		<-release
		return Salt{7}, nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if s, err := b.Get(ctx, 100, mk); s != (Salt{7}) || err != nil {
				t.Errorf("Get = %v, %v", s, err)
			}
		})
	}
	close(release)
	wg.Wait()
	if n := makes.Load(); n != 1 {
		t.Errorf("%d makes, want 1", n)
	}
	fail := errors.New("store full")
	if _, err := b.Get(ctx, 200, func() (Salt, error) { return Salt{}, fail }); !errors.Is(err, fail) {
		t.Errorf("failing make: %v", err)
	}
	if _, err := b.Get(ctx, 200, func() (Salt, error) { panic("no randomness") }); err == nil {
		t.Error("panicking make: no error")
	}
	if s, err := b.Get(ctx, 200, func() (Salt, error) { return Salt{8}, nil }); s != (Salt{8}) || err != nil {
		t.Errorf("make after failures = %v, %v", s, err)
	}
}

func TestBoxEndedDrop(t *testing.T) {
	var b Box
	for _, first := range []buckets.Date{0, 7, 14} {
		b.Set(first, Salt{byte(first)})
	}
	got := b.Ended(Week, 14)
	slices.Sort(got)
	if !slices.Equal(got, []buckets.Date{0, 7}) {
		t.Errorf("Ended(Week, 14) = %v, want [0 7]", got)
	}
	deleted := false
	b.Drop(7, func() { deleted = true })
	if got := b.Ended(Week, 14); !deleted || len(got) != 1 || got[0] != 0 {
		t.Errorf("after Drop(7): Ended = %v, deleted %v", got, deleted)
	}
	made := false
	if s, _ := b.Get(context.Background(), 7, func() (Salt, error) { made = true; return Salt{1}, nil }); !made || s != (Salt{1}) {
		t.Error("a dropped salt was not made again")
	}
}

func TestParsePeriod(t *testing.T) {
	for _, p := range []Period{Day, Week, Month} {
		if got, ok := ParsePeriod(p.String()); !ok || got != p {
			t.Errorf("ParsePeriod(%q) = %v, %v", p.String(), got, ok)
		}
	}
	if p, ok := ParsePeriod(""); !ok || p != Day {
		t.Errorf(`ParsePeriod("") = %v, %v; want day`, p, ok)
	}
	if _, ok := ParsePeriod("year"); ok {
		t.Error(`ParsePeriod("year") is ok`)
	}
}
