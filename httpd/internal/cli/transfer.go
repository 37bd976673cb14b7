package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd"
	"github.com/webstats/webstats/httpd/internal/importline"
)

// The import and export commands (SPEC §14, README "Moving in and out"):
// a website's history in from a peer's export or webstats' own, and every
// hit out as import lines. Both work on a data directory (offline, the
// server stopped) or against a running server (-url and -key).

// target is where an import or export goes: a data directory's engine, or
// a running server's API.
type target struct {
	e       *engine.Engine // offline
	dir     string         // offline: the data directory, absolute
	url     string         // the server's base URL, without a trailing /
	key     string
	website uint32
	client  *http.Client
}

// targetFlags registers -data, -url and -key.
type targetFlags struct {
	data, url, key *string
	site           *string
}

func registerTarget(fs *flag.FlagSet) targetFlags {
	return targetFlags{
		data: dataFlag(fs),
		url:  fs.String("url", "", "a running server's base `URL` (https://stats.example.org); with -key, instead of -data"),
		key:  fs.String("key", "", "an API `key` of the website's account, with -url (or WEBSTATS_KEY)"),
		site: fs.String("site", "", "the website's `domain` (required)"),
	}
}

// with opens the target the flags name and calls fn with it.
func (f targetFlags) with(ctx context.Context, c *cli, fn func(t *target) error) error {
	if *f.site == "" {
		return usagef("-site is required")
	}
	if *f.url != "" {
		key := *f.key
		if key == "" {
			key, _ = c.lookupEnv("WEBSTATS_KEY")
		}
		if key == "" {
			return usagef("-url needs -key (or WEBSTATS_KEY)")
		}
		t := &target{url: strings.TrimRight(*f.url, "/"), key: key, client: &http.Client{Timeout: 10 * time.Minute}}
		id, err := t.findSite(ctx, *f.site)
		if err != nil {
			return err
		}
		t.website = id
		return fn(t)
	}
	return withEngine(*f.data, true, func(e *engine.Engine) error {
		w, err := e.Unscoped().WebsiteByDomain(ctx, *f.site)
		if err != nil {
			return fmt.Errorf("no website %q in %s: %w", *f.site, *f.data, err)
		}
		dir, err := filepath.Abs(*f.data)
		if err != nil {
			dir = *f.data
		}
		return fn(&target{e: e, dir: dir, website: w.ID})
	})
}

// findSite finds the id of domain among the key's websites.
func (t *target) findSite(ctx context.Context, domain string) (uint32, error) {
	want, ok := engine.NormalizeDomain(domain)
	if !ok {
		return 0, usagef("-site %q is not a domain", domain)
	}
	for page := 1; page <= 1000; page++ {
		q := url.Values{"search": {want}, "per_page": {"100"}, "page": {strconv.Itoa(page)}}
		var body struct {
			Data []struct {
				ID     uint32 `json:"id"`
				Domain string `json:"domain"`
			} `json:"data"`
			Meta struct {
				LastPage int `json:"last_page"`
			} `json:"meta"`
		}
		if err := t.getJSON(ctx, "/api/v1/websites?"+q.Encode(), &body); err != nil {
			return 0, err
		}
		for _, w := range body.Data {
			if w.Domain == want {
				return w.ID, nil
			}
		}
		if page >= body.Meta.LastPage {
			break
		}
	}
	return 0, fmt.Errorf("no website %q on %s for this key", want, t.url)
}

func (t *target) request(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, t.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+t.key)
	req.Header.Set("Accept", "application/json")
	return req, nil
}

func (t *target) getJSON(ctx context.Context, path string, v any) error {
	req, err := t.request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, v)
}

// exportCmd writes every hit of a website as import lines to stdout.
func (c *cli) exportCmd(fs *flag.FlagSet) func(context.Context) error {
	tf := registerTarget(fs)
	from := fs.String("from", "", "first local `day` (Y-m-d); default: the first with data")
	to := fs.String("to", "", "last local `day` (Y-m-d); default: the last with data")
	return func(ctx context.Context) error {
		lo, hi := importline.MinDate, importline.MaxDate
		for _, d := range []struct {
			flag string
			v    string
			dst  *engine.Date
		}{{"from", *from, &lo}, {"to", *to, &hi}} {
			if d.v == "" {
				continue
			}
			v, err := engine.ParseDate(d.v)
			if err != nil {
				return usagef("export: -%s must be a day written Y-m-d", d.flag)
			}
			*d.dst = v
		}
		if lo > hi {
			return usagef("export: -from is after -to")
		}
		return tf.with(ctx, c, func(t *target) error {
			w := bufio.NewWriterSize(c.stdout, 64<<10)
			var n int
			var err error
			if t.e != nil {
				n, err = importline.Export(ctx, t.e.Unscoped(), t.website, lo, hi, w, nil)
			} else {
				n, err = t.download(ctx, *from, *to, w)
			}
			if err == nil {
				err = w.Flush()
			}
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			fmt.Fprintf(c.stderr, "exported %d hits of %s\n", n, *tf.site)
			return nil
		})
	}
}

// download copies GET /api/v1/websites/{id}/events to w and counts its lines.
func (t *target) download(ctx context.Context, from, to string, w io.Writer) (int, error) {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if to != "" {
		q.Set("to", to)
	}
	req, err := t.request(ctx, http.MethodGet, "/api/v1/websites/"+strconv.FormatUint(uint64(t.website), 10)+"/events?"+q.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := (&http.Client{}).Do(req) // no timeout: a large export streams for long
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return 0, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	cw := &lineCounter{w: w}
	if _, err := io.Copy(cw, resp.Body); err != nil {
		return cw.n, err
	}
	if cw.last != '\n' && cw.n > 0 || cw.bytes > 0 && cw.last != '\n' {
		return cw.n, errors.New("the stream was cut (no final newline)")
	}
	return cw.n, nil
}

// lineCounter counts the newlines written through it.
type lineCounter struct {
	w     io.Writer
	n     int
	bytes int64
	last  byte
}

func (l *lineCounter) Write(p []byte) (int, error) {
	l.n += bytes.Count(p, []byte{'\n'})
	l.bytes += int64(len(p))
	if len(p) > 0 {
		l.last = p[len(p)-1]
	}
	return l.w.Write(p)
}

// sendChunk counts one chunk of import lines with its Idempotency-Key:
// offline through the import endpoint's own checks and the engine's
// TrackOnce (httpd.Import), or POSTed,
// retried on a network error, 429 or 503 with the same key.
func (t *target) sendChunk(ctx context.Context, body []byte, key string) (int, error) {
	if t.e != nil {
		res, err := httpd.Import(ctx, t.e, t.website, body, key, time.Now())
		return res.Accepted, err
	}
	path := "/api/v1/websites/" + strconv.FormatUint(uint64(t.website), 10) + "/events"
	var last error
	var wait time.Duration
	for try := 0; try < 8; try++ {
		if try > 0 {
			if wait == 0 {
				wait = time.Duration(1<<try) * 250 * time.Millisecond
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			wait = 0
		}
		req, err := t.request(ctx, http.MethodPost, path, body)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Idempotency-Key", key)
		resp, err := t.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			last = err
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			var ok struct {
				Data struct {
					Accepted int `json:"accepted"`
				} `json:"data"`
			}
			if err := json.Unmarshal(b, &ok); err != nil {
				return 0, fmt.Errorf("POST %s: %w", path, err)
			}
			return ok.Data.Accepted, nil
		case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
			// The same key again, after the server's Retry-After (at
			// most a minute) when it gives one.
			last = fmt.Errorf("POST %s: %s", path, resp.Status)
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				wait = time.Duration(min(s, 60)) * time.Second
			}
			continue
		}
		return 0, fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	return 0, last
}

// fileError says which file a failure is of.
func fileError(file string, err error) error {
	if err == nil {
		return nil
	}
	if strings.HasPrefix(err.Error(), file+":") {
		return err
	}
	return fmt.Errorf("%s: %w", file, err)
}

// openFile opens a file to import; "-" is not allowed (a file is read twice).
func openFile(name string) (*os.File, error) {
	if name == "-" {
		return nil, usagef("import: a file is read twice (checked, then sent): give a file, not -")
	}
	return os.Open(name)
}
