package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd"
	"github.com/webstats/webstats/httpd/internal/report"
)

// adminEmail is the account serve creates on a data directory without any.
const adminEmail = "admin@localhost"

// adminKeyFile is the file, in the data directory, that holds the first
// account's API key.
const adminKeyFile = "admin.key"

// The http.Server limits (see the httpd package documentation). ReadTimeout
// is 60s rather than 30s: a 10 MiB import must get through a slow link (the
// other bodies have 10 s, httpd.Options.BodyTimeout). An idle keep-alive
// connection holds a file descriptor and a place under -max-conns: 30 s is
// enough for a page's next hits and for API clients.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 60 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 30 * time.Second
	maxHeaderBytes    = 64 << 10
)

func (c *cli) serveCmd(fs *flag.FlagSet) func(context.Context) error {
	cfg := new(Config)
	cfg.RegisterFlags(fs)
	return func(ctx context.Context) error {
		if err := cfg.Validate(); err != nil {
			return &usageError{msg: err.Error()}
		}
		return run(ctx, cfg, c.stdout, c.newLogger(cfg))
	}
}

// newLogger returns the logger cfg asks for, writing to stderr, with
// repeated warnings and errors limited (defaultFloodLimits). cfg must be
// valid.
func (c *cli) newLogger(cfg *Config) *slog.Logger {
	level, _ := cfg.logLevel()
	ho := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(c.stderr, ho)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(c.stderr, ho)
	}
	return slog.New(newFloodHandler(h, defaultFloodLimits))
}

// memoryHeadroom is what -memory-budget adds for the runtime's soft
// memory limit: today's data and requests in flight. (Pebble's cache and
// memtables, a sixteenth of the budget each, are outside the Go heap.)
const memoryHeadroom = 48 << 20

// run serves webstats as cfg says until ctx is cancelled, then stops
// accepting connections, lets the requests in flight finish (for at most
// cfg.ShutdownTimeout), and closes the engine, which writes a final
// snapshot. On a data directory without an account it creates one and
// prints its API key on stdout. cfg must be valid.
func run(ctx context.Context, cfg *Config, stdout io.Writer, log *slog.Logger) (err error) {
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("-cpuprofile: %w", cerr)
			}
		}()
	}
	salt, _ := engine.ParseSaltPeriod(cfg.SaltPeriod)
	if cfg.MemoryBudget > 0 && os.Getenv("GOMEMLIMIT") == "" {
		// The budget bounds what the engine keeps of closed days; the
		// runtime's soft limit makes the collector run before the heap
		// doubles on top of it (today's rows, requests in flight).
		debug.SetMemoryLimit(int64(cfg.MemoryBudget) + memoryHeadroom)
	}
	snapEvery := cfg.SnapshotEvery
	if snapEvery == 0 {
		snapEvery = -1 // the engine's "off"; its 0 means the default
	}
	eo := &engine.Options{
		Dir:           cfg.Data,
		SaltPeriod:    salt,
		GeoIP:         cfg.GeoIP,
		SnapshotEvery: snapEvery,
		MemoryBudget:  int64(cfg.MemoryBudget),
		Retention:     cfg.Retention,
		MaxValues:     cfg.MaxValues,
		Logger:        log.With("component", "engine"),
	}
	if cfg.Sync == "interval" {
		eo.SyncInterval = cfg.SyncInterval
	}
	var node *clusterNode
	if cfg.Cluster.enabled() {
		var err error
		if node, err = startCluster(ctx, &cfg.Cluster, cfg.Data, log); err != nil {
			return err
		}
		defer node.close() // after e.Close below
		eo.Cluster = node.log
		if node.pt != nil {
			eo.Partitions = node.pt
		}
		// A new node (no store yet) starts from the cluster's seed.
		if err := startFrom(ctx, node.log, cfg.Data, log); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		if err := recordStart(ctx, node.log, cfg.Data, log.With("component", "trim")); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	e, err := engine.Open(eo)
	if err != nil {
		return openError(cfg.Data, err)
	}
	// From here on, every way out closes e. Identity (accounts, keys,
	// sessions) attaches to its registry now, so that a corrupt record
	// stops the start with its error.
	if _, err := identity.Open(e); err != nil {
		return errors.Join(openError(cfg.Data, err), e.Close())
	}
	if err := firstAccount(ctx, e, cfg.Data, stdout, log); err != nil {
		return errors.Join(err, e.Close())
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(err, e.Close())
	}
	proxies, _ := httpd.ParseProxies(cfg.TrustedProxies) // checked by Validate
	if proxies == nil {
		proxies = []netip.Prefix{} // an empty list: no proxy is trusted
	}
	rateLimit := cfg.RateLimit
	if rateLimit == 0 {
		rateLimit = -1 // httpd's "off"; its 0 means the default
	}
	h, err := httpd.New(e, &httpd.Options{
		RateLimit:  rateLimit,
		TrustProxy: cfg.TrustProxy, TrustedProxies: proxies,
		Logger: log.With("component", "http"),
		// Behind HTTPS (a public URL says so), page cookies are Secure.
		SecureCookies: strings.HasPrefix(cfg.Mail.PublicURL, "https://"),
		PublicURL:     cfg.Mail.PublicURL,
		MaxConns:      cfg.MaxConns,
		MaxConnsPerIP: cfg.MaxConnsPerIP,
		Registration:  cfg.Registration,
		SendMail:      report.Mailer(cfg.Mail.options(report.Weekly, log).SMTP, cfg.Mail.PublicURL),
	})
	if err != nil {
		return errors.Join(err, ln.Close(), e.Close())
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(h.Listener(ln)) }()
	log.Info("webstatsd listening", "addr", ln.Addr().String(), "data", cfg.Data)
	// The start-up's pages of the binary leave the resident set (issue #41).
	if n, err := releaseBinaryPages(); err != nil {
		log.Debug("could not release the binary's start-up pages", "err", err)
	} else {
		log.Debug("released the binary's start-up pages", "bytes", n)
	}

	var bg sync.WaitGroup
	bgCtx, stopBg := context.WithCancel(ctx)
	if cfg.BackupEvery > 0 {
		bg.Go(func() { backupLoop(bgCtx, e, cfg.BackupDir, cfg.BackupEvery, log) })
	}
	if node != nil && cfg.Cluster.SeedEvery > 0 {
		bg.Go(func() { seedLoop(bgCtx, e, node.log, cfg.Data, cfg.Cluster.SeedEvery, log.With("component", "seed")) })
	}
	if node != nil {
		bg.Go(func() { trimLoop(bgCtx, e, node.log, trimEvery, log.With("component", "trim")) })
	}
	if cfg.Reports == "off" {
		log.Info("email reports are off (-reports off)")
	} else {
		p, _ := report.ParsePeriod(cfg.Reports) // checked by Validate
		sched := report.NewScheduler(e, cfg.Mail.options(p, log.With("component", "report")))
		bg.Go(func() { sched.Run(bgCtx) })
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down", "cause", context.Cause(ctx))
		err = nil
	case err = <-served: // the listener failed
		err = fmt.Errorf("serve: %w", err)
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutCtx); serr != nil {
		log.Warn("requests still in flight at the shutdown timeout; closing their connections", "err", serr)
		srv.Close()
	}
	stopBg()
	bg.Wait()
	if cerr := e.Close(); cerr != nil {
		return errors.Join(err, fmt.Errorf("close: %w", cerr))
	}
	log.Info("webstatsd stopped")
	return err
}

// firstAccount creates the admin account on an engine without accounts:
// its key is printed on stdout, once, and written to dir/admin.key.
func firstAccount(ctx context.Context, e *engine.Engine, dir string, stdout io.Writer, log *slog.Logger) error {
	if len(identity.Must(e).Accounts(ctx)) > 0 {
		return nil
	}
	_, key, err := identity.Must(e).CreateAccount(ctx, "admin", adminEmail)
	var verr *engine.ValidationError
	if errors.As(err, &verr) && len(identity.Must(e).Accounts(ctx)) > 0 {
		// Cluster mode: another node, started at the same time, made it.
		log.Info("the first account was created by another node of the cluster")
		return nil
	}
	if err != nil {
		return fmt.Errorf("create the first account: %w", err)
	}
	path := filepath.Join(dir, adminKeyFile)
	log.Info("created the first account; its API key is printed on stdout, this once, and saved in "+path,
		"email", adminEmail, "key_file", path)
	fmt.Fprintln(stdout, key)
	// The key is out on stdout already: a failure here must not stop the
	// server, which would leave an account whose key nobody saw again.
	if err := writeKeyFile(path, key); err != nil {
		log.Error("could not save the API key; keep the one printed on stdout", "err", err)
	}
	return nil
}

// writeKeyFile writes key to path, readable by its owner only.
func writeKeyFile(path, key string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, key+"\n")
	return errors.Join(err, f.Chmod(0o600), f.Sync(), f.Close())
}

// backupLoop writes a backup of e into a new subdirectory of dir every
// interval until ctx is done. The subdirectories are named
// webstats-YYYYMMDDTHHMMSS.mmmZ (UTC), so they sort by time; old ones are
// not removed.
func backupLoop(ctx context.Context, e *engine.Engine, dir string, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			to := filepath.Join(dir, "webstats-"+now.UTC().Format("20060102T150405.000Z"))
			start := time.Now()
			err := os.MkdirAll(dir, 0o750)
			if err == nil {
				err = e.Backup(ctx, to)
			}
			if err != nil {
				log.Error("backup failed", "dir", to, "err", err)
				continue
			}
			log.Info("backup written", "dir", to, "duration", time.Since(start))
		}
	}
}
