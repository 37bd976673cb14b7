package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/idem"
	"github.com/webstats/webstats/snapshot"
)

// memLog is a Cluster in memory: one node's log, followed by that node.
type memLog struct {
	mu     sync.Mutex
	msgs   [][]byte
	more   chan struct{}
	salts  map[int32][16]byte
	closed bool
}

func newMemLog() *memLog {
	return &memLog{more: make(chan struct{}), salts: make(map[int32][16]byte)}
}

func (l *memLog) Publish(ctx context.Context, website uint32, msg []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, append([]byte(nil), msg...))
	close(l.more)
	l.more = make(chan struct{})
	return nil
}

func (l *memLog) MaxMessage() int { return 8 << 20 }

func (l *memLog) Identity(context.Context) (string, error) { return "mem", nil }

func (l *memLog) Follow(ctx context.Context, after uint64, fn func(LogMessage) error) error {
	for {
		l.mu.Lock()
		msgs, more := l.msgs, l.more
		l.mu.Unlock()
		for ; after < uint64(len(msgs)); after++ {
			if err := fn(LogMessage{Seq: after + 1, Data: msgs[after], Time: time.Unix(0, 0)}); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-more:
		}
	}
}

func (l *memLog) Last(context.Context) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(len(l.msgs)), nil
}

func (l *memLog) Salt(_ context.Context, first int32, proposal [16]byte) ([16]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.salts[first]; ok {
		return s, nil
	}
	l.salts[first] = proposal
	return proposal, nil
}

func (l *memLog) DropSalt(_ context.Context, first int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.salts, first)
	return nil
}

// TestClusterWireGolden pins the bytes of the messages a node publishes on
// the cluster's log: registry transactions (a website created, updated,
// deleted; the attached package's records), hits (plain, compressed and
// with an idempotency key). Nodes of different versions share one log: a
// change of these bytes is a change of the cluster's wire format, which
// needs a new message kind, not an edit of this test.
func TestClusterWireGolden(t *testing.T) {
	log := newMemLog()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e, err := Open(&Options{
		FS: snapshot.NewMemFS(), NoSync: true, SnapshotEvery: -1, Cluster: log,
		Rand: rand.NewChaCha8([32]byte{1}), Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	o := e.Owner(1)
	d, tz, ips := "golden.example", "Europe/Paris", "10.0.0.0/8"
	w, err := o.CreateWebsite(ctx, WebsiteInput{Domain: &d})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.UpdateWebsite(ctx, w.ID, WebsiteInput{Timezone: &tz, ExcludeIPs: &ips}); err != nil {
		t.Fatal(err)
	}
	reg := e.Registry()
	err = reg.Do(ctx, LockWrite, func() error {
		if err := reg.Put(snapshot.KindSecret, 9, []byte("secret")); err != nil {
			return err
		}
		return reg.Delete(snapshot.KindInvite, 3)
	})
	if err != nil {
		t.Fatal(err)
	}
	hit := func(i int) Hit {
		return Hit{
			Time: now.Add(-time.Duration(i) * time.Second), Website: w.ID,
			URL:      fmt.Sprintf("https://golden.example/page/%d?%s", i%50, strings.Repeat("q", i%300)),
			Referrer: "https://news.example/a", UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
			IP: netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), Language: "fr-FR", Resolution: "1920x1080",
		}
	}
	if _, err := e.Track(ctx, hit(1), hit(2)); err != nil { // plain
		t.Fatal(err)
	}
	var many []Hit
	for i := range 400 {
		many = append(many, hit(i))
	}
	if _, err := e.Track(ctx, many...); err != nil { // compressed
		t.Fatal(err)
	}
	if _, err := e.TrackOnce(ctx, "key-1", hit(3)); err != nil { // keyed
		t.Fatal(err)
	}
	if err := o.DeleteWebsite(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	msgs := log.msgs
	log.mu.Unlock()
	var kinds []byte
	var lens []int
	h := sha256.New()
	for _, m := range msgs {
		kinds = append(kinds, m[0])
		lens = append(lens, len(m))
		if m[0] == 'k' {
			// The mark's nonce is random (math/rand): zeroed. The mark
			// follows 'k' and its length: idemTag, the website, the
			// key's digest, the time (ms), the nonce.
			m = append([]byte(nil), m...)
			at := 3 + len(binary.AppendUvarint(nil, uint64(w.ID))) + len(idem.Key{}) + len(binary.AppendVarint(nil, now.UnixMilli()))
			clear(m[at : at+8])
		}
		h.Write(m)
	}
	const want = "kinds rrrpzkr"
	if got := "kinds " + string(kinds); got != want {
		t.Errorf("%s, want %s (lengths %v)", got, want, lens)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenWire {
		t.Errorf("the log's bytes changed: sha256 %s, was %s (lengths %v)", got, goldenWire, lens)
	}
}

const goldenWire = "c93a40751437f0be49fe4e8a9f7da7cfb4cc4605b13cdb9d371d570a41892368"

// memParts is a Partitioner of one partition over a memLog, held by the
// engine from (none: no other node holds it).
type memParts struct {
	log     *memLog
	changed chan struct{}
	from    *Engine
}

func (p *memParts) Count() int                            { return 1 }
func (p *memParts) Target() uint64                        { return 1 }
func (p *memParts) Covered(int) bool                      { return true }
func (p *memParts) Changed() <-chan struct{}              { return p.changed }
func (p *memParts) SetHeld(uint64)                        {}
func (p *memParts) First(context.Context) (uint64, error) { return 1, nil }
func (p *memParts) Follow(ctx context.Context, after uint64, _ uint64, fn func(LogMessage) error) error {
	return p.log.Follow(ctx, after, fn)
}
func (p *memParts) Last(ctx context.Context, _ uint64) (uint64, error) { return p.log.Last(ctx) }
func (p *memParts) Fetch(context.Context, int) (io.ReadCloser, error)  { return nil, ErrNoHolder }
func (p *memParts) Ask(context.Context, int, []byte) ([]byte, error)   { return nil, ErrNoHolder }
func (p *memParts) Serve(func(context.Context, int, io.Writer) error, func(context.Context, []byte) ([]byte, error)) (func(), error) {
	return func() {}, nil
}

// TestPartitionStateGolden pins the bytes of a partition's state as a
// holder sends it to a node that gains the partition (exportPartition):
// nodes of different versions fetch partitions from each other.
func TestPartitionStateGolden(t *testing.T) {
	log := newMemLog()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e, err := Open(&Options{
		FS: snapshot.NewMemFS(), NoSync: true, SnapshotEvery: -1, Cluster: log,
		Partitions: &memParts{log: log, changed: make(chan struct{})},
		Rand:       rand.NewChaCha8([32]byte{2}), Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	d := "golden.example"
	w, err := e.Owner(1).CreateWebsite(ctx, WebsiteInput{Domain: &d})
	if err != nil {
		t.Fatal(err)
	}
	for e.held.Ready() != 1 { // rebuilt from the log, which no node holds
		time.Sleep(time.Millisecond)
	}
	var hits []Hit
	for i := range 100 {
		hits = append(hits, Hit{
			Time: now.Add(-time.Duration(i) * time.Hour), Website: w.ID,
			URL:       fmt.Sprintf("https://golden.example/page/%d", i%7),
			UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
			IP:        netip.AddrFrom4([4]byte{192, 0, 2, byte(i % 13)}),
		})
	}
	if _, err := e.Track(ctx, hits...); err != nil {
		t.Fatal(err)
	}
	last, _ := log.Last(ctx)
	for e.seq.Load() < last {
		time.Sleep(time.Millisecond)
	}
	var b bytes.Buffer
	if err := e.exportPartition(ctx, 0, &b); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(b.Bytes())); got != goldenPartition {
		t.Errorf("a partition's state changed: sha256 %s, was %s (%d bytes)", got, goldenPartition, b.Len())
	}

	// Another node gains the partition from e (partitions.Mover), then
	// applies what follows, and answers as e does.
	g, err := Open(&Options{
		FS: snapshot.NewMemFS(), NoSync: true, SnapshotEvery: -1, Cluster: log,
		Partitions: &memParts{log: log, changed: make(chan struct{}), from: e},
		Rand:       rand.NewChaCha8([32]byte{3}), Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for g.held.Ready() != 1 {
		time.Sleep(time.Millisecond)
	}
	if _, err := e.Track(ctx, hits[:10]...); err != nil {
		t.Fatal(err)
	}
	last, _ = log.Last(ctx)
	for e.seq.Load() < last || g.seq.Load() < last {
		time.Sleep(time.Millisecond)
	}
	from, to := DateFromTime(now.AddDate(0, 0, -7)), DateFromTime(now)
	for _, name := range []string{"page", "browser", "visitors", "pageviews_hours"} {
		q := StatQuery{Website: w.ID, Name: name, From: from, To: to, PerPage: 100}
		want, err := e.Owner(1).Stat(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.Owner(1).Stat(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" || len(want.Rows) == 0 {
			t.Errorf("%s on the node that gained the partition (%d rows) (-holder +gainer):\n%s", name, len(want.Rows), diff)
		}
	}
	want, _ := e.Owner(1).Totals(ctx, w.ID, from, to)
	got, err := g.Owner(1).Totals(ctx, w.ID, from, to)
	if err != nil || got != want || want.Pageviews != 110 {
		t.Errorf("totals on the node that gained the partition: %+v, %v; the holder's %+v", got, err, want)
	}
}

// goldenPartition changed with the stream's magic wsp1 → wsp2 (the store's
// format version 2, days in pieces): a node of format version 1 refuses it.
const goldenPartition = "712579610dd7ecee0a7496b1819818c8643a2c5cbe3f8e9f6ad88fcb8b2be02f"
