package ua

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

func cached(p *Parser, s string) bool {
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		_, ok := sh.index[s]
		sh.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

func TestCacheEviction(t *testing.T) {
	p := New(3) // small sizes use one shard: exact LRU order
	for _, s := range []string{"a", "b", "c"} {
		p.Parse(s)
	}
	p.Parse("a") // a is now the most recent; b the least
	p.Parse("d")
	for s, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if got := cached(p, s); got != want {
			t.Errorf("cached(%q) = %v, want %v", s, got, want)
		}
	}
	if n := p.len(); n != 3 {
		t.Errorf("len = %d, want 3", n)
	}
	p.Parse("e") // evicts c
	if cached(p, "c") || !cached(p, "e") {
		t.Errorf("after e: c cached %v, e cached %v; want false, true", cached(p, "c"), cached(p, "e"))
	}
}

func TestCacheSizes(t *testing.T) {
	for _, size := range []int{-1, 0, 1, 2, 63, 64, 100, 4096, 10007} {
		p := New(size)
		want := size
		if size <= 0 {
			want = DefaultCacheSize
		}
		total := 0
		for i := range p.shards {
			c := cap(p.shards[i].entries)
			if c < 1 {
				t.Errorf("New(%d): shard %d has capacity %d", size, i, c)
			}
			total += c
		}
		if total != want {
			t.Errorf("New(%d): total capacity %d, want %d", size, total, want)
		}
	}
}

func TestCacheLongAgent(t *testing.T) {
	p := New(10)
	long := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) " + strings.Repeat("x", MaxCachedLen) + " Chrome/131.0.0.0 Safari/537.36"
	want := parse(long)
	if got := p.Parse(long); got != want {
		t.Errorf("Parse(long) = %+v, want %+v", got, want)
	}
	if p.len() != 0 {
		t.Errorf("a %d-byte agent was cached", len(long))
	}
}

// TestCacheFlood sends 100k distinct agents through a small cache.
func TestCacheFlood(t *testing.T) {
	const size = 1000
	p := New(size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100_000 {
		s := fmt.Sprintf("Mozilla/5.0 (X11; Linux x86_64) Chrome/%d.%d Safari/537.36", i, r.Uint32())
		p.Parse(s)
		if i%10_000 == 0 && p.len() > size {
			t.Fatalf("after %d agents the cache holds %d > %d", i+1, p.len(), size)
		}
	}
	if n := p.len(); n != size {
		t.Errorf("len = %d, want %d", n, size)
	}
	// The list and the index agree in every shard.
	for i := range p.shards {
		sh := &p.shards[i]
		n := 0
		for e := sh.head; e >= 0; e = sh.entries[e].next {
			if j, ok := sh.index[sh.entries[e].key]; !ok || j != e {
				t.Fatalf("shard %d: entry %d not indexed", i, e)
			}
			n++
		}
		if n != len(sh.index) {
			t.Fatalf("shard %d: list has %d entries, index %d", i, n, len(sh.index))
		}
	}
}

// TestCacheConcurrent is meant for -race: many goroutines share hot and
// cold agents.
func TestCacheConcurrent(t *testing.T) {
	p := New(128)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				tt := parseTests[(g+i)%len(parseTests)]
				if got := withoutVersions(p.Parse(tt.ua)); got != tt.want {
					t.Errorf("Parse(%q) = %+v, want %+v", tt.ua, got, tt.want)
					return
				}
				p.Parse(fmt.Sprintf("curl/%d.%d", g, i))
			}
		}()
	}
	wg.Wait()
	if n := p.len(); n > 128 {
		t.Errorf("len = %d > 128", n)
	}
}

func BenchmarkParse(b *testing.B) {
	agents := make([]string, len(parseTests))
	for i, tt := range parseTests {
		agents[i] = tt.ua
	}
	b.Run("cache=hit", func(b *testing.B) {
		p := New(0)
		for _, s := range agents {
			p.Parse(s)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			p.Parse(agents[i%len(agents)])
			i++
		}
	})
	b.Run("cache=miss", func(b *testing.B) {
		p := New(16) // far smaller than the agents cycled through
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			p.Parse(agents[i%len(agents)])
			i++
		}
	})
	b.Run("cache=hit/parallel", func(b *testing.B) {
		p := New(0)
		for _, s := range agents {
			p.Parse(s)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				p.Parse(agents[i%len(agents)])
				i++
			}
		})
	})
}

// BenchmarkBotMatch compares the compiled matcher with a loop of
// strings.Contains over the lower-cased agent.
func BenchmarkBotMatch(b *testing.B) {
	s := parseTests[0].ua // a human: every token is tried
	b.Run("impl=automaton", func(b *testing.B) {
		for b.Loop() {
			botMatcher.match(s)
		}
	})
	b.Run("impl=contains", func(b *testing.B) {
		for b.Loop() {
			ls := strings.ToLower(s)
			for _, tok := range botTokens {
				if strings.Contains(ls, tok) {
					break
				}
			}
		}
	})
}
