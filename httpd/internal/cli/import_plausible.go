package cli

// webstatsd import -from plausible (SPEC §14): Plausible's export zip into
// a website's imported layer, offline on the data directory, or uploaded
// to a running server with -url and -key (POST /api/v1/websites/{id}/imports).
// The zip is read and validated whole (package plausiblezip) before
// anything is stored or sent.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/plausiblezip"
)

// importPlausibleFiles imports Plausible export zips into the website of
// domain: offline into t's engine, or uploaded to t's server.
func importPlausibleFiles(ctx context.Context, t *target, domain string, files []string, out io.Writer) error {
	for _, file := range files {
		var err error
		if t.e != nil {
			err = importPlausible(ctx, t.e, domain, file, out)
		} else {
			err = importPlausibleRemote(ctx, t.url, t.key, domain, file, out)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// importPlausible imports the Plausible export zip file into the imported
// layer of the website of domain, and says what it did on out.
func importPlausible(ctx context.Context, e *engine.Engine, domain, file string, out io.Writer) error {
	start := time.Now()
	o := e.Unscoped()
	w, err := o.WebsiteByDomain(ctx, domain)
	if err != nil {
		return fmt.Errorf("import: website %s: %w", domain, err)
	}
	x, err := plausiblezip.ReadFile(file)
	if err != nil {
		return fmt.Errorf("import: %s: %w", file, err)
	}
	imp, err := o.ImportPlausible(ctx, w.ID, x, filepath.Base(file))
	if err != nil {
		return fmt.Errorf("import: %s: %w", file, err)
	}
	fmt.Fprintf(out, "webstatsd: imported %s into %s as import %d: %d daily rows, %s to %s, in %v\n",
		file, domain, imp.ID, imp.Rows, imp.From, imp.To, time.Since(start).Round(time.Millisecond))
	return nil
}

// importPlausibleRemote validates file, finds the website of domain on the
// server at base with key, and uploads file there.
func importPlausibleRemote(ctx context.Context, base, key, domain, file string, out io.Writer) error {
	start := time.Now()
	if _, err := plausiblezip.ReadFile(file); err != nil {
		return fmt.Errorf("import: %s: %w", file, err)
	}
	base = strings.TrimSuffix(base, "/")
	var list struct {
		Data []struct {
			ID     uint32 `json:"id"`
			Domain string `json:"domain"`
		} `json:"data"`
	}
	if err := apiCall(ctx, http.MethodGet, base+"/api/v1/websites?per_page=100&search="+url.QueryEscape(domain), key, "", nil, &list); err != nil {
		return fmt.Errorf("import: website %s: %w", domain, err)
	}
	var id uint32
	for _, w := range list.Data {
		if strings.EqualFold(w.Domain, domain) {
			id = w.ID
		}
	}
	if id == 0 {
		return fmt.Errorf("import: the server has no website %s for this key", domain)
	}
	body, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var created struct {
		Data engine.Import `json:"data"`
	}
	path := fmt.Sprintf("%s/api/v1/websites/%d/imports?file=%s", base, id, url.QueryEscape(filepath.Base(file)))
	if err := apiCall(ctx, http.MethodPost, path, key, "application/zip", body, &created); err != nil {
		return fmt.Errorf("import: %s: %w", file, err)
	}
	imp := created.Data
	fmt.Fprintf(out, "webstatsd: uploaded %s into %s as import %d: %d daily rows, %s to %s, in %v\n",
		file, domain, imp.ID, imp.Rows, imp.From, imp.To, time.Since(start).Round(time.Millisecond))
	return nil
}

// apiCall sends one API request and decodes a 2xx answer into v; another
// status is an error with the server's message.
func apiCall(ctx context.Context, method, u, key, ctype string, body []byte, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "application/json")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", res.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, v)
}
