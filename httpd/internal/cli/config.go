package cli

import (
	"flag"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd"
	"github.com/webstats/webstats/httpd/internal/report"
)

// defaultData is the default data directory of every command.
const defaultData = "./webstats-data"

// Config is the configuration of serve: one field per flag. The defaults
// are those RegisterFlags gives.
//
// To add a setting (the email reports of SPEC §8 will add -reports,
// -smtp-addr, -smtp-user, -smtp-pass, -smtp-from and -public-url): add a
// field here, register its flag in RegisterFlags (which makes its
// environment variable and its usage line), check it in Validate, and use it
// in serve. Commands that need the same setting (report) register the same
// flag name and so read the same environment variable.
type Config struct {
	Addr       string // -addr: listen address
	Data       string // -data: data directory
	RateLimit  int    // -rate-limit: API requests per minute per key; 0 = off
	TrustProxy bool   // -trust-proxy: client IP from X-Forwarded-For
	// TrustedProxies is -trusted-proxies: the proxies whose
	// X-Forwarded-For entries -trust-proxy reads (CIDR,…).
	TrustedProxies string

	SaltPeriod string // -salt-period: day, week or month
	GeoIP      string // -geoip: path of an .mmdb; "" = embedded countries

	MaxConns      int // -max-conns: open connections; 0 = from the file limit, < 0 = no cap
	MaxConnsPerIP int // -max-conns-per-ip: open connections per client address; 0 = 1,000, < 0 = no cap

	// Sync is -sync: when a write is acknowledged: "always" (once synced
	// to disk) or "interval" (once written to the operating system; the
	// log is synced every SyncInterval).
	Sync         string
	SyncInterval time.Duration // -sync-interval: with -sync interval, how often the log is synced

	SnapshotEvery time.Duration // -snapshot-every: 0 = only at shutdown
	MemoryBudget  ByteSize      // -memory-budget: bytes of closed days and visitor state kept resident; 0 = no cap
	Retention     int           // -retention: days kept; 0 = all
	MaxValues     int           // -max-values: distinct values per dimension and day; further ones count as "(other)"

	BackupEvery time.Duration // -backup-every: 0 = no periodic backups
	BackupDir   string        // -backup-dir: where periodic backups go

	ShutdownTimeout time.Duration // -shutdown-timeout: how long to drain requests

	LogLevel  string // -log-level: debug, info, warn or error
	LogFormat string // -log-format: text or json

	Reports string // -reports: weekly, monthly or off
	Mail    Mail   // -smtp-*, -public-url

	Registration string // -registration: closed, invite or open

	CPUProfile string // -cpuprofile: file of a CPU profile from start to a clean stop

	Cluster Cluster // -nats*: cluster mode
}

// Mail is the mail setup shared by serve and report.
type Mail struct {
	SMTPAddr  string // -smtp-addr: host:port; "" = reports off
	SMTPUser  string // -smtp-user
	SMTPPass  string // -smtp-pass
	SMTPFrom  string // -smtp-from
	PublicURL string // -public-url: base URL of the statistics pages
}

// RegisterFlags registers the mail flags on fs.
func (m *Mail) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&m.SMTPAddr, "smtp-addr", "", "SMTP server (`host:port`) for email reports; STARTTLS when offered, implicit TLS on port 465; empty = no reports")
	fs.StringVar(&m.SMTPUser, "smtp-user", "", "SMTP user (AUTH PLAIN, only over TLS or to loopback)")
	fs.StringVar(&m.SMTPPass, "smtp-pass", "", "SMTP password")
	fs.StringVar(&m.SMTPFrom, "smtp-from", "", "From address of the reports (default: -smtp-user, or webstats@<public host>)")
	fs.StringVar(&m.PublicURL, "public-url", "", "public base `URL` of this server (e.g. https://stats.example.org), for the links in reports and API answers")
}

// options returns the report options of m for period p.
func (m *Mail) options(p report.Period, log *slog.Logger) report.Options {
	return report.Options{
		Period:    p,
		SMTP:      report.SMTP{Addr: m.SMTPAddr, User: m.SMTPUser, Pass: m.SMTPPass, From: m.SMTPFrom},
		PublicURL: strings.TrimRight(m.PublicURL, "/"),
		Logger:    log,
	}
}

// RegisterFlags registers the flags of serve on fs, bound to the fields of
// cfg, with their defaults.
func (cfg *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen `address` (host:port)")
	fs.StringVar(&cfg.Data, "data", defaultData, "data `directory` (a Pebble store, created if missing)")
	fs.IntVar(&cfg.RateLimit, "rate-limit", 60, "API requests per minute per API key; 0 turns the limit off")
	fs.BoolVar(&cfg.TrustProxy, "trust-proxy", false, "take the client IP from X-Forwarded-For (behind a reverse proxy): the right-most entry that is not a trusted proxy")
	fs.StringVar(&cfg.TrustedProxies, "trusted-proxies", httpd.DefaultTrustedProxies, "with -trust-proxy, the proxies (`CIDR,…` or addresses) whose connections and X-Forwarded-For entries are trusted")
	fs.IntVar(&cfg.MaxConns, "max-conns", 0, "open connections at most; more are refused (closed at once); 0: three quarters of the open-file limit (at least 64, at most 16384); -1: no cap")
	fs.IntVar(&cfg.MaxConnsPerIP, "max-conns-per-ip", 0, "open connections per client address (IPv6: per /64) at most; 0: 1000; -1: no cap (with -trust-proxy, private and loopback peers are not capped)")
	fs.StringVar(&cfg.SaltPeriod, "salt-period", "day", "how long a visitor stays the same visitor: day, week or month")
	fs.StringVar(&cfg.GeoIP, "geoip", "", "`path` of a MaxMind or DB-IP .mmdb (City or Country); default: embedded countries, no cities")
	fs.StringVar(&cfg.Sync, "sync", "always", "when a hit, an import or a registry write is acknowledged: always (once synced to disk, fsync) or interval (once written to the operating system: a crash of the process loses nothing, a power loss at most the last -sync-interval)")
	fs.DurationVar(&cfg.SyncInterval, "sync-interval", 100*time.Millisecond, "with -sync interval, how often the write-ahead log is synced to disk")
	fs.DurationVar(&cfg.SnapshotEvery, "snapshot-every", 30*time.Second, "snapshot interval; 0 snapshots only at shutdown")
	fs.Var(&cfg.MemoryBudget, "memory-budget", "`bytes` of closed days and visitor state kept in memory (e.g. 512MiB, 2GB); 0 = no cap")
	fs.IntVar(&cfg.Retention, "retention", 0, "keep this many `days` of statistics; 0 keeps everything")
	fs.IntVar(&cfg.MaxValues, "max-values", engine.DefaultMaxValues, "distinct values a website keeps per dimension and day (pages, referrers, ...); further new values count as \"(other)\"; -1: no limit")
	fs.DurationVar(&cfg.BackupEvery, "backup-every", 0, "write a backup into a timestamped subdirectory of -backup-dir this often; 0 = never")
	fs.StringVar(&cfg.BackupDir, "backup-dir", "", "`directory` of the periodic backups")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long to let requests in flight finish")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&cfg.Reports, "reports", "weekly", "email reports to owners of websites with email = 1: weekly, monthly or off")
	fs.StringVar(&cfg.Registration, "registration", "closed", "who may create an account in the browser: closed (admins and the CLI only), invite (with an admin's invitation link) or open (anyone)")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile (for go tool pprof) of the whole run, from start to a clean stop (SIGINT/SIGTERM), to this `file`; none after a crash")
	cfg.Mail.RegisterFlags(fs)
	cfg.Cluster.RegisterFlags(fs)
}

// Validate checks the values that the flag types do not.
func (cfg *Config) Validate() error {
	switch {
	case cfg.Addr == "":
		return fmt.Errorf("-addr is empty")
	case cfg.Data == "":
		return fmt.Errorf("-data is empty")
	case cfg.RateLimit < 0:
		return fmt.Errorf("-rate-limit %d: want 0 (off) or more", cfg.RateLimit)
	case cfg.Sync != "always" && cfg.Sync != "interval":
		return fmt.Errorf("-sync %q: want always or interval", cfg.Sync)
	case cfg.Sync == "interval" && cfg.SyncInterval <= 0:
		return fmt.Errorf("-sync-interval %v: want more than 0", cfg.SyncInterval)
	case cfg.Sync == "interval" && cfg.Cluster.enabled():
		// engine.Options.SyncInterval refuses it too.
		return fmt.Errorf("-sync interval is for one process: in cluster mode a hit is acknowledged once the cluster's log has it on a quorum of disks")
	case cfg.SnapshotEvery < 0:
		return fmt.Errorf("-snapshot-every %v: want 0 (off) or more", cfg.SnapshotEvery)
	case cfg.MaxValues == 0 || cfg.MaxValues < -1:
		return fmt.Errorf("-max-values %d: want 1 or more, or -1 (no cap)", cfg.MaxValues)
	case cfg.Retention < 0:
		return fmt.Errorf("-retention %d: want 0 (keep) or more days", cfg.Retention)
	case cfg.BackupEvery < 0:
		return fmt.Errorf("-backup-every %v: want 0 (off) or more", cfg.BackupEvery)
	case cfg.BackupEvery > 0 && cfg.BackupDir == "":
		return fmt.Errorf("-backup-every needs -backup-dir")
	case cfg.Registration != "closed" && cfg.Registration != "invite" && cfg.Registration != "open":
		return fmt.Errorf("-registration %q: want closed, invite or open", cfg.Registration)
	case cfg.Registration == "open" && (cfg.Mail.SMTPAddr == "" || cfg.Mail.PublicURL == ""):
		// SPEC §13: an address takes effect once its owner proves it.
		return fmt.Errorf("-registration open needs -smtp-addr and -public-url: a new account's email address is proven by a link mailed to it")
	case cfg.ShutdownTimeout <= 0:
		return fmt.Errorf("-shutdown-timeout %v: want more than 0", cfg.ShutdownTimeout)
	case cfg.LogFormat != "text" && cfg.LogFormat != "json":
		return fmt.Errorf("-log-format %q: want text or json", cfg.LogFormat)
	}
	if _, err := engine.ParseSaltPeriod(cfg.SaltPeriod); err != nil || cfg.SaltPeriod == "" {
		return fmt.Errorf("-salt-period %q: want day, week or month", cfg.SaltPeriod)
	}
	if cfg.Reports != "off" {
		if _, err := report.ParsePeriod(cfg.Reports); err != nil {
			return fmt.Errorf("-reports %q: want weekly, monthly or off", cfg.Reports)
		}
	}
	if _, err := httpd.ParseProxies(cfg.TrustedProxies); err != nil {
		return fmt.Errorf("-trusted-proxies: %v", err)
	}
	if cfg.Mail.PublicURL != "" {
		if err := httpd.CheckPublicURL(cfg.Mail.PublicURL); err != nil {
			return fmt.Errorf("-public-url: %v", err)
		}
	}
	if _, err := cfg.logLevel(); err != nil {
		return fmt.Errorf("-log-level %q: want debug, info, warn or error", cfg.LogLevel)
	}
	return cfg.Cluster.validate()
}

func (cfg *Config) logLevel() (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(cfg.LogLevel))
	return l, err
}

// ByteSize is a number of bytes given as a flag: a plain number, or a number
// with a unit: B; kB, MB, GB, TB (powers of 1000); KiB, MiB, GiB, TiB and
// the short K, M, G, T (powers of 1024). Units are case-insensitive.
type ByteSize int64

// String formats b with the largest binary unit that divides it.
func (b ByteSize) String() string {
	n, i := int64(b), 0
	units := []string{"", "KiB", "MiB", "GiB", "TiB"}
	for n != 0 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return strconv.FormatInt(n, 10) + units[i]
}

// Set parses a size, as flag.Value.
func (b *ByteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
	}
	mult, ok := byteUnits[strings.ToLower(unit)]
	if !ok {
		return fmt.Errorf("unknown unit %q: want B, kB, MB, GB, KiB, MiB or GiB", unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return fmt.Errorf("%q is not a size", s)
	}
	v := f * float64(mult)
	if v < 0 || v >= math.MaxInt64 {
		return fmt.Errorf("%q is out of range", s)
	}
	*b = ByteSize(v)
	return nil
}

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}
