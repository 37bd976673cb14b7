package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// runCLI runs webstatsd in-process with args and the environment env.
func runCLI(t *testing.T, ctx context.Context, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	c := &cli{stdout: &out, stderr: &errb, lookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}}
	code = c.main(ctx, args)
	return out.String(), errb.String(), code
}

// parseServe parses the serve flags of args under env, as Main does.
func parseServe(args []string, env map[string]string) (Config, error) {
	c := &cli{lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	var cfg Config
	fs := newFlagSet("serve")
	cfg.RegisterFlags(fs)
	if err := c.parse(fs, args, false); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func defaults() Config {
	return Config{
		Addr: "127.0.0.1:8080", Data: "./webstats-data", RateLimit: 60, SaltPeriod: "day", TrustedProxies: "127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7",
		Sync: "always", SyncInterval: 100 * time.Millisecond,
		SnapshotEvery: 30 * time.Second, ShutdownTimeout: 30 * time.Second, MaxValues: 50_000,
		LogLevel: "info", LogFormat: "text", Reports: "weekly", Registration: "closed",
		Cluster: Cluster{SeedEvery: 6 * time.Hour, Owners: 2},
	}
}

func TestServeFlagPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    func(*Config)
		wantErr string
	}{
		{name: "defaults", want: func(*Config) {}},
		{
			name: "env over default",
			env:  map[string]string{"WEBSTATS_ADDR": ":9000", "WEBSTATS_RATE_LIMIT": "0", "WEBSTATS_TRUST_PROXY": "true", "WEBSTATS_MEMORY_BUDGET": "512MiB"},
			want: func(c *Config) { c.Addr, c.RateLimit, c.TrustProxy, c.MemoryBudget = ":9000", 0, true, 512<<20 },
		},
		{
			name: "flag over env",
			args: []string{"-addr", ":9001", "-rate-limit=5", "-trust-proxy=false"},
			env:  map[string]string{"WEBSTATS_ADDR": ":9000", "WEBSTATS_RATE_LIMIT": "0", "WEBSTATS_TRUST_PROXY": "1"},
			want: func(c *Config) { c.Addr, c.RateLimit = ":9001", 5 },
		},
		{
			name: "empty env is unset",
			env:  map[string]string{"WEBSTATS_DATA": "", "WEBSTATS_SALT_PERIOD": ""},
			want: func(*Config) {},
		},
		{
			name: "every flag by env",
			env: map[string]string{
				"WEBSTATS_DATA": "/var/lib/ws", "WEBSTATS_SALT_PERIOD": "week", "WEBSTATS_GEOIP": "/g.mmdb",
				"WEBSTATS_SNAPSHOT_EVERY": "1m", "WEBSTATS_RETENTION": "400", "WEBSTATS_BACKUP_EVERY": "24h",
				"WEBSTATS_BACKUP_DIR": "/b", "WEBSTATS_SHUTDOWN_TIMEOUT": "5s", "WEBSTATS_LOG_LEVEL": "debug",
				"WEBSTATS_LOG_FORMAT": "json", "WEBSTATS_REPORTS": "monthly", "WEBSTATS_SMTP_ADDR": "mail:587",
				"WEBSTATS_SMTP_USER": "u", "WEBSTATS_SMTP_PASS": "p", "WEBSTATS_SMTP_FROM": "f@x", "WEBSTATS_PUBLIC_URL": "https://s",
			},
			want: func(c *Config) {
				c.Data, c.SaltPeriod, c.GeoIP, c.SnapshotEvery, c.Retention = "/var/lib/ws", "week", "/g.mmdb", time.Minute, 400
				c.BackupEvery, c.BackupDir, c.ShutdownTimeout, c.LogLevel, c.LogFormat = 24*time.Hour, "/b", 5*time.Second, "debug", "json"
				c.Reports, c.Mail = "monthly", Mail{SMTPAddr: "mail:587", SMTPUser: "u", SMTPPass: "p", SMTPFrom: "f@x", PublicURL: "https://s"}
			},
		},
		{
			name: "connection caps",
			args: []string{"-max-conns", "5000"},
			env:  map[string]string{"WEBSTATS_MAX_CONNS": "100", "WEBSTATS_MAX_CONNS_PER_IP": "-1"},
			want: func(c *Config) { c.MaxConns, c.MaxConnsPerIP = 5000, -1 },
		},
		{name: "max values", args: []string{"-max-values", "1000"}, want: func(c *Config) { c.MaxValues = 1000 }},
		{name: "max values off", env: map[string]string{"WEBSTATS_MAX_VALUES": "-1"}, want: func(c *Config) { c.MaxValues = -1 }},
		{name: "max values zero", args: []string{"-max-values", "0"}, wantErr: "-max-values"},
		{name: "sync interval", args: []string{"-sync", "interval"}, want: func(c *Config) { c.Sync = "interval" }},
		{name: "sync interval by env", env: map[string]string{"WEBSTATS_SYNC": "interval", "WEBSTATS_SYNC_INTERVAL": "1s"}, want: func(c *Config) { c.Sync, c.SyncInterval = "interval", time.Second }},
		{name: "bad sync", args: []string{"-sync", "never"}, wantErr: "-sync \"never\""},
		{name: "zero sync interval", args: []string{"-sync", "interval", "-sync-interval", "0"}, wantErr: "-sync-interval"},
		{name: "sync interval unread by -sync always", args: []string{"-sync-interval", "0"}, want: func(c *Config) { c.SyncInterval = 0 }},
		{name: "sync interval in cluster mode", args: []string{"-sync", "interval", "-nats", "nats://127.0.0.1:4222"}, wantErr: "-sync interval is for one process"},
		{name: "bad reports", args: []string{"-reports", "daily"}, wantErr: "-reports"},
		{name: "bad public url", args: []string{"-public-url", "stats.example.org"}, wantErr: "-public-url"},
		{name: "public url with query", args: []string{"-public-url", "https://stats.example.org/?x"}, wantErr: "-public-url"},
		{name: "memory budget decimal", args: []string{"-memory-budget", "2GB"}, want: func(c *Config) { c.MemoryBudget = 2e9 }},
		{name: "memory budget plain", args: []string{"-memory-budget", "1048576"}, want: func(c *Config) { c.MemoryBudget = 1 << 20 }},
		{name: "bad env value", env: map[string]string{"WEBSTATS_RATE_LIMIT": "lots"}, wantErr: `WEBSTATS_RATE_LIMIT="lots"`},
		{name: "bad salt period", args: []string{"-salt-period", "year"}, wantErr: "-salt-period"},
		{name: "backup without dir", args: []string{"-backup-every", "1h"}, wantErr: "-backup-dir"},
		{name: "bad log format", env: map[string]string{"WEBSTATS_LOG_FORMAT": "xml"}, wantErr: "-log-format"},
		{name: "bad memory unit", args: []string{"-memory-budget", "5 parsecs"}, wantErr: "unknown unit"},
		{name: "unknown flag", args: []string{"-nope"}, wantErr: "-nope"},
		{name: "stray argument", args: []string{"-addr", ":1", "extra"}, wantErr: `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseServe(tt.args, tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestByteSizeString(t *testing.T) {
	for _, tt := range []struct {
		in   ByteSize
		want string
	}{{0, "0"}, {1000, "1000"}, {512 << 20, "512MiB"}, {3 << 30, "3GiB"}, {1536, "1536"}} {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{"addr": "WEBSTATS_ADDR", "rate-limit": "WEBSTATS_RATE_LIMIT", "snapshot-every": "WEBSTATS_SNAPSHOT_EVERY"} {
		if got := EnvName(flag); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flag, got, want)
		}
	}
}

func TestUsage(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		inStdout string
		inStderr string
	}{
		{name: "help", args: []string{"help"}, wantCode: 0, inStdout: "-snapshot-every"},
		{name: "-h", args: []string{"-h"}, wantCode: 0, inStdout: "webstatsd user rotate-key"},
		{name: "user -h", args: []string{"user", "-h"}, wantCode: 0, inStdout: "Flags of user add"},
		{name: "user add -h", args: []string{"user", "add", "-h"}, wantCode: 0, inStdout: "Flags of backup"},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 2, inStderr: `unknown command "frobnicate"`},
		{name: "unknown user command", args: []string{"user", "delete"}, wantCode: 2, inStderr: `unknown command "user delete"`},
		{name: "user alone", args: []string{"user"}, wantCode: 2, inStderr: "missing subcommand"},
		{name: "unknown flag", args: []string{"serve", "-colour"}, wantCode: 2, inStderr: "flag provided but not defined: -colour"},
		{name: "missing email", args: []string{"user", "add", "-data", t.TempDir()}, wantCode: 2, inStderr: "-email is required"},
		{name: "missing to", args: []string{"backup", "-data", t.TempDir()}, wantCode: 2, inStderr: "-to is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, ctx, nil, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stdout, tt.inStdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.inStdout, stdout)
			}
			if !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.inStderr, stderr)
			}
			if code == 2 && !strings.Contains(stderr, "Usage:") {
				t.Errorf("a usage error prints no usage on stderr:\n%s", stderr)
			}
		})
	}
}

// authenticate opens dir and returns the email of key's account, or "".
func authenticate(t *testing.T, dir, key string) string {
	t.Helper()
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, err := identity.Must(e).Authenticate(t.Context(), key)
	if err != nil {
		return ""
	}
	return a.Email
}

func TestUserCommands(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "data")

	// user add prints the key alone on stdout.
	stdout, stderr, code := runCLI(t, ctx, nil, "user", "add", "-data", dir, "-email", "ann@example.com", "-name", "Ann")
	if code != 0 {
		t.Fatalf("user add: exit %d: %s", code, stderr)
	}
	key := strings.TrimSuffix(stdout, "\n")
	if !strings.HasPrefix(key, "ws_") || strings.ContainsAny(key, " \n") {
		t.Fatalf("user add printed %q, want the key alone", stdout)
	}
	if got := authenticate(t, dir, key); got != "ann@example.com" {
		t.Fatalf("the printed key authenticates %q, want ann@example.com", got)
	}

	// WEBSTATS_DATA stands for -data.
	env := map[string]string{"WEBSTATS_DATA": dir}
	if _, stderr, code := runCLI(t, ctx, env, "user", "add", "-email", "bob@example.com"); code != 0 {
		t.Fatalf("user add with WEBSTATS_DATA: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, ctx, env, "user", "add", "-email", "BOB@example.com"); code != 1 || !strings.Contains(stderr, "already been taken") {
		t.Errorf("duplicate user add: exit %d, stderr %q; want 1 and a clear message", code, stderr)
	}

	stdout, stderr, code = runCLI(t, ctx, nil, "user", "list", "-data", dir)
	if code != 0 {
		t.Fatalf("user list: exit %d: %s", code, stderr)
	}
	var rows [][]string
	for line := range strings.Lines(stdout) {
		f := strings.Fields(line)
		rows = append(rows, f[:3]) // the creation time varies
	}
	want := [][]string{{"ID", "EMAIL", "NAME"}, {"1", "ann@example.com", "Ann"}, {"2", "bob@example.com", "bob"}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("user list mismatch (-want +got):\n%s", diff)
	}

	stdout, stderr, code = runCLI(t, ctx, nil, "user", "rotate-key", "-data", dir, "-email", "Ann@Example.com")
	if code != 0 {
		t.Fatalf("rotate-key: exit %d: %s", code, stderr)
	}
	newKey := strings.TrimSuffix(stdout, "\n")
	if newKey == key || !strings.HasPrefix(newKey, "ws_") {
		t.Fatalf("rotate-key printed %q", stdout)
	}
	if got := authenticate(t, dir, newKey); got != "ann@example.com" {
		t.Errorf("the rotated key authenticates %q, want ann@example.com", got)
	}
	if got := authenticate(t, dir, key); got != "" {
		t.Errorf("the old key still authenticates %q", got)
	}

	if _, stderr, code := runCLI(t, ctx, nil, "user", "rotate-key", "-data", dir, "-email", "nobody@example.com"); code != 1 || !strings.Contains(stderr, "no account") {
		t.Errorf("rotate-key of a missing account: exit %d, stderr %q", code, stderr)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if _, stderr, code := runCLI(t, ctx, nil, "user", "list", "-data", missing); code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Errorf("user list of a missing dir: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("user list created the missing data directory")
	}
}

func TestBackupCommand(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "data")
	stdout, _, code := runCLI(t, ctx, nil, "user", "add", "-data", dir, "-email", "ann@example.com")
	if code != 0 {
		t.Fatal("user add failed")
	}
	key := strings.TrimSpace(stdout)
	to := filepath.Join(t.TempDir(), "copy")
	if _, stderr, code := runCLI(t, ctx, nil, "backup", "-data", dir, "-to", to); code != 0 {
		t.Fatalf("backup: exit %d: %s", code, stderr)
	}
	if got := authenticate(t, to, key); got != "ann@example.com" {
		t.Errorf("the copy authenticates %q, want ann@example.com", got)
	}
	if _, stderr, code := runCLI(t, ctx, nil, "backup", "-data", dir, "-to", to); code != 1 || !strings.Contains(stderr, "exists already") {
		t.Errorf("backup onto an existing dir: exit %d, stderr %q", code, stderr)
	}
}

func TestLockedDataDirectory(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	wantMsg := "webstatsd: data directory " + dir + " is in use by a running webstatsd; stop it first, or use the API\n"
	for _, args := range [][]string{
		{"user", "list", "-data", dir},
		{"user", "add", "-data", dir, "-email", "a@b.c"},
		{"user", "rotate-key", "-data", dir, "-email", "a@b.c"},
		{"backup", "-data", dir, "-to", filepath.Join(t.TempDir(), "b")},
		{"report", "-data", dir, "-website", "1", "-period", "week", "-smtp-addr", "127.0.0.1:1"},
	} {
		start := time.Now()
		stdout, stderr, code := runCLI(t, ctx, nil, args...)
		if code != 1 || stderr != wantMsg || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and %q", args, code, stdout, stderr, wantMsg)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: took %v, want to fail at once", args, d)
		}
	}
}

func TestServeCreatesAdminKeyOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	// A cancelled context: serve starts, creates the account, listens, and
	// shuts down at once.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	args := []string{"-addr", "127.0.0.1:0", "-data", dir, "-log-format", "json"}

	stdout, stderr, code := runCLI(t, ctx, nil, args...)
	if code != 0 {
		t.Fatalf("first serve: exit %d: %s", code, stderr)
	}
	key := strings.TrimSuffix(stdout, "\n")
	if !strings.HasPrefix(key, "ws_") || strings.Contains(key, "\n") {
		t.Fatalf("first serve printed %q, want the key alone", stdout)
	}
	if !strings.Contains(stderr, `"msg":"created the first account`) {
		t.Errorf("no log line explains the key:\n%s", stderr)
	}
	path := filepath.Join(dir, "admin.key")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("admin.key mode = %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if string(b) != key+"\n" {
		t.Errorf("admin.key = %q, want %q", b, key+"\n")
	}
	if got := authenticate(t, dir, key); got != "admin@localhost" {
		t.Errorf("the admin key authenticates %q, want admin@localhost", got)
	}

	os.Remove(path)
	stdout, stderr, code = runCLI(t, ctx, nil, args...)
	if code != 0 {
		t.Fatalf("second serve: exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("second serve printed %q, want nothing", stdout)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("second serve wrote admin.key again")
	}
}

func TestServeLockedDataDirectory(t *testing.T) {
	dir := t.TempDir()
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, stderr, code := runCLI(t, t.Context(), nil, "-addr", "127.0.0.1:0", "-data", dir)
	if code != 1 || !strings.Contains(stderr, "is in use by a running webstatsd") {
		t.Errorf("serve on a locked dir: exit %d, stderr %q", code, stderr)
	}
}

func TestServeBackups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	backups := filepath.Join(t.TempDir(), "backups")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	var stdout string
	go func() {
		var code int
		stdout, _, code = runCLI(t, ctx, nil, "-addr", "127.0.0.1:0", "-data", dir, "-backup-every", "50ms", "-backup-dir", backups)
		done <- code
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Two: the loop is sequential, so the first one is complete.
		ents, _ := os.ReadDir(backups)
		if len(ents) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("no two backups written in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve: exit %d", code)
	}
	ents, _ := os.ReadDir(backups)
	for _, ent := range ents {
		if !strings.HasPrefix(ent.Name(), "webstats-") {
			t.Errorf("backup directory %q lacks the webstats- prefix", ent.Name())
		}
	}
	first := filepath.Join(backups, ents[0].Name()) // names sort by time
	if got := authenticate(t, first, strings.TrimSpace(stdout)); got != "admin@localhost" {
		t.Errorf("the backup authenticates %q, want admin@localhost", got)
	}
}
