package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Three webstatsd processes, each with its NATS server inside, started as
// the README's "Running a cluster" says. Eight clients send pageviews (the
// Plausible Events API) to them in turn and, when one fails a request (a
// refused or cut connection, a 5xx), send the same pageview to the next.
// One process is killed with SIGKILL under that load and started again
// later on its data directory. In the end every process counts every pageview that was
// answered 202, and at most one more per failed attempt (a request that
// was in the log when its process died, then sent again), all the same.
func TestClusterKill9(t *testing.T) { clusterKill9(t) }

// The same with partitions: the website's partition is held by two of the
// three processes (-partition-owners 2), which may include the one
// killed; the third asks a holder for its statistics, and, once the killed
// process's entry has expired, takes its place.
func TestClusterKill9Partitions(t *testing.T) { clusterKill9(t, "-partitions", "4") }

func clusterKill9(t *testing.T, extra ...string) {
	bin := buildBinary(t)
	// NATS client and route ports, free at the time of the call.
	var ports []int
	var ls []net.Listener
	for range 6 {
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
	dirs := make([]string, 3)
	flags := make([][]string, 3)
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3+j]))
			}
		}
		dirs[i] = filepath.Join(t.TempDir(), "data")
		flags[i] = []string{"-snapshot-every", "2s", "-reports", "off",
			"-nats-embed", fmt.Sprintf("127.0.0.1:%d", ports[i]),
			"-nats-cluster", fmt.Sprintf("127.0.0.1:%d", ports[3+i]),
			"-nats-routes", strings.Join(routes, ",")}
		flags[i] = append(flags[i], extra...)
	}
	servers := make([]*server, 3)
	for i := range servers {
		servers[i] = launch(t, bin, dirs[i], flags[i]...)
	}
	for _, s := range servers {
		s.waitUp(t, 2*time.Minute) // the NATS cluster forms first
	}
	var key string
	for _, s := range servers {
		if k, _, _ := strings.Cut(s.stdout.String(), "\n"); k != "" {
			if key != "" {
				t.Fatal("two servers created the admin account")
			}
			key = k
		}
	}
	if key == "" {
		t.Fatal("no server created the admin account")
	}
	hc := &http.Client{Timeout: 15 * time.Second}
	call := func(s *server, method, path, ctype, body string) (int, string, error) {
		req, err := http.NewRequest(method, s.base()+path, strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	code, body, err := call(servers[0], "POST", "/api/v1/websites", "application/x-www-form-urlencoded", url.Values{"domain": {"k.example"}}.Encode())
	if err != nil || code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("create a website: %d %s %v", code, body, err)
	}
	var created struct{ Data struct{ ID int } }
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.Data.ID == 0 {
		t.Fatalf("create a website: %s (%v)", body, err)
	}
	problem := "" // why the last wait's condition did not hold
	eventually := func(what string, fn func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !fn() {
			if time.Now().After(deadline) {
				for i, s := range servers {
					t.Logf("server %d stderr:\n%s", i, s.stderr.String())
				}
				t.Fatalf("timed out waiting for %s (%s)", what, problem)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// holders returns the processes that hold partition p, once every
	// process holds what it should and has caught up with it; nil before.
	holders := func(p int) []int {
		var out []int
		for i, s := range servers {
			code, body, err := call(s, "GET", "/healthz", "", "")
			var h struct {
				Cluster struct {
					Partitions *struct {
						Count               int
						Held, Ready, Target []int
					}
				}
			}
			if err != nil || code != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil || h.Cluster.Partitions == nil {
				problem = fmt.Sprintf("server %d: /healthz %d %s %v", i, code, body, err)
				return nil
			}
			ps := h.Cluster.Partitions
			if ps.Count != 4 || !slices.Equal(ps.Held, ps.Target) || !slices.Equal(ps.Ready, ps.Held) {
				problem = fmt.Sprintf("server %d: partitions %+v", i, *ps)
				return nil
			}
			if slices.Contains(ps.Held, p) {
				out = append(out, i)
			}
		}
		problem = fmt.Sprintf("processes %v hold partition %d", out, p)
		return out
	}
	knows := func() bool {
		for _, s := range servers {
			if code, _, err := call(s, "GET", fmt.Sprint("/api/v1/websites/", created.Data.ID), "", ""); err != nil || code != http.StatusOK {
				return false
			}
		}
		return true
	}
	eventually("every server to know the website", knows)

	// Eight clients at once, so that the kill cuts requests in flight.
	// The events from restartAt on wait until the killed process is back,
	// so that it takes some of them.
	const events, killAt, restartAt, clients = 800, 250, 500, 8
	victim := 1
	if len(extra) > 0 {
		// With partitions, the victim is a holder of the website's
		// partition (node names, and so holders, are random).
		eventually("two processes to hold the website's partition", func() bool {
			h := holders(created.Data.ID % 64 % 4)
			if len(h) == 2 {
				victim = h[0]
			}
			return len(h) == 2
		})
	}
	var mu sync.Mutex // guards servers[victim] while it is replaced
	serverOf := func(i int) *server {
		mu.Lock()
		defer mu.Unlock()
		return servers[i]
	}
	restarted := make(chan struct{})
	var next, acked, refused, unsure atomic.Int64
	var byServer [3]atomic.Int64 // acknowledgements, after the restart
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= events {
					return
				}
				if k >= restartAt {
					<-restarted
				}
				ev := fmt.Sprintf(`{"name":"pageview","url":"https://k.example/p%d","domain":"k.example"}`, k)
				for try := 0; ; try++ {
					i := (k + try) % 3
					code, body, err := call(serverOf(i), "POST", "/api/event", "application/json", ev)
					if err == nil && code == http.StatusAccepted {
						acked.Add(1)
						if k >= restartAt {
							byServer[i].Add(1)
						}
						break
					}
					if err == nil && code < 500 {
						errs <- fmt.Errorf("event %d: %d %s", k, code, body)
						return
					}
					// A refused connection never reached the server; a
					// cut one or a 5xx may have been counted (in the
					// log before the process died, or published but
					// not acknowledged in time).
					if errors.Is(err, syscall.ECONNREFUSED) {
						refused.Add(1)
					} else {
						unsure.Add(1)
					}
					if try == 20 {
						errs <- fmt.Errorf("event %d: every server failed it (last: %d %v)", k, code, err)
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	clientsDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(clientsDone)
	}()
	waitAcked := func(n int64) {
		t.Helper()
		for acked.Load() < n {
			select {
			case <-clientsDone:
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				t.Fatalf("the clients stopped at %d acknowledged pageviews", acked.Load())
			case <-time.After(time.Millisecond):
			}
		}
	}
	waitAcked(killAt)
	serverOf(victim).kill(t)
	waitAcked(restartAt)
	s := launch(t, bin, dirs[victim], flags[victim]...)
	s.waitUp(t, 2*time.Minute)
	mu.Lock()
	servers[victim] = s
	mu.Unlock()
	close(restarted)
	<-clientsDone
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ack, maybe := int(acked.Load()), int(unsure.Load())
	if ack != events {
		t.Fatalf("%d of %d pageviews acknowledged", ack, events)
	}
	if byServer[victim].Load() == 0 {
		t.Fatal("the restarted process took none of the pageviews after its restart")
	}
	// Every page was tracked once: each must be counted at least once on
	// every process, and the total exceeds the acknowledged ones by at
	// most the attempts that may have been counted.
	from := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	to := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	query := fmt.Sprintf(`{"site_id":"k.example","metrics":["pageviews"],"dimensions":["event:page"],"date_range":[%q,%q],"pagination":{"limit":%d}}`, from, to, 2*events)
	pages := make([]map[string]int, 3)
	eventually("every process to count every acknowledged pageview, and the same", func() bool {
		for i, s := range servers {
			code, body, err := call(s, "POST", "/api/v2/query", "application/json", query)
			var res struct {
				Results []struct {
					Dimensions []string
					Metrics    []int
				}
			}
			if err != nil || code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil {
				problem = fmt.Sprintf("server %d: %d %s %v", i, code, body, err)
				return false
			}
			pages[i] = map[string]int{}
			for _, r := range res.Results {
				pages[i][r.Dimensions[0]] = r.Metrics[0]
			}
			for k := range events {
				if pages[i][fmt.Sprint("/p", k)] < 1 {
					problem = fmt.Sprintf("server %d does not count /p%d", i, k)
					return false
				}
			}
		}
		for i := 1; i < 3; i++ {
			if !maps.Equal(pages[i], pages[0]) {
				problem = fmt.Sprintf("servers 0 and %d count otherwise", i)
				return false
			}
		}
		return true
	})
	if len(extra) > 0 {
		// Two processes hold the website's partition, and only they.
		eventually("two processes to hold the website's partition", func() bool {
			return len(holders(created.Data.ID%64%4)) == 2
		})
	}
	total := 0
	for page, n := range pages[0] {
		if !strings.HasPrefix(page, "/p") {
			t.Errorf("a page nobody sent: %s", page)
		}
		total += n
	}
	if total > ack+maybe {
		t.Errorf("%d pageviews counted; %d acknowledged, and %d attempts may have been counted", total, ack, maybe)
	}
	t.Logf("%d pageviews acknowledged (%d by the restarted process after its restart); %d attempts refused, %d cut or 5xx; every process counts %d",
		ack, byServer[victim].Load(), refused.Load(), maybe, total)
}
