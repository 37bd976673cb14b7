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

// TestMaxKeys (#38): past MaxKeys a new key is limited like any other (the
// bound never lets requests through untracked), and the least recently
// used key is the one forgotten, so a key being hammered stays limited.
func TestMaxKeys(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	l := New(2, func() time.Time { return now })
	l.maxKeys = 3
	for _, k := range []string{"a", "a", "b", "c"} {
		if ok, _, _ := l.Take(k); !ok {
			t.Fatalf("Take(%s) refused within the burst", k)
		}
	}
	if ok, _, _ := l.Take("a"); ok {
		t.Fatal("a's third take within a minute passed")
	}
	// The map is full (a, b, c; a used last): new keys evict b, then c.
	for i, k := range []string{"x", "y"} {
		for n := range 3 {
			ok, _, _ := l.Take(k)
			if want := n < 2; ok != want {
				t.Errorf("new key %s past MaxKeys, take %d: ok %v, want %v", k, n+1, ok, want)
			}
		}
		if got := l.Overflow(); got != int64(i+1) {
			t.Errorf("evictions %d, want %d", got, i+1)
		}
	}
	if ok, _, _ := l.Take("a"); ok {
		t.Error("a, used more recently than b and c, was forgotten")
	}
	if len(l.buckets) != 3 || l.lru.Len() != 3 {
		t.Errorf("%d buckets, %d in the LRU list; want 3", len(l.buckets), l.lru.Len())
	}
}
