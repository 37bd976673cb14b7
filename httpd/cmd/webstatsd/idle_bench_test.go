package main

import (
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkIdleRSS measures issue #16's "idle RSS after start": the real
// binary started on an empty data directory, left idle for 5 s after its
// first /healthz, then its resident memory read from /proc: in all
// (VmRSS), anonymous (RssAnon: the heap, stacks, Pebble's memory) and
// file-backed (RssFile: the pages of the binary itself that the kernel
// mapped, clean and shared, which it may drop under memory pressure).
// Medians of the runs, in MiB.
//
//	go test ./httpd/cmd/webstatsd -run '^$' -bench '^BenchmarkIdleRSS$' -benchtime 5x
func BenchmarkIdleRSS(b *testing.B) {
	bin := buildBinary(b)
	var rss, anon, file []float64
	for b.Loop() {
		srv := startServer(b, bin, filepath.Join(b.TempDir(), "data"))
		time.Sleep(5 * time.Second)
		for _, m := range []struct {
			field string
			into  *[]float64
		}{{"VmRSS", &rss}, {"RssAnon", &anon}, {"RssFile", &file}} {
			v, err := procBytes(srv.pid(), m.field)
			if err != nil {
				b.Skip("no /proc: ", err)
			}
			*m.into = append(*m.into, float64(v)/(1<<20))
		}
		srv.stop(b)
	}
	b.ReportMetric(medianOf(rss), "rss-MiB")
	b.ReportMetric(medianOf(anon), "anon-MiB")
	b.ReportMetric(medianOf(file), "file-MiB")
}
