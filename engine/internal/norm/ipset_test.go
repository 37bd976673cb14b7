package norm

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseIPSet(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
		wantLen int
	}{
		{name: "empty", in: "", wantLen: 0},
		{name: "blank lines", in: "\n  \r\n\t\n", wantLen: 0},
		{name: "mixed", in: "10.0.0.1\n192.168.0.0/16\r\n\n2001:db8::/32\n::1\n", wantLen: 4},
		{name: "duplicates", in: "10.0.0.1\n10.0.0.1/32\n::ffff:10.0.0.1", wantLen: 1},
		{name: "host bits masked", in: "10.1.2.3/8\n10.0.0.0/8", wantLen: 1},
		{name: "bad address", in: "10.0.0.1\n\n10.0.0.300\n", wantErr: `line 3: "10.0.0.300" is not an IP address or CIDR`},
		{name: "bad prefix length", in: "10.0.0.0/33", wantErr: `line 1: "10.0.0.0/33" is not an IP address or CIDR`},
		{name: "bad IPv6 prefix length", in: "::/129", wantErr: `line 1: "::/129" is not an IP address or CIDR`},
		{name: "host name", in: " example.com ", wantErr: `line 1: "example.com" is not an IP address or CIDR`},
		{name: "zone", in: "fe80::1%eth0", wantErr: `line 1: "fe80::1%eth0" is not an IP address or CIDR`},
		{name: "range", in: "10.0.0.1-10.0.0.9", wantErr: `line 1: "10.0.0.1-10.0.0.9" is not an IP address or CIDR`},
		{name: "bracketed", in: "[::1]", wantErr: `line 1: "[::1]" is not an IP address or CIDR`},
		{name: "first error reported", in: "x\ny", wantErr: `line 1: "x" is not an IP address or CIDR`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseIPSet(tt.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Fatalf("error mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLen, s.Len()); diff != "" {
				t.Errorf("Len mismatch (-want +got):\n%s", diff)
			}
			if s.Empty() != (tt.wantLen == 0) {
				t.Errorf("Empty() = %v", s.Empty())
			}
		})
	}
}

func TestIPSetContains(t *testing.T) {
	set, err := ParseIPSet("10.0.0.0/8\n192.168.1.7\n172.16.0.0/12\n2001:db8::/32\n2a00:1450::1\n::ffff:100.64.0.0/106\n")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ip   string
		want bool
	}{
		{ip: "10.0.0.1", want: true},
		{ip: "10.255.255.255", want: true},
		{ip: "11.0.0.1", want: false},
		{ip: "192.168.1.7", want: true},
		{ip: "192.168.1.8", want: false},
		{ip: "172.31.255.255", want: true},
		{ip: "172.32.0.0", want: false},
		{ip: "100.64.0.1", want: true},
		{ip: "100.127.255.255", want: true},
		{ip: "100.128.0.0", want: false},
		{ip: "::ffff:10.1.2.3", want: true},
		{ip: "::ffff:192.168.1.7", want: true},
		{ip: "::ffff:8.8.8.8", want: false},
		{ip: "2001:db8::1", want: true},
		{ip: "2001:db8:ffff::1", want: true},
		{ip: "2001:db9::1", want: false},
		{ip: "2a00:1450::1", want: true},
		{ip: "2a00:1450::2", want: false},
		{ip: "2001:db8::1%eth0", want: true},
		{ip: "::a00:1", want: false}, // IPv4-compatible, not mapped
		{ip: "8.8.8.8", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, set.Contains(netip.MustParseAddr(tt.ip))); diff != "" {
				t.Errorf("Contains(%s) mismatch (-want +got):\n%s", tt.ip, diff)
			}
		})
	}
	t.Run("invalid addr", func(t *testing.T) {
		if set.Contains(netip.Addr{}) {
			t.Error("zero Addr contained")
		}
	})
	t.Run("zero set", func(t *testing.T) {
		var zero IPSet
		if zero.Contains(netip.MustParseAddr("10.0.0.1")) || !zero.Empty() {
			t.Error("zero IPSet not empty")
		}
	})
	t.Run("catch-all", func(t *testing.T) {
		all, err := ParseIPSet("0.0.0.0/0\n::/0")
		if err != nil {
			t.Fatal(err)
		}
		for _, ip := range []string{"1.2.3.4", "::1", "::ffff:1.2.3.4"} {
			if !all.Contains(netip.MustParseAddr(ip)) {
				t.Errorf("%s not in 0.0.0.0/0, ::/0", ip)
			}
		}
	})
}
