package jetstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/engine/jetstream"
	"github.com/webstats/webstats/httpd"
)

// natsCluster is a JetStream cluster of real nats-server instances run in
// the test process, each with its own store directory and routes to the
// others on loopback ports.
type natsCluster struct {
	t       testing.TB
	opts    []*server.Options
	servers []*server.Server
}

// freePorts returns n loopback ports free at the time of the call.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func startNATS(t testing.TB, n int) *natsCluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	c := &natsCluster{t: t, servers: make([]*server.Server, n)}
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[n+j]))
			}
		}
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       ports[i],
			JetStream:  true,
			StoreDir:   t.TempDir(),
			Cluster:    server.ClusterOpts{Name: "webstats", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:      true,
			NoSigs:     true,
		})
	}
	if n == 1 { // a lone server, not a cluster of one
		c.opts[0].Cluster, c.opts[0].Routes = server.ClusterOpts{}, nil
	}
	for i := range n {
		c.start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			if s != nil {
				s.Shutdown()
				s.WaitForShutdown()
			}
		}
	})
	return c
}

// start starts server i (again, on the same ports and store).
func (c *natsCluster) start(i int) {
	c.t.Helper()
	o := *c.opts[i]
	s, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		c.t.Fatalf("nats server %d not ready", i)
	}
	c.servers[i] = s
}

// stop stops server i.
func (c *natsCluster) stop(i int) {
	c.servers[i].Shutdown()
	c.servers[i].WaitForShutdown()
	c.servers[i] = nil
}

// deleteStream deletes a stream through server 0 and returns the
// connection it used, which the test's cleanup closes.
func (c *natsCluster) deleteStream(t testing.TB, name string) *nats.Conn {
	t.Helper()
	conn, js := c.raw(t)
	if err := js.DeleteStream(ctx, name); err != nil {
		t.Fatal(err)
	}
	return conn
}

// raw connects to server 0 for a test's own JetStream calls; closed at
// the end of the test.
func (c *natsCluster) raw(t testing.TB) (*nats.Conn, natsjs.JetStream) {
	t.Helper()
	conn, err := nats.Connect(c.url(0), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	js, err := natsjs.New(conn)
	if err != nil {
		t.Fatal(err)
	}
	return conn, js
}

func (c *natsCluster) url(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port) }

// urls lists every server, i's first: a client reconnects to another one
// when its own goes away.
func (c *natsCluster) urls(i int) string {
	u := []string{c.url(i)}
	for j := range c.opts {
		if j != i {
			u = append(u, c.url(j))
		}
	}
	return strings.Join(u, ",")
}

// node is one engine of the cluster with its connection.
type node struct {
	e   *engine.Engine
	log *jetstream.Log
	nc  *nats.Conn
	dir string
	// pt, when the node holds some partitions only (openPartNode).
	pt     *jetstream.Partitioner
	closed bool
}

// clock is the test's time, shared by every engine.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

var ctx = context.Background()

// openNode opens an engine on dir following the cluster through urls. The
// stream and bucket may need a few tries while the cluster elects its
// leaders.
func openNode(t testing.TB, urls, dir string, clk *clock, name string) *node {
	t.Helper()
	return openNodeOn(t, urls, name, 3, clk, &engine.Options{Dir: dir, NoSync: true, SnapshotEvery: -1})
}

// openNodeOn opens an engine with o (its Now and Cluster set here).
func openNodeOn(t testing.TB, urls, name string, replicas int, clk *clock, o *engine.Options) *node {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	var log *jetstream.Log
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		log, err = jetstream.New(c, nc, jetstream.Options{Name: name, Replicas: replicas})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jetstream: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	opts := *o
	opts.Now, opts.Cluster = clk.Now, log
	e, err := engine.Open(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return &node{e: e, log: log, nc: nc, dir: o.Dir}
}

func (n *node) close(t testing.TB) {
	t.Helper()
	if n.closed {
		return
	}
	n.closed = true
	if err := n.e.Close(); err != nil {
		t.Error(err)
	}
	if n.pt != nil {
		if err := n.pt.Close(); err != nil {
			t.Error(err)
		}
	}
	n.nc.Close()
}

// addSites registers an account and its websites (each with a goal) on e:
// on one node of a cluster, whose registry goes through the log to the
// others, and on a single engine, where the ids come out the same.
func addSites(t testing.TB, e *engine.Engine, domains ...string) []uint32 {
	t.Helper()
	acc, _, err := identity.Must(e).CreateAccount(ctx, "Owner", "owner@example.org")
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint32
	for _, d := range domains {
		w, err := e.Owner(acc.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &d})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Owner(acc.ID).AddGoal(ctx, w.ID, engine.Goal{EventName: "Signup"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	return ids
}

// waitApplied waits until every engine has applied the whole stream.
func waitApplied(t testing.TB, nodes []*node) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		last, err := nodes[0].log.Last(ctx)
		if err == nil {
			done := true
			for _, n := range nodes {
				if n.e.Metrics().LogSeq < last {
					done = false
				}
			}
			if done {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes did not catch up with the stream (last %d, err %v)", last, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answers are what an engine says about a website: the 17 statistics and
// a few segment queries over the whole range.
func answers(t *testing.T, e *engine.Engine, site uint32, domain string, from, to engine.Date) map[string]any {
	t.Helper()
	out := map[string]any{}
	o := e.Unscoped()
	for _, name := range engine.StatNames() {
		p, err := o.Stat(ctx, engine.StatQuery{Website: site, Name: name, From: from, To: to, PerPage: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	tot, err := o.Totals(ctx, site, from, to)
	if err != nil {
		t.Fatal(err)
	}
	out["totals"] = tot
	for i, q := range []string{
		`"metrics":["visitors","visits","pageviews","bounce_rate","visit_duration","events"]`,
		`"metrics":["visitors","visits","bounce_rate"],"dimensions":["visit:source"],"filters":[["contains","event:page",["/"]]]`,
		`"metrics":["visitors","pageviews"],"dimensions":["time:day","visit:device"]`,
		`"metrics":["visitors","events","conversion_rate"],"dimensions":["event:goal"]`,
		`"metrics":["visitors"],"dimensions":["event:page"],"filters":[["is","event:page",["/nothing"]]],"include":{"imports":true,"total_rows":true}`,
	} {
		body := fmt.Sprintf(`{"site_id":%q,"date_range":[%q,%q],%s}`, domain, from.String(), to.String(), q)
		eq, err := engine.ParseQuery([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := o.Query(ctx, site, eq)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint("query", i)] = res
	}
	return out
}

// Three engines on a three-server JetStream cluster, tracking spread over
// all of them: once every node has applied the stream, every node gives
// the same answers as a single engine fed the same hits in the same order.
func TestClusterSameAnswers(t *testing.T) {
	nc := startNATS(t, 3)
	clk := &clock{now: bench.DefaultStart}
	var nodes []*node
	for i := range 3 {
		n := openNode(t, nc.urls(i), t.TempDir(), clk, "")
		defer n.close(t)
		nodes = append(nodes, n)
	}
	single, err := engine.Open(&engine.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	sites := []bench.Site{
		{Domain: "a.example", PageviewsPerMonth: 6_000, PagesPerDay: 40},
		{Domain: "b.example", PageviewsPerMonth: 3_000, PagesPerDay: 20},
	}
	ids := addSites(t, nodes[0].e, sites[0].Domain, sites[1].Domain)
	if got := addSites(t, single, sites[0].Domain, sites[1].Domain); !slices.Equal(got, ids) {
		t.Fatalf("website ids %v in the cluster, %v in one process", ids, got)
	}
	waitApplied(t, nodes)
	const days = 3
	k := 0
	var batch []engine.Hit
	var all []engine.Hit
	for h := range bench.NewGenerator(bench.Config{Seed: 11, Sites: sites, Days: days}).Hits() {
		all = append(all, h)
	}
	for len(all) > 0 {
		// One to three hits a call (of either website), to each node in
		// turn, and now and then an import's worth (a compressed message).
		n := 1 + k%3
		if k%100 == 99 {
			n = 400
		}
		batch = append(batch[:0], all[:min(len(all), n)]...)
		all = all[len(batch):]
		clk.set(batch[len(batch)-1].Time.Add(time.Second))
		node := nodes[k%3]
		k++
		want, err := single.Track(ctx, batch...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := node.e.Track(ctx, batch...)
		if err != nil {
			t.Fatal(err)
		}
		if got.Accepted != want.Accepted {
			t.Fatalf("hit %d: node accepted %d, a single engine %d", k, got.Accepted, want.Accepted)
		}
	}
	waitApplied(t, nodes)
	first := engine.DateFromTime(bench.DefaultStart)
	last := first + days - 1
	for i, id := range ids {
		want := answers(t, single, id, sites[i].Domain, first, last)
		if len(want["page"].(engine.Page).Rows) == 0 {
			t.Fatalf("%s: no pages counted", sites[i].Domain)
		}
		for j, n := range nodes {
			got := answers(t, n.e, id, sites[i].Domain, first, last)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s, node %d differs from a single engine (-single +node):\n%s", sites[i].Domain, j, d)
			}
		}
	}
	t.Logf("%d calls, stream at %d", k, nodes[0].e.Metrics().LogSeq)
}

// A node behind the stream's first message (trimmed by age, purged) or
// ahead of its last (stream recreated) gets ErrGap from Follow, never a
// silent skip.
func TestFollowGap(t *testing.T) {
	c := startNATS(t, 1)
	conn, err := nats.Connect(c.url(0), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	l, err := jetstream.New(ctx, conn, jetstream.Options{Name: "gap", Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := l.Publish(ctx, 1, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	follow := func(after uint64) (got []uint64, err error) {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		err = l.Follow(c, after, func(m engine.LogMessage) error {
			got = append(got, m.Seq)
			if want := 10 - m.Seq; m.Pending != want {
				t.Errorf("message %d: %d pending, want %d", m.Seq, m.Pending, want)
			}
			if m.Seq == 10 {
				return errDone
			}
			return nil
		})
		return got, err
	}
	if got, err := follow(7); err != errDone || !cmp.Equal(got, []uint64{8, 9, 10}) {
		t.Fatalf("follow after 7: %v, %v", got, err)
	}
	if err := l.PurgeBefore(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if got, err := follow(2); !errors.Is(err, jetstream.ErrGap) || len(got) != 0 {
		t.Fatalf("follow after 2 with 3..6 purged: %v, %v; want ErrGap", got, err)
	}
	if got, err := follow(6); err != errDone || len(got) != 4 {
		t.Fatalf("follow after 6: %v, %v", got, err)
	}
	if _, err := follow(12); !errors.Is(err, jetstream.ErrGap) {
		t.Fatalf("follow after 12 of a stream ending at 10: %v; want ErrGap", err)
	}
}

var errDone = errors.New("done")

// More hits of one website in one call than the log takes in one message
// are refused whole (ErrTooLarge, a 413 over HTTP): never split, so never
// half counted.
func TestClusterTooLarge(t *testing.T) {
	c := startNATS(t, 1)
	c.opts[0].MaxPayload = 32 << 10
	c.stop(0)
	c.start(0)
	clk := &clock{now: bench.DefaultStart}
	n := openNodeOn(t, c.url(0), "large", 1, clk, &engine.Options{Dir: t.TempDir(), NoSync: true})
	defer n.close(t)
	site := bench.Site{Domain: "l.example", PageviewsPerMonth: 30_000, PagesPerDay: 300}
	id := addSites(t, n.e, site.Domain)[0]
	var hits []engine.Hit
	for h := range bench.NewGenerator(bench.Config{Seed: 1, Sites: []bench.Site{site}, Days: 1, BotShare: -1}).Hits() {
		hits = append(hits, h)
	}
	clk.set(hits[len(hits)-1].Time.Add(time.Second))
	if _, err := n.e.Track(ctx, hits...); !errors.Is(err, engine.ErrTooLarge) {
		t.Fatalf("%d hits in one call: %v; want ErrTooLarge", len(hits), err)
	}
	res, err := n.e.Track(ctx, hits[:50]...)
	if err != nil || res.Accepted == 0 {
		t.Fatalf("50 hits: %+v, %v", res, err)
	}
	waitApplied(t, []*node{n})
	day := engine.DateFromTime(hits[0].Time)
	tot, err := n.e.Unscoped().Totals(ctx, id, day, day+1)
	if err != nil {
		t.Fatal(err)
	}
	if got := tot.Pageviews + tot.Events; got != uint64(res.Accepted) {
		t.Fatalf("counted %d pageviews and events, want the %d accepted of the second call only", got, res.Accepted)
	}
}

// A data directory follows one log: Open refuses it on a recreated stream
// (its positions would name other messages) and refuses a directory a
// single process wrote (its positions are its own log's).
func TestClusterWrongLog(t *testing.T) {
	c := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart.Add(time.Hour)}
	dir := t.TempDir()
	n := openNodeOn(t, c.url(0), "wrong", 1, clk, &engine.Options{Dir: dir, NoSync: true})
	n.close(t)
	// The stream is deleted and made again.
	conn := c.deleteStream(t, "WRONG_HITS")
	l, err := jetstream.New(ctx, conn, jetstream.Options{Name: "wrong", Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := engine.Open(&engine.Options{Dir: dir, NoSync: true, Now: clk.Now, Cluster: l}); !errors.Is(err, engine.ErrWrongLog) {
		if err == nil {
			e.Close()
		}
		t.Fatalf("a store that followed a deleted stream, opened on its successor: %v; want ErrWrongLog", err)
	}
	// A single process's store with hits.
	single := t.TempDir()
	e, err := engine.Open(&engine.Options{Dir: single, NoSync: true, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	addSites(t, e, "w.example")
	if res, err := e.Track(ctx, engine.Hit{URL: "https://w.example/", UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", IP: netip.MustParseAddr("8.8.8.8")}); err != nil || res.Accepted != 1 {
		t.Fatalf("track: %+v %v", res, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err := engine.Open(&engine.Options{Dir: single, NoSync: true, Now: clk.Now, Cluster: l}); !errors.Is(err, engine.ErrWrongLog) {
		if err == nil {
			e.Close()
		}
		t.Fatalf("a single process's store opened as a cluster node: %v; want ErrWrongLog", err)
	}
}

// A running node whose stream is deleted and made again stops following
// (ErrWrongLog, in /healthz's terms its follow error) instead of applying
// the new stream's messages from its old position.
func TestClusterLogRecreatedLive(t *testing.T) {
	c := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart.Add(time.Hour)}
	n := openNodeOn(t, c.url(0), "live", 1, clk, &engine.Options{Dir: t.TempDir(), NoSync: true})
	defer n.close(t)
	id := addSites(t, n.e, "r.example")[0]
	ua := "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	track := func(e *engine.Engine, k int) {
		t.Helper()
		h := engine.Hit{URL: fmt.Sprintf("https://r.example/%d", k), UserAgent: ua, IP: netip.MustParseAddr("8.8.8.8")}
		if _, err := e.Track(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	for k := range 5 {
		track(n.e, k)
	}
	waitApplied(t, []*node{n})
	c.deleteStream(t, "LIVE_HITS")
	// Another node makes the stream again and tracks 7 hits into it.
	other := openNodeOn(t, c.url(0), "live", 1, clk, &engine.Options{Dir: t.TempDir(), NoSync: true})
	defer other.close(t)
	addSites(t, other.e, "r.example")
	for k := range 7 {
		track(other.e, 10+k)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cm := n.e.ClusterMetrics()
		if strings.Contains(cm.FollowError, engine.ErrWrongLog.Error()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node did not notice its stream was made again: %+v", cm)
		}
		time.Sleep(20 * time.Millisecond)
	}
	day := engine.DateFromTime(clk.Now())
	tot, err := n.e.Unscoped().Totals(ctx, id, day, day)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Pageviews != 5 {
		t.Fatalf("the node counted %d pageviews, want its 5: it applied messages of the new stream", tot.Pageviews)
	}
}

// /healthz and /metrics of a node say where it stands in its cluster.
func TestClusterHealthz(t *testing.T) {
	c := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart.Add(time.Hour)}
	n := openNodeOn(t, c.url(0), "health", 1, clk, &engine.Options{Dir: t.TempDir(), NoSync: true})
	defer n.close(t)
	addSites(t, n.e, "h.example")
	ua := "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	for i := range 5 {
		h := engine.Hit{URL: fmt.Sprintf("https://h.example/%d", i), UserAgent: ua, IP: netip.MustParseAddr("8.8.8.8")}
		if _, err := n.e.Track(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	waitApplied(t, []*node{n})
	srv := httptest.NewServer(httpd.New(n.e, nil))
	defer srv.Close()
	get := func(path string) string {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	var health struct {
		Status  string
		Cluster *struct {
			Applied, Pending uint64
			LagSeconds       float64 `json:"lag_seconds"`
		}
	}
	if err := json.Unmarshal([]byte(get("/healthz")), &health); err != nil {
		t.Fatal(err)
	}
	// 5 hits and 4 registry transactions: the account, the website, its
	// goal, and the server secret httpd.New asks for.
	const msgs = 9
	if last, err := n.log.Last(ctx); err != nil || last != msgs {
		t.Fatalf("the stream holds %d messages (%v), want %d", last, err, msgs)
	}
	if health.Status != "ok" || health.Cluster == nil || health.Cluster.Applied != msgs || health.Cluster.Pending != 0 || health.Cluster.LagSeconds != 0 {
		t.Fatalf("/healthz of a caught-up node after %d messages: %+v %+v", msgs, health, health.Cluster)
	}
	m := get("/metrics")
	for _, want := range []string{"webstats_cluster_applied_sequence 9", "webstats_cluster_pending_messages 0", "webstats_cluster_publishes_total 9", "webstats_cluster_publish_errors_total 0"} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
