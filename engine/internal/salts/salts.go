package salts

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"

	"github.com/dchest/siphash"
	"github.com/webstats/webstats/buckets"
)

// Period is how long a salt lives. Periods start at local midnight, on
// Monday, or on the 1st, so a local day never spans two periods.
type Period uint8

// The periods.
const (
	Day Period = iota
	Week
	Month
)

// ParsePeriod parses "day" (or ""), "week" or "month".
func ParsePeriod(s string) (Period, bool) {
	switch s {
	case "day", "":
		return Day, true
	case "week":
		return Week, true
	case "month":
		return Month, true
	}
	return 0, false
}

// String returns "day", "week" or "month".
func (p Period) String() string {
	switch p {
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return "day"
}

// Start returns the first day of the period holding date.
func (p Period) Start(date buckets.Date) buckets.Date {
	switch p {
	case Week:
		return date - buckets.Date((int(date.Weekday())+6)%7)
	case Month:
		y, m, _ := date.Civil()
		return buckets.DateOf(y, m, 1)
	}
	return date
}

// End returns the last day of the period starting on first.
func (p Period) End(first buckets.Date) buckets.Date {
	switch p {
	case Week:
		return first + 6
	case Month:
		y, m, _ := first.Civil()
		return buckets.DateOf(y, m+1, 1) - 1
	}
	return first
}

// Salt is the secret of a period's visitor hashes.
type Salt = [16]byte

// ID is the id a salt is stored under (snapshot.KindSalt): its period's
// first day.
func ID(first buckets.Date) uint64 { return uint64(uint32(first)) }

// Hash is the salted SipHash-2-4 of website ‖ IP ‖ user agent, or of
// website ‖ the explicit visitor string when it is not "".
func Hash(salt Salt, website uint32, visitor string, ip netip.Addr, userAgent string) uint64 {
	k0 := binary.LittleEndian.Uint64(salt[:8])
	k1 := binary.LittleEndian.Uint64(salt[8:])
	var arr [512]byte
	b := binary.LittleEndian.AppendUint32(arr[:0], website)
	if visitor != "" {
		b = append(b, 1)
		b = append(b, visitor...)
	} else {
		ip := ip.Unmap().As16()
		b = append(b, 0)
		b = append(b, ip[:]...)
		b = append(b, userAgent...)
	}
	return siphash.Hash(k0, k1, b)
}

// Box holds the salts of periods, by their first day. The zero Box is
// empty and ready to use; it is safe for concurrent use.
type Box struct {
	mu sync.RWMutex
	m  map[buckets.Date]Salt
	// making holds the salts being made: a caller that needs one waits
	// for it without holding mu, so the other periods' lookups go on
	// meanwhile.
	making map[buckets.Date]*call
}

// call is a salt being made; done is closed when s and err are set.
type call struct {
	done chan struct{}
	s    Salt
	err  error
}

// Set sets the salt of the period starting on first (read from the
// store).
func (b *Box) Set(first buckets.Date, s Salt) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[buckets.Date]Salt)
	}
	b.m[first] = s
}

// Get returns the salt of the period starting on first, calling mk the
// first time (once, whoever asks meanwhile) and keeping what it returns
// unless it fails. A caller waiting for another's mk gives up when ctx
// ends. An mk that panics fails with the panic.
func (b *Box) Get(ctx context.Context, first buckets.Date, mk func() (Salt, error)) (Salt, error) {
	b.mu.RLock()
	s, ok := b.m[first]
	b.mu.RUnlock()
	if ok {
		return s, nil
	}
	b.mu.Lock()
	if s, ok := b.m[first]; ok {
		b.mu.Unlock()
		return s, nil
	}
	if c, ok := b.making[first]; ok {
		b.mu.Unlock()
		select {
		case <-c.done:
			return c.s, c.err
		case <-ctx.Done():
			return Salt{}, ctx.Err()
		}
	}
	c := &call{done: make(chan struct{})}
	if b.making == nil {
		b.making = make(map[buckets.Date]*call)
	}
	b.making[first] = c
	b.mu.Unlock()

	b.finish(first, c, mk)
	return c.s, c.err
}

// finish makes the salt of c and hands it to its waiters, also when mk
// panics: they must wake, with an error.
func (b *Box) finish(first buckets.Date, c *call, mk func() (Salt, error)) {
	defer func() {
		if r := recover(); r != nil {
			c.s, c.err = Salt{}, fmt.Errorf("engine: new salt: %v", r)
		}
		b.mu.Lock()
		if c.err == nil {
			if b.m == nil {
				b.m = make(map[buckets.Date]Salt)
			}
			b.m[first] = c.s
		}
		delete(b.making, first)
		b.mu.Unlock()
		close(c.done)
	}()
	c.s, c.err = mk()
}

// Ended returns the first days of the periods of p whose salts b holds and
// that ended before cut.
func (b *Box) Ended(p Period, cut buckets.Date) []buckets.Date {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []buckets.Date
	for first := range b.m {
		if p.End(first) < cut {
			out = append(out, first)
		}
	}
	return out
}

// Drop forgets the salt of the period starting on first, and calls del
// (which deletes it from the store) before any caller can make it again.
func (b *Box) Drop(first buckets.Date, del func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, first)
	del()
}
