package cli

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"github.com/webstats/webstats/engine/identity"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/jetstream"
)

// TestSeed: a node puts a seed; the stream is then purged up to it (what
// MaxAge does to an old cluster); a new node on an empty directory starts
// from the seed, follows the stream from there, and answers as the first
// node does: hits from before the seed (only in the seed) and after it
// (only in the stream). A seed no newer than the one stored is not put,
// and a directory with a store is not seeded again.
func TestSeed(t *testing.T) {
	ctx := t.Context()
	log := slog.New(slog.DiscardHandler)
	port := freePorts(t, 1)[0]
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	day := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	now := day.Add(5 * 24 * time.Hour)
	clock := func() time.Time { return now }
	nodeA, err := startCluster(ctx, &Cluster{Embed: fmt.Sprintf("127.0.0.1:%d", port)}, dirA, log)
	if err != nil {
		t.Fatal(err)
	}
	defer nodeA.close()
	a, err := engine.Open(&engine.Options{Dir: dirA, NoSync: true, SnapshotEvery: -1, Now: clock, Cluster: nodeA.log})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	acc, _, err := identity.Must(a).CreateAccount(ctx, "Owner", "owner@example.org")
	if err != nil {
		t.Fatal(err)
	}
	domain := "seed.example"
	w, err := a.Owner(acc.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
	if err != nil {
		t.Fatal(err)
	}
	track := func(e *engine.Engine, d int, page string, n int) {
		t.Helper()
		var hs []engine.Hit
		for i := range n {
			hs = append(hs, engine.Hit{Time: day.AddDate(0, 0, d).Add(time.Duration(i) * time.Minute), URL: "https://seed.example" + page,
				Website: w.ID, Visitor: fmt.Sprint("v", d, "-", i), UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
				IP: netip.MustParseAddr("8.8.8.8")})
		}
		if _, err := e.Track(ctx, hs...); err != nil {
			t.Fatal(err)
		}
	}
	waitSeq := func(e *engine.Engine) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			last, err := nodeA.log.Last(ctx)
			if err == nil && e.Metrics().LogSeq >= last {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("applied %d of %d (%v)", e.Metrics().LogSeq, last, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	answer := func(e *engine.Engine) []engine.Row {
		t.Helper()
		pg, err := e.Owner(acc.ID).Stat(ctx, engine.StatQuery{Website: w.ID, Name: "page", From: engine.DateFromTime(day), To: engine.DateFromTime(now)})
		if err != nil {
			t.Fatal(err)
		}
		return pg.Rows
	}
	for d := range 3 {
		track(a, d, "/before", 20)
	}
	waitSeq(a)
	stored, seq, err := putSeed(ctx, a, nodeA.log, dirA)
	if err != nil || !stored || seq == 0 {
		t.Fatalf("putSeed: %v at %d, %v", stored, seq, err)
	}
	if again, _, err := putSeed(ctx, a, nodeA.log, dirA); err != nil || again {
		t.Fatalf("a seed at the same position: stored %v, %v", again, err)
	}
	if ents, _ := filepath.Glob(filepath.Join(dirA, ".seed-*")); len(ents) != 0 {
		t.Errorf("putSeed left %v", ents)
	}
	track(a, 3, "/after", 15)
	waitSeq(a)
	if err := nodeA.log.PurgeBefore(ctx, seq+1); err != nil {
		t.Fatal(err)
	}
	if first, err := nodeA.log.First(ctx); err != nil || first != seq+1 {
		t.Fatalf("the stream starts at %d (%v), want %d", first, err, seq+1)
	}

	nodeB, err := startCluster(ctx, &Cluster{NATS: fmt.Sprintf("nats://127.0.0.1:%d", port)}, dirB, log)
	if err != nil {
		t.Fatal(err)
	}
	defer nodeB.close()
	// Without the seed, a new node refuses to open: the log lacks the
	// history it would answer without.
	dirC := filepath.Join(t.TempDir(), "c")
	start := time.Now()
	if c, err := engine.Open(&engine.Options{Dir: dirC, NoSync: true, SnapshotEvery: -1, Now: clock, Cluster: nodeB.log}); !errors.Is(err, engine.ErrLogGap) {
		if err == nil {
			c.Close()
		}
		t.Fatalf("a new node without the seed opened: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	if err := startFrom(ctx, nodeB.log, dirB, log); err != nil {
		t.Fatalf("startFrom: %v", err)
	}
	if has, err := hasStore(dirB); err != nil || !has {
		t.Fatalf("no store after startFrom: %v", err)
	}
	b, err := engine.Open(&engine.Options{Dir: dirB, NoSync: true, SnapshotEvery: -1, Now: clock, Cluster: nodeB.log})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	waitSeq(b)
	want := answer(a)
	if len(want) != 2 {
		t.Fatalf("node A's pages: %+v", want)
	}
	if diff := cmp.Diff(want, answer(b)); diff != "" {
		t.Fatalf("the seeded node answers otherwise (-A +B):\n%s", diff)
	}
	track(b, 4, "/later", 5) // and it takes part
	waitSeq(a)
	waitSeq(b)
	if diff := cmp.Diff(answer(a), answer(b)); diff != "" {
		t.Fatalf("after a hit on the seeded node (-A +B):\n%s", diff)
	}
	before, _ := os.ReadDir(dirB)
	if err := startFrom(ctx, nodeB.log, dirB, log); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadDir(dirB); len(after) != len(before) {
		t.Fatalf("a directory with a store seeded again: %d entries, then %d", len(before), len(after))
	}
	// A restore a crash cut short: its list names what it moved in; the
	// next start removes those and restores again.
	dirE := filepath.Join(t.TempDir(), "e")
	if err := os.MkdirAll(filepath.Join(dirE, ".seed-get-0123"), 0o750); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"000042.sst": "junk", "MANIFEST-000042": "junk", seedRestoring: "000042.sst\nMANIFEST-000042\n"} {
		if err := os.WriteFile(filepath.Join(dirE, name), []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := startFrom(ctx, nodeB.log, dirE, log); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"000042.sst", "MANIFEST-000042", seedRestoring, ".seed-get-0123"} {
		if _, err := os.Stat(filepath.Join(dirE, name)); err == nil {
			t.Errorf("%s left after the interrupted restore was undone", name)
		}
	}
	e, err := engine.Open(&engine.Options{Dir: dirE, NoSync: true, SnapshotEvery: -1, Now: clock, Cluster: nodeB.log})
	if err != nil {
		t.Fatal(err)
	}
	waitSeq(e)
	if diff := cmp.Diff(answer(a), answer(e)); diff != "" {
		t.Errorf("restored again after a crash (-A +E):\n%s", diff)
	}
	e.Close()
	// Seeds beyond the two latest are kept while a node may still be
	// reading them (their successors are seconds old here).
	for range 2 {
		track(a, 5, "/more", 1)
		waitSeq(a)
		if ok, _, err := putSeed(ctx, a, nodeA.log, dirA); err != nil || !ok {
			t.Fatalf("putSeed: %v, %v", ok, err)
		}
	}
	js, err := natsjs.New(nodeA.nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := js.ObjectStore(ctx, "webstats_seeds")
	if err != nil {
		t.Fatal(err)
	}
	if objs, err := store.List(ctx); err != nil || len(objs) != 3 {
		t.Errorf("%d seeds kept (%v), want 3", len(objs), err)
	}
	// A log whose start was dropped, without a seed: a new node is refused
	// before it makes a store.
	other, err := jetstream.New(ctx, nodeA.nc, jetstream.Options{Name: "other", Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := other.Publish(ctx, 1, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.PurgeBefore(ctx, 3); err != nil {
		t.Fatal(err)
	}
	dirF := filepath.Join(t.TempDir(), "f")
	if err := startFrom(ctx, other, dirF, log); !errors.Is(err, engine.ErrLogGap) {
		t.Errorf("a new node on a log without its start and no seed: %v, want ErrLogGap", err)
	}
	if has, _ := hasStore(dirF); has {
		t.Error("the refused node made a store")
	}
	if ents, _ := filepath.Glob(filepath.Join(dirB, ".seed-*")); len(ents) != 0 {
		t.Errorf("restoreSeed left %v", ents)
	}
	if _, err := os.Stat(filepath.Join(dirB, "nats")); err == nil {
		t.Error("node B, a NATS client, has an embedded store")
	}
}

// TestSeedTar: readTar refuses names outside its directory and anything
// but files and directories; writeTar and readTar round-trip a tree.
func TestSeedTar(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"MANIFEST-000001": "m", "sub/000002.sst": "sst"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytesBuffer
	if err := writeTar(&buf, src); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "x")
	if err := readTar(&buf, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "000002.sst")); err != nil || string(b) != "sst" {
		t.Fatalf("round trip: %q, %v", b, err)
	}
	if has, err := hasStore(dst); err != nil || !has {
		t.Fatalf("hasStore after the round trip: %v, %v", has, err)
	}
	for _, name := range []string{"../evil", "/abs", "a/../../evil"} {
		var b bytesBuffer
		tw := newTarWriter(&b)
		tw.file(name, "x")
		if err := readTar(&b, filepath.Join(t.TempDir(), "y")); err == nil {
			t.Errorf("readTar took %q", name)
		}
	}
	var b bytesBuffer
	tw := newTarWriter(&b)
	tw.symlink("link", "/etc/passwd")
	if err := readTar(&b, filepath.Join(t.TempDir(), "z")); err == nil {
		t.Error("readTar took a symbolic link")
	}
}

type bytesBuffer = bytes.Buffer

// tarWriter writes test archives.
type tarWriter struct{ tw *tar.Writer }

func newTarWriter(w io.Writer) tarWriter { return tarWriter{tar.NewWriter(w)} }

func (w tarWriter) file(name, body string) {
	w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(body)), Mode: 0o640})
	io.WriteString(w.tw, body)
	w.tw.Close()
}

func (w tarWriter) symlink(name, target string) {
	w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target})
	w.tw.Close()
}

// TestNodeName: a node's name is made once and kept in its data
// directory, so that a restart records its position under the same key.
func TestNodeName(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data") // not made yet
	a, err := nodeName(data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := nodeName(data)
	if err != nil {
		t.Fatal(err)
	}
	other, err := nodeName(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if a != b || len(a) != 32 || a == other {
		t.Errorf("names %q, %q (same directory) and %q (another): want the same 32 hex digits twice, and another", a, b, other)
	}
	if err := os.WriteFile(filepath.Join(data, nodeFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := nodeName(data); err != nil || c == a || len(c) != 32 {
		t.Errorf("after a damaged file: %q, %v; want a new name", c, err)
	}
}
