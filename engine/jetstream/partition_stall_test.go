package jetstream_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/webstats/webstats/engine/jetstream"
)

// A fetch whose object stops coming fails within the read's bound, even
// with the half hour the engine gives a fetch: here the holder (a stand-in
// that stays a member) names an object whose chunks were purged, as a put
// that failed in its last wait leaves it.
func TestFetchStalledObject(t *testing.T) {
	nc := startNATS(t, 1)
	conn, err := nats.Connect(nc.url(0), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	l, err := jetstream.New(ctx, conn, jetstream.Options{Name: "stall", Replicas: 1, Node: "f"})
	if err != nil {
		t.Fatal(err)
	}
	pt, err := jetstream.NewPartitioner(ctx, l, jetstream.PartitionOptions{Count: 1, Owners: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Close()

	raw, js := nc.raw(t)
	// The stand-in holder h: a member holding partition 0 (its entry put
	// again within the bucket's TTL), answering a fetch with the object.
	kv, err := js.KeyValue(ctx, "stall_members")
	if err != nil {
		t.Fatal(err)
	}
	member := func() {
		if _, err := kv.Put(ctx, "h", []byte(`{"count":1,"held":1,"instance":"i1"}`)); err != nil {
			t.Error(err)
		}
	}
	member()
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for {
			select {
			case <-hctx.Done():
				return
			case <-time.After(2 * time.Second):
				member()
			}
		}
	}()
	obs, err := js.ObjectStore(ctx, "stall_transfers")
	if err != nil {
		t.Fatal(err)
	}
	info, err := obs.PutBytes(ctx, "stalled", make([]byte, 300<<10))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "OBJ_stall_transfers")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, natsjs.WithPurgeSubject("$O.stall_transfers.C."+info.NUID)); err != nil {
		t.Fatal(err)
	}
	sub, err := raw.Subscribe("stall.node.h.fetch", func(m *nats.Msg) { _ = m.Respond([]byte("+stalled")) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for deadline := time.Now().Add(10 * time.Second); pt.Held()["h"] != 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in holder is not seen: %v", pt.Held())
		}
	}

	fctx, cancel := context.WithTimeout(ctx, 30*time.Minute) // as the engine's
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		rc, err := pt.Fetch(fctx, 0)
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a fetch of an object without its chunks succeeded")
		}
		t.Logf("failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(40 * time.Second):
		t.Fatal("the fetch of a stalled object still waits after 40 s")
	}
}
