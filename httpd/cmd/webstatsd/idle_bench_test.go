package main

import (
	"cmp"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkIdleRSS measures issue #16's "idle RSS after start": the real
// binary started on an empty data directory, left idle for 5 s after its
// first /healthz, then its resident memory read from /proc: in all
// (VmRSS), anonymous (RssAnon: the heap, stacks, Pebble's memory) and
// file-backed (RssFile: the pages of the binary itself that the kernel
// mapped, clean and shared, which it may drop under memory pressure).
// The run of the median VmRSS, in MiB.
//
//	go test ./httpd/cmd/webstatsd -run '^$' -bench '^BenchmarkIdleRSS$' -benchtime 5x
func BenchmarkIdleRSS(b *testing.B) {
	bin := buildBinary(b)
	type reading struct{ rss, anon, file float64 }
	var runs []reading
	for b.Loop() {
		srv := startServer(b, bin, filepath.Join(b.TempDir(), "data"))
		time.Sleep(5 * time.Second)
		var r reading
		for _, m := range []struct {
			field string
			into  *float64
		}{{"VmRSS", &r.rss}, {"RssAnon", &r.anon}, {"RssFile", &r.file}} {
			v, err := procBytes(srv.pid(), m.field)
			if err != nil {
				b.Skip("no /proc: ", err)
			}
			*m.into = float64(v) / (1 << 20)
		}
		runs = append(runs, r)
		srv.stop(b)
	}
	// The run of the median VmRSS, whole: its three figures add up.
	slices.SortFunc(runs, func(x, y reading) int { return cmp.Compare(x.rss, y.rss) })
	med := runs[len(runs)/2]
	b.ReportMetric(med.rss, "rss-MiB")
	b.ReportMetric(med.anon, "anon-MiB")
	b.ReportMetric(med.file, "file-MiB")
}
