package httpd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/bits"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/webstats/webstats/httpd/pages"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// Options configures the HTTP layer. A nil *Options means the defaults given
// beside each field.
type Options struct {
	// RateLimit is the number of API requests per minute allowed per API key
	// (a token bucket with a burst of as many). Default 0 means 60; a
	// negative value turns the limit off. The binary's "-rate-limit 0"
	// (off) maps to -1.
	RateLimit int
	// TrustProxy takes the client IP from X-Forwarded-For when the
	// connection comes from a trusted proxy: the right-most entry that is
	// not a trusted proxy (SPEC §13). Default false: the connection's
	// address.
	TrustProxy bool
	// TrustedProxies are the proxies whose X-Forwarded-For entries are
	// read with TrustProxy, and whose connections the per-address cap
	// (MaxConnsPerIP) exempts. Default nil: loopback and the private
	// ranges (DefaultTrustedProxies).
	TrustedProxies []netip.Prefix
	// Logger receives request and error logs. Default nil: discarded.
	Logger *slog.Logger
	// Registerer receives the metrics. Default nil: a new private registry
	// (with the Go and process collectors). /metrics serves the Registerer
	// when it is also a prometheus.Gatherer (as *prometheus.Registry and
	// prometheus.DefaultRegisterer are), else prometheus.DefaultGatherer.
	Registerer prometheus.Registerer
	// Now is the clock of the rate limits and of the import's "at most one
	// day in the future" check. Default nil: time.Now.
	Now func() time.Time
	// SecureCookies marks the statistics pages' cookies Secure: set it
	// when webstatsd is reached over HTTPS. Default false.
	SecureCookies bool
	// NoPages leaves out the statistics pages (SPEC §7). Default false:
	// they are served.
	NoPages bool
	// PublicURL is the base URL clients reach the server at
	// ("https://stats.example.org", or with a path when a proxy serves it
	// under one): the absolute links of API answers (pagination) are built
	// from it and the request's path. It must be an absolute http or https
	// URL without query or fragment; New logs and ignores another. Default
	// "": the links use the request's Host header when it is a valid
	// host[:port], else the address the connection came to.
	PublicURL string
	// BodyTimeout bounds the time to read a request body, from the moment
	// its handler starts (after the headers), on every route of this
	// package but the import: a body not complete by then answers 408.
	// Tracking bodies are tiny; a client that trickles one never ends.
	// Default 0 means 10 s; a negative value sets no deadline here (the
	// http.Server's ReadTimeout still applies).
	BodyTimeout time.Duration
	// ImportBodyTimeout is BodyTimeout for the import (up to 10 MiB, which
	// a slow link needs time for). Default 0 means 60 s; negative: none.
	ImportBodyTimeout time.Duration
	// MaxConns bounds the connections open at once on the listeners that
	// Server.Listener wraps; further ones are refused (accepted and closed
	// at once) and counted. Default 0 means three quarters of the
	// process's file descriptor limit (RLIMIT_NOFILE), at least 64 and at
	// most 16,384; negative: no cap.
	MaxConns int
	// MaxConnsPerIP bounds the open connections of one client address (an
	// IPv6 client's /64) likewise, so that one client cannot take them
	// all. With TrustProxy, trusted proxies (TrustedProxies) are not
	// capped. Default 0 means 1,000; negative: no cap.
	MaxConnsPerIP int
	// Registration is who may create an account in the browser: "closed"
	// (the default, ""), "invite" or "open" (pages.Options.Registration).
	Registration string
	// SendMail sends a plain-text email (password reset links). Default
	// nil: none.
	SendMail func(ctx context.Context, to, subject, text string) error
}

// The defaults of Options.BodyTimeout and Options.ImportBodyTimeout.
const (
	defaultBodyTimeout       = 10 * time.Second
	defaultImportBodyTimeout = 60 * time.Second
)

// Body limits, in bytes.
const (
	// maxBody bounds the body of every route that sets no other limit,
	// website bodies included: room for exclude_params and exclude_ips at
	// their limit of 65,535 characters each.
	maxBody = 256 << 10
	// maxImportBody bounds an import body (SPEC §3.4).
	maxImportBody = 10 << 20
)

// The API prefixes (SPEC §3): every endpoint is served under both.
var apiPrefixes = []string{"/public/api/v1", "/api/v1"}

// Server is the webstats HTTP handler. It is safe for concurrent use. Create
// one with New.
type Server struct {
	e      *engine.Engine
	id     *identity.Service // accounts and keys, on e's registry
	opts   Options
	log    *slog.Logger
	now    func() time.Time
	router *httprouter.Router
	// plUploads holds the one export upload read, parsed and stored at a
	// time (imports.go): each may hold its zip and rows in memory.
	plUploads chan struct{}
	// imports admits one import of events at a time into decoding and
	// tracking (importmem.go); a Server's own, so servers sharing a
	// process do not wait for each other.
	imports   chan struct{}
	publicURL string // Options.PublicURL without a trailing '/'; "" when none

	proxies   []netip.Prefix // Options.TrustedProxies or the defaults
	keyLimit  *limiter       // per account; nil when rate limiting is off
	authLimit *limiter       // failed authentications per client IP

	conns *connLimiter // the caps of Listener

	metrics *metrics
}

// New returns a Server over e. A nil opts means the defaults (see Options).
// The Server does not own e: close e after the Server is no longer used.
// Accounts and keys are e's identity.Service, opened here (identity.Open)
// when it is not yet: New fails only when it cannot be opened (its
// records cannot be read, or e is closed).
func New(e *engine.Engine, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.RateLimit == 0 {
		o.RateLimit = 60
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BodyTimeout == 0 {
		o.BodyTimeout = defaultBodyTimeout
	}
	if o.ImportBodyTimeout == 0 {
		o.ImportBodyTimeout = defaultImportBodyTimeout
	}
	if o.MaxConns == 0 {
		o.MaxConns = defaultMaxConns()
	}
	if o.MaxConnsPerIP == 0 {
		o.MaxConnsPerIP = defaultMaxConnsPerIP
	}
	id, err := identity.Open(e)
	if err != nil {
		return nil, fmt.Errorf("httpd: %w", err)
	}
	s := &Server{e: e, id: id, opts: o, log: o.Logger, now: o.Now, proxies: o.TrustedProxies, plUploads: make(chan struct{}, 1), imports: make(chan struct{}, 1)}
	if s.proxies == nil {
		s.proxies, _ = ParseProxies(DefaultTrustedProxies)
	}
	if o.PublicURL != "" {
		if err := CheckPublicURL(o.PublicURL); err != nil {
			s.log.Error("the public URL is ignored", "err", err)
		} else {
			s.publicURL = strings.TrimRight(o.PublicURL, "/")
		}
	}
	if o.RateLimit > 0 {
		s.keyLimit = newLimiter(o.RateLimit, o.Now)
	}
	s.authLimit = newLimiter(authFailuresPerMinute, o.Now)
	s.metrics = newMetrics(e, o.Registerer, o.Logger)

	r := httprouter.New()
	r.RedirectFixedPath = false // no case-insensitive guessing
	r.HandleMethodNotAllowed = true
	r.HandleOPTIONS = true
	r.GlobalOPTIONS = http.HandlerFunc(preflight)
	r.NotFound = http.HandlerFunc(s.notFound)
	r.MethodNotAllowed = http.HandlerFunc(s.methodNotAllowed)
	s.router = r
	s.routes()
	s.conns = s.newConnLimiter()
	return s, nil
}

// CheckPublicURL returns an error when u is not an absolute http or https
// URL with a valid host[:port] and without query or fragment, as
// Options.PublicURL must be.
func CheckPublicURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return fmt.Errorf("public URL %q: %w", u, err)
	case p.Scheme != "http" && p.Scheme != "https":
		return fmt.Errorf("public URL %q: want an http:// or https:// URL", u)
	case !validHost(p.Host) || p.User != nil:
		return fmt.Errorf("public URL %q: not a valid host[:port]", u)
	case p.RawQuery != "" || p.ForceQuery || p.Fragment != "" || p.Opaque != "":
		return fmt.Errorf("public URL %q: want no query or fragment", u)
	}
	return nil
}

// routes registers the API, health and metrics routes.
func (s *Server) routes() {
	s.api(http.MethodGet, "/websites", maxBody, s.listWebsites)
	s.api(http.MethodPost, "/websites", maxBody, s.createWebsite)
	s.api(http.MethodGet, "/websites/:id", maxBody, s.showWebsite)
	s.api(http.MethodPut, "/websites/:id", maxBody, s.updateWebsite)
	s.api(http.MethodPatch, "/websites/:id", maxBody, s.updateWebsite)
	s.api(http.MethodDelete, "/websites/:id", maxBody, s.deleteWebsite)
	s.api(http.MethodPost, "/websites/:id/events", maxImportBody, s.importEvents)
	s.api(http.MethodGet, "/websites/:id/events", maxBody, s.exportEvents) // export.go
	s.importsRoutes()                                                      // imports.go: Plausible's export zip
	// GET /stats/:id is registered by plausibleRoutes, beside the
	// Plausible v1 statistics.
	s.api(http.MethodGet, "/account", maxBody, s.account)
	s.plausibleRoutes() // plausible.go
	s.trackRoutes()     // POST /api/event, GET /js/script.js (track.go)
	if !s.opts.NoPages {
		p, err := pages.New(s.e, &pages.Options{
			Logger: s.log.With("component", "pages"), Now: s.now, Secure: s.opts.SecureCookies, ClientIP: s.clientIP,
			Registration: s.opts.Registration, SendMail: s.opts.SendMail, PublicURL: s.publicURL, BaseURL: s.baseURL,
			CheckLines: s.checkLines, ImportLines: s.importLines, ZipUpload: s.tryZipUpload,
		})
		if err != nil {
			// Only a failing store makes New fail; the API still works.
			s.log.Error("statistics pages are off", "err", err)
		} else {
			p.Register(s.router)
		}
	}

	s.handle(http.MethodGet, "/healthz", maxBody, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		type partitions struct {
			Count  int   `json:"count"`
			Held   []int `json:"held"`
			Ready  []int `json:"ready"` // held and caught up with: answered here
			Target []int `json:"target"`
		}
		list := func(m uint64) []int {
			out := []int{}
			for ; m != 0; m &= m - 1 {
				out = append(out, bits.TrailingZeros64(m))
			}
			return out
		}
		type cluster struct {
			Applied    uint64  `json:"applied"`
			Pending    uint64  `json:"pending"`
			LagSeconds float64 `json:"lag_seconds"`
			// Why the node's follower stopped, since its last progress:
			// its answers may be behind the cluster's.
			Error string `json:"error,omitempty"`
			// With -partitions: the partitions the node holds (it
			// answers for their websites; others' it asks their
			// holders), and those it should hold.
			Partitions *partitions `json:"partitions,omitempty"`
		}
		body := struct {
			Status  string   `json:"status"`
			Cluster *cluster `json:"cluster,omitempty"` // a node of a cluster: its replication lag
		}{Status: "ok"}
		if cm := s.e.ClusterMetrics(); cm != nil {
			body.Cluster = &cluster{Applied: cm.Applied, Pending: cm.Pending, LagSeconds: cm.Lag.Seconds(), Error: cm.FollowError}
			if cm.Partitions > 0 {
				body.Cluster.Partitions = &partitions{cm.Partitions, list(cm.Held), list(cm.Ready), list(cm.Target)}
			}
		}
		writeJSON(w, http.StatusOK, body)
	})
	s.handle(http.MethodGet, "/metrics", maxBody, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		s.metrics.handler.ServeHTTP(w, r)
	})
}

// baseURL is the address clients reach the server at, for r, without a
// trailing '/': Options.PublicURL when set, else built from the request as
// requestPath builds it (never from a Host header that is not a valid
// host[:port]).
func (s *Server) baseURL(r *http.Request) string {
	return strings.TrimSuffix(requestPath(r, s.publicURL, s.opts.TrustProxy), r.URL.EscapedPath())
}

// handle registers h for method and pattern on the router: the body is
// limited to limit bytes (reading past it fails with *http.MaxBytesError,
// which writeError answers 413) and must arrive within
// Options.BodyTimeout (Options.ImportBodyTimeout for a limit above maxBody,
// the import's), else reading it fails with errBodyTimeout (408); see
// requestBody. The request is counted in the metrics under the pattern. It must be called before the Server serves.
func (s *Server) handle(method, pattern string, limit int64, h httprouter.Handle) {
	s.router.Handle(method, pattern, func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		if st := stateOf(r.Context()); st != nil {
			st.route = pattern
		}
		timeout := s.opts.BodyTimeout
		if limit > maxBody {
			timeout = s.opts.ImportBodyTimeout
		}
		r.Body = newRequestBody(w, r, limit, timeout)
		h(w, r, p)
	})
}

// apiHandler serves an authenticated API request. It writes the answer for a
// nil error; for an error, the caller writes the error's answer.
type apiHandler func(w http.ResponseWriter, r *http.Request, c *call) error

// call is what an API handler knows of its request.
type call struct {
	account identity.Account
	params  httprouter.Params
}

// api registers an authenticated, rate-limited API route under both API
// prefixes (and HEAD beside GET).
func (s *Server) api(method, path string, limit int64, h apiHandler) {
	serve := s.apiServe(h)
	for _, prefix := range apiPrefixes {
		s.handle(method, prefix+path, limit, serve)
		if method == http.MethodGet {
			s.handle(http.MethodHead, prefix+path, limit, serve)
		}
	}
}

// apiServe adapts h to the router: the key and the rate limit are checked
// first, and an error is answered as the phpAnalytics API does.
func (s *Server) apiServe(h apiHandler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		a, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		if err := h(w, r, &call{account: a, params: p}); err != nil {
			writeError(w, r, err)
		}
	}
}

// isAPIPath reports whether path is under an API prefix.
func isAPIPath(path string) bool {
	for _, p := range apiPrefixes {
		if strings.HasPrefix(path, p) && (len(path) == len(p) || path[len(p)] == '/') {
			return true
		}
	}
	return false
}

// reqState is the per-request state the handlers leave for ServeHTTP.
type reqState struct {
	id    string       // request id
	route string       // the route pattern, for the metrics
	log   *slog.Logger // the Server's logger
}

type stateKey struct{}

func stateOf(ctx context.Context) *reqState {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	return st
}

// requestID returns the request id of r ("" outside ServeHTTP).
func requestID(r *http.Request) string {
	if st := stateOf(r.Context()); st != nil {
		return st.id
	}
	return ""
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := &reqState{id: validRequestID(r.Header.Get("X-Request-Id")), route: "unmatched", log: s.log}
	if st.id == "" {
		st.id = newRequestID()
	}
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	sw := &statusWriter{ResponseWriter: w}
	sw.Header().Set("X-Request-Id", st.id)

	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "request_id", st.id, "method", r.Method,
				"path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !sw.wrote {
				writeJSON(sw, http.StatusInternalServerError, errorBody{Message: "Server Error.", Status: http.StatusInternalServerError})
			}
		}
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		d := time.Since(start)
		s.metrics.observe(r.Method, st.route, code, d)
		s.log.Info("request", "request_id", st.id, "method", r.Method, "path", r.URL.Path,
			"route", st.route, "status", code, "duration", d)
	}()

	if isAPIPath(r.URL.Path) {
		h := sw.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", "Idempotent-Replayed, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-Request-Id")
		if r.Method == http.MethodOptions {
			st.route = "preflight"
			preflight(sw, r)
			return
		}
		if p := r.URL.Path; len(p) > 1 && p[len(p)-1] == '/' {
			// Laravel answers /websites/ as /websites; the router would
			// redirect, which API clients do not expect.
			r.URL.Path = strings.TrimRight(p, "/")
			r.URL.RawPath = ""
		}
	}
	s.router.ServeHTTP(sw, r)
}

// preflight answers a CORS preflight: any origin, the API's methods and
// headers, cached for a day.
func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, X-Requested-With, X-Request-Id")
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

// notFound answers an unknown path: under the API, only after the key and
// the rate limit are checked (401 and 429 come first).
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if isAPIPath(r.URL.Path) {
		if _, ok := s.authenticate(w, r); !ok {
			return
		}
	}
	writeError(w, r, errNotFound)
}

// methodNotAllowed answers a known path with another method (the router has
// set Allow), after the key and the rate limit under the API.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	if isAPIPath(r.URL.Path) {
		if _, ok := s.authenticate(w, r); !ok {
			return
		}
	}
	writeError(w, r, &httpError{code: http.StatusMethodNotAllowed,
		msg: fmt.Sprintf("The %s method is not supported for this route. Supported methods: %s.",
			sanitizeMethod(r.Method), w.Header().Get("Allow"))})
}

// sanitizeMethod returns method when it is a short token, else "UNKNOWN"
// (it is echoed in a message and used as a metrics label).
func sanitizeMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// validRequestID returns id when it is a sane token, else "".
func validRequestID(id string) string {
	if id == "" || len(id) > 128 {
		return ""
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return ""
		}
	}
	return id
}

// newRequestID returns 16 random hex digits.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter records the status code written.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher when the underlying writer does.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if !w.wrote {
			w.code, w.wrote = http.StatusOK, true
		}
		f.Flush()
	}
}
