package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
)

// TestRollupsBounded: century-long queries of an empty site cache no
// rollups (12,000 month rollups were cached for ever, outside MemoryBudget, before), and
// cached rollups count in the resident bytes.
func TestRollupsBounded(t *testing.T) {
	e, site := hardEngine(t, vfs.NewMem(), Options{MemoryBudget: 1 << 10})
	defer e.Close()
	ctx := context.Background()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for y := 1000; y < 2000; y += 100 {
		from := buckets.DateOf(y, 1, 1)
		_, err := e.Unscoped().Stat(ctx, StatQuery{Website: site, Name: "page", From: from, To: from + MaxRangeDays - 1})
		if err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	sh := e.shardOf(site)
	sh.mu.Lock()
	n := e.sites[site].state.rollups.Len()
	sh.mu.Unlock()
	if growth := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); n != 0 || growth > 1<<20 {
		t.Errorf("%d rollups cached, heap grew %d KiB; want none, < 1 MiB", n, growth>>10)
	}
}

// TestDeleteDuringPinRead: a website deleted while Track reads its days
// from the store (lock released) leaves no resident bytes behind.
func TestDeleteDuringPinRead(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, _ := hardEngine(t, vfs.NewMem(), Options{MemoryBudget: 1, SaltPeriod: SaltDay, Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	acc, _, _ := NewTestAccount()
	o := e.Owner(acc.ID)
	// delete the initial site
	for id := range e.sites {
		_ = e.Unscoped().DeleteWebsite(ctx, id)
	}
	for i := 0; i < 150; i++ {
		d := fmt.Sprintf("r%d.example", i)
		w, err := o.CreateWebsite(ctx, WebsiteInput{Domain: &d})
		if err != nil {
			t.Fatal(err)
		}
		var hs []Hit
		for k := range 30 {
			hs = append(hs, hardHit(w.ID, now.Add(-time.Duration(k+1)*24*time.Hour), fmt.Sprint("v", k), "/"))
		}
		if _, err := e.Track(ctx, hs...); err != nil {
			t.Fatal(err)
		}
		if err := e.Snapshot(ctx); err != nil { // freeze, store, evict (budget 1)
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Track(ctx, hs...)
		}()
		for range i % 50 {
			runtime.Gosched()
		}
		if err := o.DeleteWebsite(ctx, w.ID); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if m := e.Metrics(); m.ResidentBytes != 0 || m.StateBytes != 0 {
			t.Fatalf("iteration %d: all websites deleted, ResidentBytes %d StateBytes %d", i, m.ResidentBytes, m.StateBytes)
		}
	}
}
