package limit

import (
	"net/netip"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := New(3, func() time.Time { return now })
	for i := range 3 {
		if ok, rem, _ := l.Take("a"); !ok || rem != 2-i {
			t.Fatalf("take %d: ok %v remaining %d", i, ok, rem)
		}
	}
	ok, _, wait := l.Take("a")
	if ok || wait != 20*time.Second {
		t.Errorf("4th take: ok %v wait %v, want false 20s", ok, wait)
	}
	if wait, blocked := l.Blocked("a"); !blocked || wait != 20*time.Second {
		t.Errorf("Blocked = %v %v, want 20s true", wait, blocked)
	}
	if _, blocked := l.Blocked("b"); blocked {
		t.Error("an unseen key is blocked")
	}
	l.Refund("a")
	if ok, _, _ := l.Take("a"); !ok {
		t.Error("a refunded token cannot be taken")
	}
	l.Refund("a")
	l.Refund("a")
	l.Refund("a")
	l.Refund("a")
	if ok, rem, _ := l.Take("a"); !ok || rem != 2 {
		t.Errorf("refunds past the burst: remaining %d after a take, want 2", rem)
	}
	now = now.Add(time.Minute)
	if ok, rem, _ := l.Take("a"); !ok || rem != 2 {
		t.Errorf("after a minute: ok %v remaining %d", ok, rem)
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":          "192.0.2.1",
		"2001:db8:1:2:3::4":  "2001:db8:1:2::/64",
		"2001:db8:1:2:ff::9": "2001:db8:1:2::/64",
	} {
		if got := ClientKey(netip.MustParseAddr(in)); got != want {
			t.Errorf("ClientKey(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestUsed: a key is used while a token taken from it has not refilled.
func TestUsed(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := New(6, func() time.Time { return now })
	if l.Used("a") {
		t.Error("an unseen key is used")
	}
	l.Take("a")
	if !l.Used("a") {
		t.Error("a key with a token taken is not used")
	}
	now = now.Add(10 * time.Second) // 6 a minute: one back
	if l.Used("a") {
		t.Error("a key refilled is still used")
	}
}
