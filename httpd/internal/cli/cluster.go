package cli

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/jetstream"
)

// Cluster is serve's cluster mode (SPEC §12, README "Running a cluster"):
// the node follows a shared log on NATS JetStream, either a NATS cluster
// run apart (-nats) or NATS servers run inside the webstatsd processes
// (-nats-embed with -nats-cluster and -nats-routes).
type Cluster struct {
	NATS     string // -nats: URL[,URL] of NATS servers with JetStream; "" and no -nats-embed: one process
	Creds    string // -nats-creds: credentials file for -nats
	Embed    string // -nats-embed: client host:port of a NATS server run in this process
	Listen   string // -nats-cluster: route host:port of the embedded server
	Routes   string // -nats-routes: route URLs of the other embedded servers
	Dir      string // -nats-dir: the embedded server's JetStream store (default <data>/nats)
	Replicas int    // -nats-replicas: copies of the log
	// -nats-seed-every: how old the cluster's seed may get before a node
	// puts a new one (0: this node puts none)
	SeedEvery time.Duration
	// -partitions: partitions the websites are spread over (0: every
	// node holds every website); -partition-owners: nodes holding each
	Partitions, Owners int
}

// RegisterFlags registers the cluster flags on fs.
func (c *Cluster) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.NATS, "nats", "", "cluster mode: `URLs` (comma-separated) of NATS servers with JetStream that hold the shared log; empty (and no -nats-embed): one process")
	fs.StringVar(&c.Creds, "nats-creds", "", "`file` of NATS user credentials (JWT and seed) for -nats")
	fs.StringVar(&c.Embed, "nats-embed", "", "cluster mode: run a NATS server in this process, its clients on `host:port` (with -nats-cluster and -nats-routes for a cluster of such processes)")
	fs.StringVar(&c.Listen, "nats-cluster", "", "the embedded NATS server's route `host:port`, which the other processes' -nats-routes name")
	fs.StringVar(&c.Routes, "nats-routes", "", "route `URLs` (nats://host:port, comma-separated) of the other processes' embedded NATS servers")
	fs.StringVar(&c.Dir, "nats-dir", "", "`directory` of the embedded NATS server's JetStream store (default: <data>/nats)")
	fs.IntVar(&c.Replicas, "nats-replicas", 0, "copies of the shared log and salts (default 3; 1 with a lone embedded server)")
	fs.IntVar(&c.Partitions, "partitions", 0, "cluster mode: spread the websites over `N` partitions (1 to 64, the same on every node), each held by -partition-owners nodes, which the others ask for its statistics; 0: every node holds every website")
	fs.IntVar(&c.Owners, "partition-owners", 2, "with -partitions: how many nodes hold each partition (fewer while fewer are up)")
	fs.DurationVar(&c.SeedEvery, "nats-seed-every", defaultSeedEvery, "put a seed (a copy of this node's store, from which a new node starts) when the cluster's latest is older than `duration`; 0: this node puts none")
}

// validate checks the cluster flags.
func (c *Cluster) validate() error {
	switch {
	case c.Embed == "" && (c.Listen != "" || c.Routes != "" || c.Dir != ""):
		return errors.New("-nats-cluster, -nats-routes and -nats-dir need -nats-embed")
	case c.Routes != "" && c.Listen == "":
		return errors.New("-nats-routes needs -nats-cluster")
	case c.Replicas < 0:
		return fmt.Errorf("-nats-replicas %d: want 1 or more", c.Replicas)
	case c.SeedEvery < 0 || c.SeedEvery > 0 && c.SeedEvery < minSeedEvery:
		return fmt.Errorf("-nats-seed-every %v: want 0 or at least %v", c.SeedEvery, minSeedEvery)
	case c.Creds != "" && c.NATS == "":
		return errors.New("-nats-creds needs -nats")
	case c.Partitions < 0 || c.Partitions > engine.MaxPartitions:
		return fmt.Errorf("-partitions %d: want 0 to %d", c.Partitions, engine.MaxPartitions)
	case c.Partitions > 0 && !c.enabled():
		return errors.New("-partitions needs -nats or -nats-embed")
	case c.Owners < 1:
		return fmt.Errorf("-partition-owners %d: want 1 or more", c.Owners)
	}
	for _, a := range []struct{ flag, addr string }{{"-nats-embed", c.Embed}, {"-nats-cluster", c.Listen}} {
		if a.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%s %q: want host:port", a.flag, a.addr)
		}
	}
	return nil
}

// enabled reports whether serve runs as a cluster node.
func (c *Cluster) enabled() bool { return c.NATS != "" || c.Embed != "" }

// clusterNode is what serve runs for cluster mode: the embedded server, if
// any, the connection and the log.
type clusterNode struct {
	srv *server.Server
	nc  *nats.Conn
	log *jetstream.Log
	pt  *jetstream.Partitioner // with -partitions
}

// joinWait bounds how long serve waits for the NATS cluster to take the
// stream (the other processes may start later).
const joinWait = 2 * time.Minute

// nodeFile names the file of the data directory that keeps the node's
// name in the cluster (jetstream.Options.Node) across restarts.
const nodeFile = "webstats-node"

// nodeName returns the node's name kept in data, making one the first
// time.
func nodeName(data string) (string, error) {
	path := filepath.Join(data, nodeFile)
	b, err := os.ReadFile(path)
	if err == nil && len(bytes.TrimSpace(b)) == 32 {
		if _, herr := hex.DecodeString(string(bytes.TrimSpace(b))); herr == nil {
			return string(bytes.TrimSpace(b)), nil
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("cluster: node name: %w", err)
	}
	var id [16]byte
	if _, err := crand.Read(id[:]); err != nil {
		return "", err
	}
	name := hex.EncodeToString(id[:])
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", fmt.Errorf("cluster: node name: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(name+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("cluster: node name: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("cluster: node name: %w", err)
	}
	return name, nil
}

// startCluster starts the embedded server (if asked), connects and finds
// or creates the stream and buckets.
func startCluster(ctx context.Context, c *Cluster, data string, log *slog.Logger) (*clusterNode, error) {
	n := new(clusterNode)
	var urls []string
	if c.NATS != "" {
		urls = strings.Split(c.NATS, ",")
	}
	replicas := c.Replicas
	if c.Embed != "" {
		host, port, _ := net.SplitHostPort(c.Embed)
		o := &server.Options{
			Host:      host,
			JetStream: true,
			StoreDir:  c.Dir,
			NoSigs:    true,
		}
		fmt.Sscan(port, &o.Port)
		if o.StoreDir == "" {
			o.StoreDir = filepath.Join(data, "nats")
		}
		if c.Listen != "" {
			// A stable name: JetStream's peers are known by it across
			// restarts.
			o.ServerName = "webstats-" + c.Listen
			ch, cp, _ := net.SplitHostPort(c.Listen)
			o.Cluster = server.ClusterOpts{Name: "webstats", Host: ch}
			fmt.Sscan(cp, &o.Cluster.Port)
			if c.Routes != "" {
				o.Routes = server.RoutesFromStr(c.Routes)
			}
		} else if replicas == 0 {
			replicas = 1 // a lone server
		}
		s, err := server.NewServer(o)
		if err != nil {
			return nil, fmt.Errorf("nats-embed: %w", err)
		}
		s.SetLoggerV2(natsLogger{log.With("component", "nats")}, false, false, false)
		go s.Start()
		if !s.ReadyForConnections(30 * time.Second) {
			s.Shutdown()
			return nil, errors.New("nats-embed: the NATS server did not start within 30 s")
		}
		n.srv = s
		urls = append([]string{s.ClientURL()}, urls...)
		log.Info("embedded NATS server started", "clients", s.ClientURL(), "routes", c.Routes, "store", o.StoreDir)
	}
	opts := []nats.Option{nats.Name("webstatsd"), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond), nats.ReconnectBufSize(-1)}
	if c.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	var err error
	if n.nc, err = nats.Connect(strings.Join(urls, ","), opts...); err != nil {
		n.close()
		return nil, fmt.Errorf("nats: %w", err)
	}
	name, err := nodeName(data)
	if err != nil {
		n.close()
		return nil, err
	}
	deadline := time.Now().Add(joinWait)
	for {
		try, cancel := context.WithTimeout(ctx, 5*time.Second)
		n.log, err = jetstream.New(try, n.nc, jetstream.Options{Replicas: replicas, Node: name})
		if err == nil && c.Partitions > 0 {
			n.pt, err = jetstream.NewPartitioner(try, n.log, jetstream.PartitionOptions{
				Count: c.Partitions, Owners: c.Owners, Logger: log.With("component", "partitions"),
			})
		}
		cancel()
		if err == nil {
			return n, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			n.close()
			return nil, fmt.Errorf("cluster: %w", err)
		}
		log.Info("waiting for the NATS cluster to take the shared log (the other nodes may not be up yet)", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// close closes the connection and stops the embedded server, once the
// engine is closed.
func (n *clusterNode) close() {
	if n == nil {
		return
	}
	if n.pt != nil {
		_ = n.pt.Close() // leaves the members: the others take its partitions
	}
	if n.nc != nil {
		n.nc.Close()
	}
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
	}
}

// natsLogger sends the embedded server's log to serve's.
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warn(fmt.Sprintf(format, v...)) }
func (n natsLogger) Fatalf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Errorf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Debugf(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Tracef(format string, v ...any)  {}
