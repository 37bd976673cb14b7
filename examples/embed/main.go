// Command embed shows the webstats engine inside your own net/http server,
// without package httpd: POST /hit counts a pageview, and GET /top-pages
// answers the top pages of the last 30 days.
//
//	go run ./examples/embed -domain example.com
//	curl -H 'Accept-Language: en' -A 'Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0' \
//	    -d '{"url":"https://example.com/pricing","referrer":"https://news.ycombinator.com/"}' \
//	    localhost:8081/hit
//	curl localhost:8081/top-pages
//
// The engine is in memory unless -data names a directory.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/webstats/webstats/engine"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	data := flag.String("data", "", "data directory (default: in memory)")
	domain := flag.String("domain", "example.com", "the website to count (created if missing)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *data, *domain); err != nil {
		log.Fatal(err)
	}
}

// run serves the app until ctx is cancelled.
func run(ctx context.Context, addr, data, domain string) error {
	e, err := engine.Open(&engine.Options{Dir: data})
	if err != nil {
		return err
	}
	defer e.Close() // writes a final snapshot
	app, err := newApp(ctx, e, domain)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: app, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Shutdown(context.Background())
	}()
	log.Printf("counting %s on http://%s (POST /hit, GET /top-pages)", domain, addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// app is the example's HTTP handler over an engine.
type app struct {
	e       *engine.Engine
	stats   engine.Owner // the website's account: its statistics calls go through it
	website uint32
	mux     *http.ServeMux
}

// newApp returns the handler for domain's website, creating the website
// (and an account to own it) when e has none for it.
func newApp(ctx context.Context, e *engine.Engine, domain string) (*app, error) {
	w, err := e.Unscoped().WebsiteByDomain(ctx, domain)
	if errors.Is(err, engine.ErrNotFound) {
		w, err = createWebsite(ctx, e, domain)
	}
	if err != nil {
		return nil, err
	}
	a := &app{e: e, stats: e.Owner(w.Account), website: w.ID, mux: http.NewServeMux()}
	a.mux.HandleFunc("POST /hit", a.hit)
	a.mux.HandleFunc("GET /top-pages", a.topPages)
	return a, nil
}

func createWebsite(ctx context.Context, e *engine.Engine, domain string) (engine.Website, error) {
	// The engine knows a website's owner by an account id; accounts
	// themselves (keys, passwords) are package identity's, not needed here.
	return e.Owner(1).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// hitRequest is the body of POST /hit.
type hitRequest struct {
	URL      string `json:"url"`
	Referrer string `json:"referrer"`
}

// hit counts a pageview. It answers 202 whether or not the hit was counted;
// a dropped hit says why in X-Dropped (bot, unknown-site, ...).
func (a *app) hit(w http.ResponseWriter, r *http.Request) {
	var req hitRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10)).Decode(&req); err != nil || req.URL == "" {
		http.Error(w, "want a JSON body {url, referrer}", http.StatusBadRequest)
		return
	}
	ip, _ := netip.ParseAddrPort(r.RemoteAddr) // behind a proxy, read X-Forwarded-For instead
	res, err := a.e.Track(r.Context(), engine.Hit{
		URL:       req.URL,
		Referrer:  req.Referrer,
		UserAgent: r.UserAgent(),
		IP:        ip.Addr(),
		Language:  r.Header.Get("Accept-Language"),
		Live:      true, // a browser's request: the header bot checks apply
		Prefetch:  strings.Contains(r.Header.Get("Sec-Purpose")+r.Header.Get("Purpose"), "prefetch"),
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if reason := res.Reasons[0]; reason != engine.DropNone {
		w.Header().Set("X-Dropped", reason.String())
	}
	w.WriteHeader(http.StatusAccepted)
}

// topPagesResponse is the answer of GET /top-pages.
type topPagesResponse struct {
	From  string       `json:"from"`
	To    string       `json:"to"`
	Pages []engine.Row `json:"pages"`
}

// topPages answers the 10 most viewed pages of the last 30 days.
func (a *app) topPages(w http.ResponseWriter, r *http.Request) {
	today, err := a.stats.Today(r.Context(), a.website)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	from := today - 29
	page, err := a.stats.Stat(r.Context(), engine.StatQuery{
		Website: a.website, Name: "page", From: from, To: today,
		SortBy: "count", PerPage: 10,
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(topPagesResponse{From: from.String(), To: today.String(), Pages: page.Rows})
}
