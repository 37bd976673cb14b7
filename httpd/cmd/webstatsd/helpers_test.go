package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/httpd/internal/bintest"
)

// hostileLong runs the hostile-input tests at the size SPEC §13 and issue
// #11 name (a 60 s flood, 20,000 slow connections); the default is a
// shorter run at the same rate, for CI.
var hostileLong = flag.Bool("hostile.long", false, "run the hostile-input tests at full size (minutes)")

func TestMain(m *testing.M) {
	if plan := os.Getenv(slowAttackEnv); plan != "" {
		os.Exit(runSlowAttack(plan))
	}
	flag.Parse()
	code := m.Run()
	bintest.Remove()
	os.Exit(code)
}

// buildBinary builds webstatsd once and returns its path
// (bintest.Webstatsd).
func buildBinary(t testing.TB) string { return bintest.Webstatsd(t) }

// pid returns the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// base returns the server's base URL.
func (s *server) base() string { return "http://" + s.addr }

// adminKey returns the API key serve created on an empty data directory
// (the first line it printed on stdout).
func (s *server) adminKey(t *testing.T) string {
	t.Helper()
	key, _, _ := strings.Cut(s.stdout.String(), "\n")
	if key == "" {
		t.Fatalf("serve printed no API key on stdout; stderr:\n%s", s.stderr.String())
	}
	return key
}

// alive reports whether the process has not exited.
func (s *server) alive() bool {
	select {
	case err := <-s.done:
		s.done <- err // keep it for stop and the cleanup
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to end.
func (s *server) kill(t *testing.T) {
	t.Helper()
	s.cmd.Process.Kill()
	select {
	case <-s.done:
		s.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("webstatsd did not die in 10s after SIGKILL")
	}
}

// procStats samples a process's resident memory (VmRSS in /proc/PID/status)
// and open file descriptors (/proc/PID/fd) every 100 ms until stopped, and
// keeps the peaks.
type procStats struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	peakRSS int64 // bytes
	lastRSS int64
	peakFDs int
	samples int
	err     error // the first failed read of a live process
}

// watch starts sampling pid.
func watch(pid int) *procStats {
	p := &procStats{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *procStats) run() {
	defer close(p.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		p.sample()
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

func (p *procStats) sample() {
	rss, err := readRSS(p.pid)
	fds, ferr := countFDs(p.pid)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil || ferr != nil {
		if p.err == nil {
			p.err = cmpErr(err, ferr)
		}
		return
	}
	p.samples++
	p.lastRSS = rss
	p.peakRSS = max(p.peakRSS, rss)
	p.peakFDs = max(p.peakFDs, fds)
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// peaks stops sampling (once) and returns the peak RSS in bytes, the peak
// number of open files and the number of samples.
func (p *procStats) peaks() (rss int64, fds, samples int) {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peakRSS, p.peakFDs, p.samples
}

// current returns the last sample's RSS and the peak so far.
func (p *procStats) current() (last, peak int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastRSS, p.peakRSS
}

// readRSS returns VmRSS of pid in bytes.
func readRSS(pid int) (int64, error) { return bench.ProcStatus(pid, "VmRSS") }

// countFDs returns the number of open file descriptors of pid.
func countFDs(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	for {
		names, err := f.Readdirnames(4096)
		n += len(names)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// percentile returns the p-th percentile (0 < p <= 100, nearest rank) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

// median returns the median of ds (the mean of the middle two for an even
// count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// drain reads and closes a response body so its connection can be reused.
func drain(resp *http.Response) []byte {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	return b
}

// metric returns the value of the metric line that starts with name (with
// its labels, if any) in the server's /metrics answer, or -1 when there is
// none.
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return v
		}
	}
	return -1
}
