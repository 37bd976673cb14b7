package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// freePorts returns n loopback ports free at the time of the call.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// Three webstatsd processes (here: three serves in this process) with
// embedded NATS servers, started as the README's "Running a cluster" says:
// one of them creates the admin account, a website created on one is
// tracked through another and counted by the third, and once one is
// stopped the other two go on taking and counting hits.
func TestServeCluster(t *testing.T) {
	ports := freePorts(t, 9) // http, nats clients, nats routes
	type proc struct {
		http string
		dir  string
		stop context.CancelFunc
		done chan int
		err  string
	}
	procs := make([]*proc, 3)
	var mu sync.Mutex
	for i := range procs {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[6+j]))
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		p := &proc{http: fmt.Sprintf("127.0.0.1:%d", ports[i]), dir: filepath.Join(t.TempDir(), "data"), stop: cancel, done: make(chan int, 1)}
		procs[i] = p
		args := []string{"-addr", p.http, "-data", p.dir, "-log-level", "warn", "-reports", "off",
			"-nats-embed", fmt.Sprintf("127.0.0.1:%d", ports[3+i]),
			"-nats-cluster", fmt.Sprintf("127.0.0.1:%d", ports[6+i]),
			"-nats-routes", strings.Join(routes, ",")}
		go func() {
			_, stderr, code := runCLI(t, ctx, nil, args...)
			mu.Lock()
			p.err = stderr
			mu.Unlock()
			p.done <- code
		}()
	}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
		for _, p := range procs {
			if p.done != nil {
				<-p.done
			}
		}
	}()
	last := "" // the last statistics query's answer
	eventually := func(what string, fn func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !fn() {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				for i, p := range procs {
					t.Logf("server %d stderr:\n%s", i, p.err)
				}
				t.Fatalf("timed out waiting for %s (last query: %s)", what, last)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	do := func(p *proc, method, path, key, ctype, body string) (int, string) {
		req, err := http.NewRequest(method, "http://"+p.http+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for i, p := range procs {
		eventually(fmt.Sprint("server ", i, " to answer /healthz"), func() bool {
			code, _ := do(p, "GET", "/healthz", "", "", "")
			return code == http.StatusOK
		})
	}
	var key string
	keys := 0
	for _, p := range procs {
		if b, err := os.ReadFile(filepath.Join(p.dir, adminKeyFile)); err == nil {
			key = strings.TrimSpace(string(b))
			keys++
		}
	}
	if keys != 1 {
		t.Fatalf("%d servers created the admin account, want 1", keys)
	}
	code, body := do(procs[0], "POST", "/api/v1/websites", key, "application/x-www-form-urlencoded", url.Values{"domain": {"c.example"}}.Encode())
	if code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("create a website: %d %s", code, body)
	}
	var created struct{ Data struct{ ID int } }
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.Data.ID == 0 {
		t.Fatalf("create a website: %s (%v)", body, err)
	}
	track := func(p *proc, path string) {
		t.Helper()
		eventually("a pageview to be taken", func() bool {
			code, _ := do(p, "POST", "/api/event", "", "application/json", fmt.Sprintf(`{"name":"pageview","url":"https://c.example%s","domain":"c.example"}`, path))
			return code == http.StatusAccepted
		})
	}
	pageviews := func(p *proc) int {
		today := time.Now().UTC().Format(time.DateOnly)
		code, body := do(p, "POST", "/api/v2/query", key, "application/json",
			fmt.Sprintf(`{"site_id":"c.example","metrics":["pageviews"],"date_range":[%q,%q]}`, today, today))
		last = fmt.Sprint(code, " ", body)
		if code != http.StatusOK {
			return -1
		}
		var res struct{ Results []struct{ Metrics []int } }
		if json.Unmarshal([]byte(body), &res) != nil || len(res.Results) != 1 {
			return -1
		}
		return res.Results[0].Metrics[0]
	}
	// (A node takes a hit for a website it does not know yet with a 202
	// and drops it, as one process does: the others learn of a website
	// within the replication lag.)
	for i, p := range procs {
		eventually(fmt.Sprint("server ", i, " to know the website"), func() bool {
			code, _ := do(p, "GET", fmt.Sprint("/api/v1/websites/", created.Data.ID), key, "", "")
			return code == http.StatusOK
		})
	}
	track(procs[1], "/a")
	eventually("server 2 to count the pageview server 1 took", func() bool { return pageviews(procs[2]) == 1 })

	procs[2].stop()
	if code := <-procs[2].done; code != 0 {
		t.Fatalf("server 2 exited %d: %s", code, procs[2].err)
	}
	procs[2].done = nil
	track(procs[0], "/b")
	eventually("server 1 to count both pageviews with server 2 down", func() bool { return pageviews(procs[1]) == 2 })
}
