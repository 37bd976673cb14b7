package httpd

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Connection limits (SPEC §13); see Options.MaxConns and
// Options.MaxConnsPerIP.
const (
	// defaultMaxConnsPerIP is the default of Options.MaxConnsPerIP. It is
	// generous because many visitors can share one address (carrier NAT,
	// offices), each holding a keep-alive connection for a while after a
	// hit; it still keeps one client from taking every connection.
	defaultMaxConnsPerIP = 1000
	// maxDefaultConns caps the default of Options.MaxConns on machines
	// with a very high file descriptor limit: each connection costs memory
	// too. One whose handler waits for a slow body holds a goroutine stack
	// and net/http's buffers and request: about 26 KiB live, and about
	// 42 KiB of RSS with the garbage collector's headroom (measured with
	// 15,000 slow tracking bodies), so 16,384 take about 650 MiB.
	maxDefaultConns = 16384
	// minDefaultConns is the least default of Options.MaxConns.
	minDefaultConns = 64
	// refusedLogEvery is how often, at most, a refusal is logged (per
	// reason); every refusal is counted in the metrics.
	refusedLogEvery = time.Minute
)

// defaultMaxConns is the default of Options.MaxConns: three quarters of
// the soft RLIMIT_NOFILE (the rest is for the store, which keeps up to
// about a thousand files open, the logs and the listeners), between
// minDefaultConns and maxDefaultConns; maxDefaultConns where the limit
// cannot be read.
func defaultMaxConns() int {
	n, ok := fileLimit()
	if !ok {
		return maxDefaultConns
	}
	return int(min(max(n/4*3, minDefaultConns), maxDefaultConns))
}

// refusal reasons, as the metrics label them.
const (
	refusedMaxConns      = "max_conns"
	refusedMaxConnsPerIP = "max_conns_per_ip"
)

// connLimiter counts the open connections of a Server's listeners, in total
// and per client address. Its per-address map holds only addresses with an
// open connection, so it is bounded by maxConns.
type connLimiter struct {
	maxConns, maxPerIP int                   // <= 0: no cap
	exempt             func(netip.Addr) bool // no per-address cap for these peers (trusted proxies with TrustProxy); nil: none
	metrics            *metrics
	log                func(reason string, peer netip.Addr)

	mu      sync.Mutex
	open    int                // guarded by mu
	perIP   map[netip.Addr]int // open connections by clientKey; guarded by mu
	lastLog [2]time.Time       // last refusal logged, by reason; guarded by mu
}

// newConnLimiter returns the limiter of s's options, its gauges registered.
func (s *Server) newConnLimiter() *connLimiter {
	o := &s.opts
	l := &connLimiter{maxConns: o.MaxConns, maxPerIP: o.MaxConnsPerIP,
		metrics: s.metrics, perIP: make(map[netip.Addr]int),
		log: func(reason string, peer netip.Addr) {
			s.log.Warn("refusing connections (logged at most once a minute; counted in webstats_http_connections_refused_total)",
				"reason", reason, "peer", peer, "max_conns", o.MaxConns, "max_conns_per_ip", o.MaxConnsPerIP)
		}}
	if o.TrustProxy {
		l.exempt = s.trustedProxy
	}
	s.metrics.connGauges(l, o.MaxConns, s.log)
	return l
}

// clientKey is the address a per-client cap counts under: the address, or
// its /64 for IPv6 (one host usually holds a whole /64).
func clientKey(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// acquire counts a new connection from peer, or reports why it is refused.
func (l *connLimiter) acquire(peer netip.Addr) (key netip.Addr, refused string) {
	key = clientKey(peer)
	capped := l.maxPerIP > 0 && !(l.exempt != nil && l.exempt(peer.Unmap().WithZone("")))
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.maxConns > 0 && l.open >= l.maxConns:
		refused = refusedMaxConns
	case capped && l.perIP[key] >= l.maxPerIP:
		refused = refusedMaxConnsPerIP
	default:
		l.open++
		l.perIP[key]++
		return key, ""
	}
	i := 0
	if refused == refusedMaxConnsPerIP {
		i = 1
	}
	if now := time.Now(); now.Sub(l.lastLog[i]) >= refusedLogEvery {
		l.lastLog[i] = now
		l.log(refused, peer)
	}
	return key, refused
}

// release uncounts a connection of key.
func (l *connLimiter) release(key netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if n := l.perIP[key] - 1; n > 0 {
		l.perIP[key] = n
	} else {
		delete(l.perIP, key)
	}
}

// openConns returns the number of open connections.
func (l *connLimiter) openConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Listener returns ln with the Server's connection caps (Options.MaxConns
// and Options.MaxConnsPerIP): a connection beyond them is accepted and
// closed at once, and counted in
// webstats_http_connections_refused_total by reason. Serve the Server on the
// returned listener (http.Server.Serve). The caps count the connections of
// every listener a Server returns together.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, l: s.conns}
}

// limitListener is a net.Listener under a connLimiter.
type limitListener struct {
	net.Listener
	l *connLimiter
}

// Accept returns the next connection within the caps, closing the others.
func (ln *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var peer netip.Addr
		if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			peer = ta.AddrPort().Addr()
		}
		key, refused := ln.l.acquire(peer)
		if refused == "" {
			return &limitConn{Conn: c, l: ln.l, key: key}, nil
		}
		ln.l.metrics.refused.WithLabelValues(refused).Inc()
		// No answer: the request is not read yet, and clients take an
		// answer before their request for a broken connection anyway.
		_ = c.Close()
	}
}

// limitConn is a connection counted by a connLimiter until it is closed.
type limitConn struct {
	net.Conn
	l      *connLimiter
	key    netip.Addr
	closed atomic.Bool
}

func (c *limitConn) Close() error {
	if !c.closed.Swap(true) {
		c.l.release(c.key)
	}
	return c.Conn.Close()
}
