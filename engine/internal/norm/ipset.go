package norm

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// IPSet is a parsed exclude_ips setting (SPEC §2.4): IPv4 and IPv6 addresses
// and CIDR prefixes. The zero value is an empty set. An IPSet is immutable
// and safe for concurrent use; copies share their storage.
type IPSet struct {
	// v4 holds the IPv4 entries (a single address as a /32, IPv4-mapped
	// IPv6 entries as IPv4) keyed by v4Key of their masked address and
	// length; v6 the IPv6 entries likewise. Keys of plain integers hash
	// much faster than netip.Prefix.
	v4 map[uint64]struct{}
	v6 map[v6Key]struct{}
	// bits4 and bits6 are the distinct prefix lengths of the IPv4 and IPv6
	// entries, longest first: Contains does one map lookup per length.
	bits4, bits6 []uint8
}

// v6Key is a masked IPv6 address and its prefix length.
type v6Key struct {
	hi, lo uint64
	bits   uint64
}

// v4Key returns the key of the /bits prefix holding the IPv4 address a.
func v4Key(a uint32, bits uint8) uint64 {
	if bits < 32 {
		a &^= 1<<(32-bits) - 1
	}
	return uint64(a)<<8 | uint64(bits)
}

// key6 returns the key of the /bits prefix holding the IPv6 address hi:lo.
func key6(hi, lo uint64, bits uint8) v6Key {
	switch {
	case bits == 0:
		hi, lo = 0, 0
	case bits < 64:
		hi &^= 1<<(64-bits) - 1
		lo = 0
	case bits < 128:
		lo &^= 1<<(128-bits) - 1
	}
	return v6Key{hi: hi, lo: lo, bits: uint64(bits)}
}

func split6(ip netip.Addr) (hi, lo uint64) {
	b := ip.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// ParseIPSet parses an exclude_ips setting: one IP address ("10.0.0.1",
// "2001:db8::1") or CIDR prefix ("10.0.0.0/8", "2001:db8::/32") per line,
// surrounding white space and blank lines ignored. Host bits of a prefix are
// ignored ("10.0.0.1/8" is "10.0.0.0/8"); IPv4-mapped IPv6 entries
// ("::ffff:10.0.0.1", "::ffff:10.0.0.0/104") are their IPv4 equivalent. An
// address with a zone ("fe80::1%eth0") is invalid.
//
// The error names the first invalid line, 1-based:
// `line 3: "10.0.0.300" is not an IP address or CIDR`.
func ParseIPSet(s string) (IPSet, error) {
	var set IPSet
	for n, rest := 1, s; rest != ""; n++ {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		p, ok := parseIPLine(line)
		if !ok {
			return IPSet{}, fmt.Errorf("line %d: %q is not an IP address or CIDR", n, line)
		}
		bits := uint8(p.Bits())
		if a := p.Addr(); a.Is4() {
			if set.v4 == nil {
				set.v4 = make(map[uint64]struct{})
			}
			set.v4[v4Key(binary.BigEndian.Uint32(a.AsSlice()), bits)] = struct{}{}
			if !slices.Contains(set.bits4, bits) {
				set.bits4 = append(set.bits4, bits)
			}
		} else {
			if set.v6 == nil {
				set.v6 = make(map[v6Key]struct{})
			}
			hi, lo := split6(a)
			set.v6[key6(hi, lo, bits)] = struct{}{}
			if !slices.Contains(set.bits6, bits) {
				set.bits6 = append(set.bits6, bits)
			}
		}
	}
	slices.SortFunc(set.bits4, func(a, b uint8) int { return int(b) - int(a) })
	slices.SortFunc(set.bits6, func(a, b uint8) int { return int(b) - int(a) })
	return set, nil
}

// parseIPLine parses one entry into a prefix.
func parseIPLine(line string) (netip.Prefix, bool) {
	if strings.IndexByte(line, '/') < 0 {
		addr, err := netip.ParseAddr(line)
		if err != nil || addr.Zone() != "" {
			return netip.Prefix{}, false
		}
		addr = addr.Unmap()
		return netip.PrefixFrom(addr, addr.BitLen()), true
	}
	p, err := netip.ParsePrefix(line)
	if err != nil {
		return netip.Prefix{}, false
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p, true
}

// Contains reports whether ip is in the set. An IPv4-mapped IPv6 address
// ("::ffff:10.0.0.1", as a dual-stack listener reports IPv4 clients) is
// treated as the IPv4 address, and a zone is ignored. The invalid Addr is in
// no set.
func (s IPSet) Contains(ip netip.Addr) bool {
	switch {
	case ip.Is4() || ip.Is4In6():
		if len(s.v4) == 0 {
			return false
		}
		b := ip.As16()
		a := binary.BigEndian.Uint32(b[12:])
		for _, bits := range s.bits4 {
			if _, ok := s.v4[v4Key(a, bits)]; ok {
				return true
			}
		}
	case ip.Is6():
		if len(s.v6) == 0 {
			return false
		}
		hi, lo := split6(ip)
		for _, bits := range s.bits6 {
			if _, ok := s.v6[key6(hi, lo, bits)]; ok {
				return true
			}
		}
	}
	return false
}

// Empty reports whether the set has no entries.
func (s IPSet) Empty() bool {
	return s.Len() == 0
}

// Len returns the number of distinct entries (after masking and unmapping).
func (s IPSet) Len() int {
	return len(s.v4) + len(s.v6)
}
