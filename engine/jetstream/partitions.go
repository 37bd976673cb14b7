package jetstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/webstats/webstats/engine"
)

// Partitions (engine.Partitioner). The live nodes are the keys of the
// bucket <name>_members: each node puts its entry (partition count and
// the partitions it holds) every heartbeat, and the bucket forgets an
// entry memberTTL after its last put, so a node that died leaves it
// within seconds; one that stops deletes its entry (expiry is the
// servers': no node compares its clock with another's). Every node reads the
// bucket every second and computes the same assignment from it:
// partition p's owners are the Owners live nodes of highest rendezvous
// score hash(node, p), so a node joining or leaving moves only the
// partitions it gains or loses. The assignment is a function of the
// bucket, not a record of its own: no node has to write it, and no two
// writers can disagree.
//
// Between nodes, two requests on core NATS subjects of the asked node:
// <name>.node.<node>.fetch asks for a partition's state, which the node
// writes into an object of the bucket <name>_transfers (deleted by the
// reader; the bucket forgets what a crash left within an hour), and
// <name>.node.<node>.ask carries a statistics question (engine's
// encoding, zstd-compressed both ways).

// memberTTL is how long the members bucket keeps an entry after its last
// put; heartbeat how often a node puts its own.
const (
	memberTTL = 10 * time.Second
	heartbeat = 2 * time.Second
	pollEvery = time.Second
)

// callTimeout bounds each request of a fetch to the servers. A fetch's
// context lasts as long as the whole transfer may; a request whose reply
// was lost with a server would otherwise wait that long.
const callTimeout = 5 * time.Second

// Reading an object of n bytes may take readBase plus n/readRate seconds.
// The object store's reader waits for a chunk until its context's
// deadline, and its chunks sometimes stop coming: in
// TestClusterFaultsPartitions a read of a few kilobytes, from a holder
// that stayed up, once got nothing for 60 s (the other clients' object
// store Get gained heartbeats for stalls like it: nats-io/nats.js#256).
// The fetch then fails and is made again.
const (
	readBase = 15 * time.Second
	readRate = 1 << 20
)

// freshEvery: a question finding no holder reads the members again only
// if they were not read this recently.
const freshEvery = 250 * time.Millisecond

// sendStall: a holder whose object store put has taken nothing of the
// partition's state for this long gives up sending it (and writes the
// failure marker).
const sendStall = time.Minute

// Bounds of the requests a node serves at once; more are answered busy.
const (
	maxFetches = 2
	maxAsks    = 32
)

// PartitionOptions configure a Partitioner.
type PartitionOptions struct {
	// Count is the number of partitions, 1 to engine.MaxPartitions; every
	// node of a cluster must have the same.
	Count int
	// Owners is how many nodes hold each partition (default 2; fewer while
	// fewer nodes are up). With 1, a partition's statistics are
	// unavailable from when its node stops until it is back or another
	// has it; the log keeps the hits meanwhile.
	Owners int
	// Logger receives the membership's changes. Default: discarded.
	Logger *slog.Logger
}

// Partitioner is the engine.Partitioner of a Log. Make it with
// NewPartitioner, and Close it after the engine.
type Partitioner struct {
	l      *Log
	o      PartitionOptions
	kv     jetstream.KeyValue
	xfer   jetstream.ObjectStore
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	changed chan struct{}

	// pollMu makes polls one at a time, so that an older reading never
	// replaces a newer one (a node that left would come back, and a
	// partition look covered before its new owner holds it); polled is
	// when the last one ended.
	pollMu sync.Mutex
	polled time.Time

	mu      sync.Mutex
	members map[string]uint64 // live node → partitions it holds
	// instances: live node → its process's instance (member.Instance)
	instances map[string]string
	instance  string
	held      uint64
	target    uint64
	covered   uint64 // partitions not in target whose owners all hold them
}

var _ engine.Partitioner = (*Partitioner)(nil)

// member is a node's entry in the members bucket.
type member struct {
	Count int    `json:"count"`
	Held  uint64 `json:"held"`
	// Instance is random for each process: a fetch from a node that
	// restarted meanwhile is not waited for.
	Instance string `json:"instance"`
}

// NewPartitioner joins the members of l's cluster and reads them once. A
// live node with another partition count is an error.
func NewPartitioner(ctx context.Context, l *Log, o PartitionOptions) (*Partitioner, error) {
	if o.Count < 1 || o.Count > engine.MaxPartitions {
		return nil, fmt.Errorf("jetstream: %d partitions: want 1 to %d", o.Count, engine.MaxPartitions)
	}
	if o.Owners <= 0 {
		o.Owners = 2
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	kv, err := l.keyValue(ctx, jetstream.KeyValueConfig{Bucket: l.opts.Name + "_members", TTL: memberTTL})
	if err != nil {
		return nil, err
	}
	xbucket := l.opts.Name + "_transfers"
	xfer, err := l.js.ObjectStore(ctx, xbucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		xfer, err = l.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:   xbucket,
			Replicas: l.opts.Replicas,
			Storage:  jetstream.FileStorage,
			TTL:      time.Hour,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			xfer, err = l.js.ObjectStore(ctx, xbucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: bucket %s: %w", xbucket, err)
	}
	var inst [8]byte
	if _, err := rand.Read(inst[:]); err != nil {
		return nil, err
	}
	pt := &Partitioner{l: l, o: o, kv: kv, xfer: xfer, changed: make(chan struct{}, 1), instance: hex.EncodeToString(inst[:])}
	pt.ctx, pt.cancel = context.WithCancel(context.Background())
	if err := pt.put(ctx); err != nil {
		pt.cancel()
		return nil, err
	}
	if err := pt.poll(ctx); err != nil {
		pt.cancel()
		return nil, err
	}
	pt.wg.Add(1)
	go pt.loop()
	return pt, nil
}

// Close leaves the members (the entry is deleted) and stops the loops.
func (pt *Partitioner) Close() error {
	pt.cancel()
	pt.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return pt.kv.Delete(ctx, pt.l.opts.Node)
}

// put puts this node's entry.
func (pt *Partitioner) put(ctx context.Context) error {
	pt.mu.Lock()
	b, _ := json.Marshal(member{Count: pt.o.Count, Held: pt.held, Instance: pt.instance})
	pt.mu.Unlock()
	if _, err := pt.kv.Put(ctx, pt.l.opts.Node, b); err != nil {
		return fmt.Errorf("jetstream: member %s: %w", pt.l.opts.Node, err)
	}
	return nil
}

// loop puts the entry every heartbeat and reads the members every
// pollEvery, until Close.
func (pt *Partitioner) loop() {
	defer pt.wg.Done()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-pt.ctx.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(pt.ctx, 5*time.Second)
		if time.Since(last) >= heartbeat {
			if err := pt.put(ctx); err != nil {
				pt.o.Logger.Warn("cluster: member heartbeat", "err", err)
			} else {
				last = time.Now()
			}
		}
		if err := pt.poll(ctx); err != nil && pt.ctx.Err() == nil {
			pt.o.Logger.Warn("cluster: members", "err", err)
		}
		cancel()
	}
}

// poll reads the members and recomputes the assignment; Changed receives
// when it changed.
func (pt *Partitioner) poll(ctx context.Context) error {
	pt.pollMu.Lock()
	defer pt.pollMu.Unlock()
	start := time.Now()
	members, instances := map[string]uint64{}, map[string]string{}
	lister, err := pt.kv.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("jetstream: members: %w", err)
	}
	for key := range lister.Keys() {
		ent, err := pt.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			lister.Stop()
			return fmt.Errorf("jetstream: member %s: %w", key, err)
		}
		var m member
		if err := json.Unmarshal(ent.Value(), &m); err != nil {
			continue
		}
		if m.Count != pt.o.Count {
			pt.o.Logger.Error("cluster: a node has another partition count; it is not counted", "node", key, "count", m.Count, "here", pt.o.Count)
			continue
		}
		members[key], instances[key] = m.Held, m.Instance
	}
	lister.Stop()
	if err := ctx.Err(); err != nil {
		return err
	}
	pt.mu.Lock()
	members[pt.l.opts.Node] = pt.held // this node is always a member
	target, covered := pt.assign(members)
	moved := target != pt.target || covered != pt.covered || !sameKeys(members, pt.members)
	pt.members, pt.instances, pt.target, pt.covered = members, instances, target, covered
	pt.mu.Unlock()
	pt.polled = start
	if moved {
		select {
		case pt.changed <- struct{}{}:
		default:
		}
	}
	return nil
}

func sameKeys(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// owners returns the nodes that should hold partition p among names, the
// first the most preferred.
func (pt *Partitioner) owners(names []string, p int) []string {
	return rank(names, p, pt.o.Owners)
}

// score is node name's rendezvous score for partition p: FNV-1a of the
// name, mixed with p by MurmurHash3's finaliser, so that the order of the
// names differs from one partition to the next.
func score(name string, p int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	x := h.Sum64() ^ (uint64(p)+1)*0x9e3779b97f4a7c15
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// rank returns the first n of names by rendezvous score for partition p.
func rank(names []string, p, n int) []string {
	type scored struct {
		name  string
		score uint64
	}
	s := make([]scored, len(names))
	for i, name := range names {
		s[i] = scored{name, score(name, p)}
	}
	slices.SortFunc(s, func(a, b scored) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	out := make([]string, 0, n)
	for i := 0; i < len(s) && i < n; i++ {
		out = append(out, s[i].name)
	}
	return out
}

// assign computes this node's target and the partitions outside it that
// are covered: their owners all hold them.
func (pt *Partitioner) assign(members map[string]uint64) (target, covered uint64) {
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	self := pt.l.opts.Node
	for p := range pt.o.Count {
		owners := pt.owners(names, p)
		if slices.Contains(owners, self) {
			target |= 1 << p
			continue
		}
		all := len(owners) > 0
		for _, n := range owners {
			all = all && members[n]&(1<<p) != 0
		}
		if all {
			covered |= 1 << p
		}
	}
	return target, covered
}

// Count implements engine.Partitioner.
func (pt *Partitioner) Count() int { return pt.o.Count }

// Target implements engine.Partitioner.
func (pt *Partitioner) Target() uint64 {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.target
}

// Covered implements engine.Partitioner.
func (pt *Partitioner) Covered(p int) bool {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.covered&(1<<p) != 0
}

// Changed implements engine.Partitioner.
func (pt *Partitioner) Changed() <-chan struct{} { return pt.changed }

// SetHeld implements engine.Partitioner: the entry is put at once.
func (pt *Partitioner) SetHeld(held uint64) {
	pt.mu.Lock()
	same := pt.held == held
	pt.held = held
	pt.mu.Unlock()
	if same {
		return
	}
	ctx, cancel := context.WithTimeout(pt.ctx, 5*time.Second)
	defer cancel()
	if err := pt.put(ctx); err != nil {
		pt.o.Logger.Warn("cluster: member entry", "err", err)
	}
}

// subjects returns the registry's subject and those of the partitions
// parts.
func (pt *Partitioner) subjects(parts uint64) []string {
	out := []string{pt.l.subject(0)}
	for s := range engine.MaxPartitions {
		if parts&(1<<(s%pt.o.Count)) != 0 {
			out = append(out, pt.l.prefix+strconv.Itoa(s))
		}
	}
	return out
}

// Follow implements engine.Partitioner.
func (pt *Partitioner) Follow(ctx context.Context, after uint64, parts uint64, fn func(engine.LogMessage) error) error {
	return pt.l.follow(ctx, after, pt.subjects(parts), fn)
}

// Last implements engine.Partitioner: the last message of each subject.
func (pt *Partitioner) Last(ctx context.Context, parts uint64) (uint64, error) {
	st, err := pt.l.js.Stream(ctx, pt.l.stream)
	if err != nil {
		return 0, fmt.Errorf("jetstream: stream: %w", err)
	}
	var last uint64
	for _, subj := range pt.subjects(parts) {
		m, err := st.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("jetstream: last of %s: %w", subj, err)
		}
		last = max(last, m.Sequence)
	}
	return last, nil
}

// First implements engine.Partitioner.
func (pt *Partitioner) First(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return pt.l.First(ctx)
}

// holders returns the other live nodes that hold partition p, the
// preferred first.
func (pt *Partitioner) holders(p int) []string {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	var names []string
	for n, held := range pt.members {
		if n != pt.l.opts.Node && held&(1<<p) != 0 {
			names = append(names, n)
		}
	}
	return rank(names, p, len(names))
}

// freshHolders is holders, read again from the bucket when the last
// reading had none (a node that has just caught up advertises it within
// a second). With throttle (questions, which may come by the thousand),
// a reading that started less than freshEvery ago is used as it is.
func (pt *Partitioner) freshHolders(ctx context.Context, p int, throttle bool) ([]string, error) {
	if h := pt.holders(p); len(h) > 0 {
		return h, nil
	}
	if throttle {
		pt.pollMu.Lock()
		recent := time.Since(pt.polled) < freshEvery
		pt.pollMu.Unlock()
		if recent {
			return pt.holders(p), nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := pt.poll(ctx); err != nil {
		return nil, err
	}
	return pt.holders(p), nil
}

func (pt *Partitioner) nodeSubject(node, op string) string {
	return pt.l.opts.Name + ".node." + node + "." + op
}

// Replies start with replyOK and the answer, or replyErr and the error.
const (
	replyOK  = '+'
	replyErr = '-'
)

// errReplied: the request was answered already.
var errReplied = errors.New("jetstream: answered")

// errBusy answers a request beyond maxFetches or maxAsks.
var errBusy = errors.New("jetstream: the node is busy")

// Fetch implements engine.Partitioner: the first holder that sends the
// partition's state; the reader deletes its object when closed. A holder
// answers at once with the name of the object it will write (a reply
// lost with a server is then noticed in seconds, not after the whole
// transfer), and the object is waited for while the holder's process
// stays a member (failedSuffix names its failure).
func (pt *Partitioner) Fetch(ctx context.Context, p int) (io.ReadCloser, error) {
	holders, err := pt.freshHolders(ctx, p, false)
	if err != nil {
		return nil, fmt.Errorf("jetstream: fetch partition %d: %w", p, err)
	}
	if len(holders) == 0 {
		return nil, engine.ErrNoHolder
	}
	var errs []error
	busy := 0
	for _, h := range holders {
		inst := pt.instanceOf(h)
		try, cancel := context.WithTimeout(ctx, callTimeout)
		msg, err := pt.l.nc.RequestWithContext(try, pt.nodeSubject(h, "fetch"), []byte{byte(p)})
		cancel()
		if err == nil && string(msg.Data) == string(replyErr)+errBusy.Error() {
			busy++
		}
		if err == nil && (len(msg.Data) == 0 || msg.Data[0] != replyOK) {
			err = fmt.Errorf("node %s: %s", h, msg.Data[min(1, len(msg.Data)):])
		}
		if err != nil {
			pt.o.Logger.Debug("cluster: fetch from", "partition", p, "holder", h, "err", err)
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		name := string(msg.Data[1:])
		pt.o.Logger.Debug("cluster: fetch from", "partition", p, "holder", h, "name", name)
		t, err := pt.await(ctx, h, inst, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", h, err))
			continue
		}
		return t, nil
	}
	if busy == len(holders) {
		return nil, fmt.Errorf("jetstream: fetch partition %d: %w: every holder is sending others", p, engine.ErrBusy)
	}
	return nil, fmt.Errorf("jetstream: fetch partition %d: %w", p, errors.Join(errs...))
}

// failedSuffix names the marker object a holder puts when it could not
// write the object it promised.
const failedSuffix = ".failed"

// await waits for the object name that node h (of process instance inst)
// is writing, and opens it.
func (pt *Partitioner) await(ctx context.Context, h, inst, name string) (*transfer, error) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		// The marker first: a put that failed late can leave the
		// object's description with its chunks purged.
		if _, err := pt.info(ctx, name+failedSuffix); err == nil {
			// The object too: a put that failed in its last wait may
			// have written it whole.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
			_ = pt.xfer.Delete(dctx, name+failedSuffix)
			_ = pt.xfer.Delete(dctx, name)
			cancel()
			return nil, errors.New("jetstream: the holder could not send it")
		}
		info, err := pt.info(ctx, name)
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, readBase+time.Duration(info.Size/readRate)*time.Second)
			res, err := pt.xfer.Get(rctx, name)
			if err != nil {
				cancel()
				return nil, err
			}
			return &transfer{ObjectResult: res, pt: pt, name: name, cancel: cancel}, nil
		} else if !errors.Is(err, jetstream.ErrObjectNotFound) && ctx.Err() == nil {
			pt.o.Logger.Debug("cluster: transfer", "name", name, "err", err)
		}
		if pt.instanceOf(h) != inst {
			return nil, errors.New("jetstream: the holder left or restarted")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// info reads object name's description, within callTimeout.
func (pt *Partitioner) info(ctx context.Context, name string) (*jetstream.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return pt.xfer.GetInfo(ctx, name)
}

// instanceOf returns node h's process instance ("" when not a member).
func (pt *Partitioner) instanceOf(h string) string {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if _, ok := pt.members[h]; !ok {
		return ""
	}
	return pt.instances[h]
}

// transfer is a partition's state being read; Close deletes it.
type transfer struct {
	jetstream.ObjectResult
	pt     *Partitioner
	name   string
	cancel context.CancelFunc // the read's deadline
}

func (t *transfer) Close() error {
	err := t.ObjectResult.Close()
	t.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(err, t.pt.xfer.Delete(ctx, t.name))
}

// Ask implements engine.Partitioner.
func (pt *Partitioner) Ask(ctx context.Context, p int, req []byte) ([]byte, error) {
	holders, err := pt.freshHolders(ctx, p, true)
	if err != nil {
		return nil, fmt.Errorf("jetstream: ask: %w", err)
	}
	if len(holders) == 0 {
		return nil, engine.ErrNoHolder
	}
	body := zstdEnc.EncodeAll(req, nil)
	var errs []error
	for _, h := range holders {
		try, cancel := context.WithTimeout(ctx, 30*time.Second)
		msg, err := pt.l.nc.RequestWithContext(try, pt.nodeSubject(h, "ask"), body)
		cancel()
		if err == nil && (len(msg.Data) == 0 || msg.Data[0] != replyOK) {
			err = fmt.Errorf("node %s: %s", h, msg.Data[min(1, len(msg.Data)):])
		}
		if err == nil {
			var out []byte
			if out, err = zstdDec.DecodeAll(msg.Data[1:], nil); err == nil {
				return out, nil
			}
		}
		errs = append(errs, fmt.Errorf("node %s: %w", h, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("jetstream: ask about partition %d: %w", p, errors.Join(errs...))
}

var (
	zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	// Answers are at most a message: the decoder needs no more.
	zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(64<<20))
)

// Serve implements engine.Partitioner.
func (pt *Partitioner) Serve(fetch func(ctx context.Context, p int, w io.Writer) error, ask func(ctx context.Context, req []byte) ([]byte, error)) (func(), error) {
	ctx, cancel := context.WithCancel(pt.ctx)
	sv := &server{maxPayload: pt.l.nc.MaxPayload}
	fetches, asks := make(chan struct{}, maxFetches), make(chan struct{}, maxAsks)
	fs, err := pt.l.nc.Subscribe(pt.nodeSubject(pt.l.opts.Node, "fetch"), sv.handler(fetches, func(m *nats.Msg) ([]byte, error) {
		if len(m.Data) != 1 || int(m.Data[0]) >= pt.o.Count {
			return nil, errors.New("jetstream: fetch: no such partition")
		}
		return nil, pt.send(ctx, m, int(m.Data[0]), fetch)
	}))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("jetstream: serve: %w", err)
	}
	as, err := pt.l.nc.Subscribe(pt.nodeSubject(pt.l.opts.Node, "ask"), sv.handler(asks, func(m *nats.Msg) ([]byte, error) {
		return answerAsk(ctx, m, ask)
	}))
	if err != nil {
		_ = fs.Unsubscribe()
		cancel()
		return nil, fmt.Errorf("jetstream: serve: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = fs.Unsubscribe()
			_ = as.Unsubscribe()
			cancel()
			sv.stop()
		})
	}, nil
}

// answerAsk decodes a question of m, asks it, and encodes the answer.
func answerAsk(ctx context.Context, m *nats.Msg, ask func(ctx context.Context, req []byte) ([]byte, error)) ([]byte, error) {
	req, err := zstdDec.DecodeAll(m.Data, nil)
	if err != nil {
		return nil, fmt.Errorf("jetstream: ask: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := ask(actx, req)
	if err != nil {
		return nil, err
	}
	return append([]byte{replyOK}, zstdEnc.EncodeAll(out, nil)...), nil
}

// server runs the handlers of Serve's requests, each on a goroutine of its
// own, at most a semaphore's capacity of each kind at once, until stop.
type server struct {
	maxPayload func() int64 // the connection's, as the server it is on says
	wg         sync.WaitGroup
	mu         sync.Mutex // guards stopped and wg.Add
	stopped    bool
}

// reply answers m with out, or with err.
func (sv *server) reply(m *nats.Msg, out []byte, err error) {
	if err != nil {
		out = append([]byte{replyErr}, err.Error()...)
	}
	if int64(len(out)) > sv.maxPayload() {
		out = append([]byte{replyErr}, fmt.Sprintf("jetstream: an answer of %d bytes, more than a message takes", len(out))...)
	}
	_ = m.Respond(out)
}

// handler runs fn for a message when sem has room (busy otherwise) and
// the server runs, and replies with what it returns (unless it replied).
func (sv *server) handler(sem chan struct{}, fn func(m *nats.Msg) ([]byte, error)) nats.MsgHandler {
	return func(m *nats.Msg) {
		select {
		case sem <- struct{}{}:
		default:
			sv.reply(m, nil, errBusy)
			return
		}
		sv.mu.Lock()
		if sv.stopped {
			sv.mu.Unlock()
			<-sem
			sv.reply(m, nil, errBusy) // the asker tries another
			return
		}
		sv.wg.Add(1)
		sv.mu.Unlock()
		go func() {
			defer sv.wg.Done()
			defer func() { <-sem }()
			out, err := fn(m)
			if !errors.Is(err, errReplied) {
				sv.reply(m, out, err)
			}
		}()
	}
}

// stop refuses new requests and waits for those under way.
func (sv *server) stop() {
	sv.mu.Lock()
	sv.stopped = true
	sv.mu.Unlock()
	sv.wg.Wait()
}

// send answers m with the name of the object it then writes partition
// p's state into, in the transfer bucket; if that fails, it puts the
// marker that tells the fetcher (failedSuffix).
func (pt *Partitioner) send(ctx context.Context, m *nats.Msg, p int, fetch func(ctx context.Context, p int, w io.Writer) error) error {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	name := "partition-" + strconv.Itoa(p) + "-" + pt.l.opts.Node + "-" + hex.EncodeToString(id[:])
	if err := m.Respond(append([]byte{replyOK}, name...)); err != nil {
		return errReplied
	}
	serving := ctx
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	// A put that takes nothing for sendStall fails on its next read, its
	// context still live (Put bounds each chunk's acknowledgement only
	// when its context has no deadline, and purges what it wrote with
	// it).
	stall := time.AfterFunc(sendStall, func() {
		pr.CloseWithError(errors.New("jetstream: sending stalled"))
		cancel()
	})
	defer stall.Stop()
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		pw.CloseWithError(fetch(ectx, p, pw))
	}()
	// A put whose reader fails deletes what it wrote.
	_, err := pt.xfer.Put(ctx, jetstream.ObjectMeta{Name: name}, progress{pr, stall})
	pr.CloseWithError(errors.New("jetstream: transfer ended"))
	<-wrote
	if err != nil {
		pt.o.Logger.Warn("cluster: send partition", "partition", p, "err", err)
		// The fetcher waits for one or the other: the marker is tried
		// for a minute (a server lost with the put comes back, or the
		// connection moves to another, within seconds), once only when
		// the node is stopping (its Close waits for this).
		within := time.Minute
		if serving.Err() != nil {
			within = callTimeout
		}
		mctx, mcancel := context.WithTimeout(context.WithoutCancel(ctx), within)
		for {
			if _, err := pt.xfer.PutBytes(mctx, name+failedSuffix, nil); err == nil || serving.Err() != nil {
				break
			}
			select {
			case <-mctx.Done():
			case <-serving.Done():
			case <-time.After(time.Second):
			}
			if mctx.Err() != nil || serving.Err() != nil {
				break
			}
		}
		mcancel()
	}
	return errReplied
}

// progress is a reader that pushes its stall timer back at each read that
// returns bytes.
type progress struct {
	r     io.Reader
	stall *time.Timer
}

func (p progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.stall.Reset(sendStall)
	}
	return n, err
}

// Held returns the partitions each live node holds, as this node last read
// them (for tests and /healthz).
func (pt *Partitioner) Held() map[string]uint64 {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	out := make(map[string]uint64, len(pt.members))
	for k, v := range pt.members {
		out[k] = v
	}
	return out
}
