package snapshot

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAppend measures the write-ahead log: W goroutines each append one
// ~150-byte entry per call, on a real directory. entries/s is the
// throughput; with writers=1, ns/op is the latency of a lone synced Append
// (p50-µs and p99-µs give its distribution).
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name    string
		writers int
		noSync  bool
		noQueue bool // Pebble's commit pipeline alone, for comparison
	}{
		{name: "writers=1", writers: 1},
		{name: "writers=64", writers: 64},
		{name: "writers=64/queue=off", writers: 64, noQueue: true},
		{name: "writers=64/nosync", writers: 64, noSync: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			useCommitQueue = !bc.noQueue
			defer func() { useCommitQueue = true }()
			s, err := Open(&Options{Dir: b.TempDir(), NoSync: bc.noSync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			data := make([]byte, 150)
			for i := range data {
				data[i] = byte('a' + i%26)
			}
			var seq, left atomic.Int64
			left.Store(int64(b.N))
			lat := make([][]time.Duration, bc.writers)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for w := range bc.writers {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						t0 := time.Now()
						if err := s.Append(LogEntry{Seq: uint64(seq.Add(1)), Data: data}); err != nil {
							b.Error(err)
							return
						}
						if bc.writers == 1 {
							lat[w] = append(lat[w], time.Since(t0))
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "entries/s")
			if s.commits != nil {
				b.ReportMetric(float64(b.N)/float64(s.commits.commits.Load()), "entries/sync")
			}
			if l := lat[0]; bc.writers == 1 && len(l) > 0 {
				slices.Sort(l)
				b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}

// BenchmarkDays measures reading a year of day buckets (2 KiB each) of one
// website among others, from the block cache.
func BenchmarkDays(b *testing.B) {
	for _, days := range []int{365} {
		b.Run(fmt.Sprintf("days=%d", days), func(b *testing.B) {
			s, err := Open(&Options{Dir: "bench", FS: NewMemFS(), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			val := make([]byte, 2048)
			for w := uint32(1); w <= 3; w++ {
				sn := &Snapshot{}
				for d := range days {
					sn.Days = append(sn.Days, DayRecord{Website: w, Date: int32(20000 + d), Data: val})
				}
				if err := s.WriteSnapshot(sn); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Compact(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				n := 0
				err := s.Days(2, 20000, int32(20000+days-1), func(int32, []byte) error {
					n++
					return nil
				})
				if err != nil || n != days {
					b.Fatalf("Days: %d days, %v", n, err)
				}
			}
		})
	}
}
