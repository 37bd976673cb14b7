package main

import (
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestKill9SyncInterval: with -sync interval a hit is acknowledged once the
// operating system has it, before any fsync; a kill -9 under the load of 16
// clients loses none of them. After a restart the count of the page is at
// least the hits answered 202 and at most the hits sent (a hit whose answer
// the kill cut may or may not be counted).
//
// Reproduce: go test ./httpd/cmd/webstatsd -run TestKill9SyncInterval -v
func TestKill9SyncInterval(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	flags := []string{"-sync", "interval", "-rate-limit", "0"}
	srv := startServer(t, bin, data, flags...)
	key := srv.adminKey(t)
	base := srv.base()
	id := createSite(t, base, key, url.Values{"domain": {"sync.example"}, "privacy": {"0"}})
	day := time.Now().UTC().Format(time.DateOnly)

	hc := keepAlive(16, 5*time.Second)
	defer hc.CloseIdleConnections()
	var sent, acked atomic.Int64
	// killing is set before the kill: an error after it may be the kill's
	// (killed is closed only once Kill has returned, by which time the
	// clients have already seen their connections reset).
	var killing atomic.Bool
	killed := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-killed:
					return
				default:
				}
				sent.Add(1)
				code, drop, err := track(hc, base, "https://sync.example/live", "", chromeUA)
				if err != nil {
					if !killing.Load() {
						t.Errorf("hit before the kill: %v", err)
					}
					return
				}
				if code != http.StatusAccepted || drop != "" {
					t.Errorf("hit: status %d, dropped %q; want 202", code, drop)
					return
				}
				acked.Add(1)
			}
		})
	}
	// Kill once the load has run for a second, mid-flight.
	time.Sleep(time.Second)
	killing.Store(true)
	srv.cmd.Process.Kill()
	close(killed)
	<-srv.done
	wg.Wait()
	if acked.Load() < 100 {
		t.Fatalf("only %d hits acknowledged before the kill", acked.Load())
	}

	srv = startServer(t, bin, data, flags...)
	got := int64(pageCounts(t, srv.base(), key, id, day, day)["/live"])
	t.Logf("sent %d, acknowledged %d, counted after kill -9 and restart %d", sent.Load(), acked.Load(), got)
	if got < acked.Load() || got > sent.Load() {
		t.Errorf("counted %d after kill -9 and restart, want between %d (acknowledged) and %d (sent)", got, acked.Load(), sent.Load())
	}
	if n := srv.stderr.Panics(); n > 0 {
		t.Errorf("the server logged %d panics:\n%s", n, srv.stderr.String())
	}
	srv.stop(t)
}
