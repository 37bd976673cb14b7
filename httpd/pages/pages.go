package pages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd/internal/limit"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Options configures the pages. A nil *Options means the defaults given
// beside each field.
type Options struct {
	// Logger receives error logs. Default nil: discarded.
	Logger *slog.Logger
	// Now is the clock of cookie expiries. Default nil: time.Now. (Days and
	// realtime numbers follow the engine's own clock.)
	Now func() time.Time
	// Secure marks every cookie Secure: set it when the pages are served over
	// HTTPS. Default false.
	Secure bool
	// WrongPasswordDelay is how long a wrong website password or API key
	// waits before its answer. Default 0 means 500 ms; a negative value means
	// no delay (tests).
	WrongPasswordDelay time.Duration
	// ClientIP returns the client address of a request, which the failure
	// limits of the password and sign-in forms count by. Default nil: the
	// connection's address. httpd passes its own, which honours
	// -trust-proxy.
	ClientIP func(*http.Request) netip.Addr
	// Registration is who may create an account in the browser:
	// RegistrationClosed (the default, ""), RegistrationInvite (with an
	// admin's invitation link) or RegistrationOpen (anyone).
	Registration string
	// SendMail sends a plain-text email (password reset links). Default
	// nil: no email; password reset then says to ask an administrator.
	SendMail func(ctx context.Context, to, subject, text string) error
	// CheckLines and ImportLines are the import endpoint's (SPEC §3.4) for
	// the "Import data" page (upload.go): CheckLines checks a body of
	// import lines and returns the 0-based index of the first bad line
	// and why (-1 when all are good); ImportLines counts one with its
	// Idempotency-Key. Default nil: the page imports Plausible zips only.
	CheckLines  func(body []byte) (bad int, msg string, err error)
	ImportLines func(ctx context.Context, website uint32, body []byte, key string) (accepted int, err error)
	// ZipUpload takes the server's one slot for reading a Plausible
	// export zip into memory (the API's POST /websites/{id}/imports
	// takes it too), without waiting: ok false when it is taken; release
	// gives it back. Default nil: the page's zip uploads take no slot
	// but the page's own one.
	ZipUpload func() (release func(), ok bool)
	// PublicURL is the base URL of links in emails and invitations
	// ("https://stats.example.org"), never taken from a request's Host
	// header. Default "": no reset emails, and invitation links are
	// relative.
	PublicURL string
	// BaseURL returns the address browsers reach the server at for a
	// request ("https://stats.example.org", or with the path a proxy
	// serves it under): the tracking snippet's. Default nil: http (https
	// over TLS) and the request's Host header when it is a plain
	// host[:port], else the address the connection came to. httpd passes
	// its own, which is -public-url when set.
	BaseURL func(*http.Request) string
}

// Pages serves the statistics pages. It is safe for concurrent use. Create
// one with New and mount it with Register.
type Pages struct {
	e      *engine.Engine
	id     *identity.Service // accounts, sessions, secrets on e's registry
	log    *slog.Logger
	now    func() time.Time
	secure bool
	delay  time.Duration
	key    [32]byte // signs cookies and CSRF tokens
	cop    *http.CrossOriginProtection

	clientIP    func(*http.Request) netip.Addr
	pwIPFails   *limit.Limiter // wrong passwords per client address
	pwSiteFails *limit.Limiter // wrong passwords per website
	signInFails *limit.Limiter // wrong API keys and passwords per client address
	// pairFails counts wrong passwords per client and account.
	pairFails *limit.Limiter
	// accountFails counts wrong passwords per account, codeFails wrong
	// second-factor codes per account, registrations accounts created per
	// client address, resetsIP and resetsAccount reset emails per client
	// address and per account.
	accountFails, codeFails, registrations, resetsIP, resetsAccount *limit.Limiter

	registration string
	sendMail     func(ctx context.Context, to, subject, text string) error
	mailSlots    chan struct{}  // a token per mail being sent (mailAsync)
	mails        sync.WaitGroup // the mails being sent
	publicURL    string         // without a trailing '/'

	base func(*http.Request) string // Options.BaseURL; nil: defaultBaseURL

	// views bounds the overviews and exports computed at once: each runs
	// a dozen queries, a filtered one over the segments, and anyone may
	// ask for a public website's. A request waits up to viewWait for a
	// slot, then gets 503.
	views    chan struct{}
	viewWait time.Duration

	upload    uploader                         // the "Import data" page's one import at a time (upload.go)
	zipUpload func() (release func(), ok bool) // Options.ZipUpload

	tmpl   map[string]*template.Template // by file name, each with the layout
	assets map[string]*asset             // by path under /assets/
	css    string                        // URL of the style sheet, with its hash
	js     string                        // URL of the realtime script, with its hash
}

// New returns the pages over e. It reads the cookie-signing key with
// e's identity.Service (identity.Open), Secret "pages-cookie" (created on
// first use). A nil opts means the
// defaults. The Pages do not own e.
func New(e *engine.Engine, opts *Options) (*Pages, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.WrongPasswordDelay == 0:
		o.WrongPasswordDelay = 500 * time.Millisecond
	case o.WrongPasswordDelay < 0:
		o.WrongPasswordDelay = 0
	}
	id, err := identity.Open(e)
	if err != nil {
		return nil, err
	}
	key, err := id.Secret(context.Background(), "pages-cookie")
	if err != nil {
		return nil, fmt.Errorf("pages: %w", err)
	}
	if o.ClientIP == nil {
		o.ClientIP = defaultClientIP
	}
	switch o.Registration {
	case "":
		o.Registration = RegistrationClosed
	case RegistrationClosed, RegistrationInvite, RegistrationOpen:
	default:
		return nil, fmt.Errorf("pages: registration %q: want closed, invite or open", o.Registration)
	}
	p := &Pages{
		e: e, id: id, log: o.Logger, now: o.Now, secure: o.Secure, delay: o.WrongPasswordDelay, key: key,
		cop:         http.NewCrossOriginProtection(),
		clientIP:    o.ClientIP,
		base:        o.BaseURL,
		upload:      uploader{check: o.CheckLines, count: o.ImportLines, log: o.Logger},
		zipUpload:   o.ZipUpload,
		pwIPFails:   limit.New(passwordFailuresPerIP, o.Now),
		pwSiteFails: limit.New(passwordFailuresPerSite, o.Now),
		signInFails: limit.New(signInFailuresPerIP, o.Now),

		accountFails:  limit.New(signInFailuresPerAccount, o.Now),
		pairFails:     limit.New(signInFailuresPerPair, o.Now),
		codeFails:     limit.New(codeFailuresPerAccount, o.Now),
		registrations: limit.New(registrationsPerIP, o.Now),
		resetsIP:      limit.New(resetsPerIP, o.Now),
		resetsAccount: limit.NewEvery(resetsPerAccount, resetEvery, o.Now),
		mailSlots:     make(chan struct{}, maxMailsAtOnce),
		sendMail:      o.SendMail,
		publicURL:     strings.TrimRight(o.PublicURL, "/"),
		views:         make(chan struct{}, 2*runtime.GOMAXPROCS(0)),
		viewWait:      5 * time.Second,
	}
	p.registration = o.Registration
	if err := p.loadAssets(); err != nil {
		return nil, err
	}
	if err := p.loadTemplates(); err != nil {
		return nil, err
	}
	return p, nil
}

// Register mounts every route of the pages on r (see the package
// documentation).
func (p *Pages) Register(r *httprouter.Router) {
	r.GET("/login", p.handle(p.loginForm))
	r.POST("/login", p.handle(p.login))
	r.POST("/logout", p.handle(p.logout))
	p.registerAccounts(r)
	r.GET("/stats/:domain", p.handle(p.overview))
	r.POST("/stats/:domain", p.handle(p.unlock))
	r.GET("/stats/:domain/:name", p.handle(p.statRoute))
	r.GET("/share/:domain", p.handle(p.share))
	r.GET("/assets/*filepath", p.serveAsset)
	p.registerSites(r) // GET /, /websites/... (sites.go)
}

// handlerFunc is a page handler: it writes a page, or returns an error that
// handle turns into an error page.
type handlerFunc func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error

// Limits on the input.
const (
	maxQuery = 4096 // bytes of a query string
	maxBody  = 16 << 10
	maxParam = 255 // bytes of one parameter (search, domain, name)
	// maxTokenParam bounds a :token parameter: a registration or
	// email-change link carries an address of up to 255 bytes in base64
	// (and an invitation), as engine's proof tokens (at most 1,024).
	maxTokenParam = 1024
)

// handle adapts a page handler: it bounds the input, sets the security
// headers, and renders errors.
func (p *Pages) handle(h handlerFunc) httprouter.Handle {
	return p.handleLimit(maxBody, h)
}

// handleLimit is handle with a body limit of its own.
func (p *Pages) handleLimit(limit int64, h handlerFunc) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				p.log.Error("pages: panic", "path", r.URL.Path, "panic", v)
				p.errorPage(w, r, http.StatusInternalServerError, "Something went wrong on our side.")
			}
		}()
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Referrer-Policy", "same-origin")
		hdr.Set("X-Frame-Options", "DENY")
		hdr.Set("Cache-Control", "private, no-cache")
		if len(r.URL.RawQuery) > maxQuery {
			p.errorPage(w, r, http.StatusBadRequest, "The address is too long.")
			return
		}
		for _, param := range ps {
			if len(param.Value) > maxParam && (param.Key != "token" || len(param.Value) > maxTokenParam) {
				p.errorPage(w, r, http.StatusNotFound, "")
				return
			}
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		if err := h(w, r, ps); err != nil {
			p.fail(w, r, err)
		}
	}
}

// httpError is an error shown as a page with a status and a message.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return fmt.Sprintf("pages: %d %s", e.status, e.msg) }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// errNotFound is the one answer for an unknown domain and for a private
// website the visitor may not see.
var errNotFound = &httpError{http.StatusNotFound, ""}

// errViewsBusy is a view that found no slot in time.
var errViewsBusy = errors.New("pages: too many views at once")

// viewSlot waits for a slot of p.views; release it with the function it
// returns (once; later calls do nothing).
func (p *Pages) viewSlot(ctx context.Context) (release func(), err error) {
	t := time.NewTimer(p.viewWait)
	defer t.Stop()
	select {
	case p.views <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-p.views }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, errViewsBusy
	}
}

// fail maps err to an error page: the one place errors become statuses.
func (p *Pages) fail(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	var ve *engine.ValidationError
	switch {
	case errors.As(err, &he):
		p.errorPage(w, r, he.status, he.msg)
	case errors.Is(err, engine.ErrNotFound):
		p.errorPage(w, r, http.StatusNotFound, "")
	case errors.As(err, &ve):
		var msgs []string
		for _, f := range ve.Fields {
			msgs = append(msgs, f.Msg)
		}
		p.errorPage(w, r, http.StatusBadRequest, strings.Join(msgs, " "))
	case errors.Is(err, errViewsBusy):
		w.Header().Set("Retry-After", retryAfter(busyRetry))
		p.errorPage(w, r, http.StatusServiceUnavailable, "Too many statistics pages are being computed right now. Try again in a few seconds.")
	case errors.Is(err, engine.ErrBusy):
		w.Header().Set("Retry-After", retryAfter(busyRetry))
		p.errorPage(w, r, http.StatusServiceUnavailable, "Too many passwords are being checked right now. Try again in a few seconds.")
	case errors.Is(err, identity.ErrConflict):
		p.errorPage(w, r, http.StatusConflict, "Your account was changed by another request at the same time. Go back, reload the page and try again.")
	case errors.Is(err, engine.ErrClosed):
		p.errorPage(w, r, http.StatusServiceUnavailable, "The server is shutting down. Try again in a moment.")
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		// The client went away; nobody reads the answer.
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		p.log.Error("pages: request failed", "path", r.URL.Path, "err", err)
		p.errorPage(w, r, http.StatusInternalServerError, "Something went wrong on our side.")
	}
}

// errorData is the data of error.html.
type errorData struct {
	Status  int
	Heading string
	Msg     string
}

// errorPage renders the error page. A 404 says the same whatever was not
// found, so a private website cannot be told from an unknown one.
func (p *Pages) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d := errorData{Status: status, Msg: msg}
	switch status {
	case http.StatusNotFound:
		d.Heading = "Page not found"
		d.Msg = "There is no statistics page at this address, or it is not public. If it is your website, sign in first."
	case http.StatusBadRequest:
		d.Heading = "This request cannot be answered"
	case http.StatusForbidden:
		d.Heading = "Forbidden"
	default:
		d.Heading = http.StatusText(status)
	}
	p.render(w, r, status, "error.html", d.Heading, d)
}

// view is what every template receives: the layout's fields and the page's
// own data in Body.
type view struct {
	Title   string
	CSS, JS string
	Script  bool // load the realtime script
	Account *identity.Account
	CSRF    string // the token of the sign-out form
	// Form is the action of the page's own POST form, if any, and FormCSRF
	// its token (each form has its own: see csrfToken).
	Form, FormCSRF string
	Body           any
}

// render executes a page template into a buffer first, so a failure never
// leaves half a page.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, name, title string, body any) {
	p.renderView(w, r, status, name, &view{Title: title, Body: body})
}

func (p *Pages) renderView(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	v.CSS, v.JS = p.css, p.js
	if v.Account == nil {
		if a, ok := p.session(r); ok {
			v.Account = &a
		}
	}
	if v.CSRF == "" && v.Account != nil {
		v.CSRF = p.csrfToken(w, r, "/logout")
	}
	if v.Form != "" {
		v.FormCSRF = p.csrfToken(w, r, v.Form)
	}
	var buf bytes.Buffer
	if err := p.tmpl[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		p.log.Error("pages: render", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// loadTemplates parses every page template with the layout.
func (p *Pages) loadTemplates() error {
	base, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html")
	if err != nil {
		return fmt.Errorf("pages: %w", err)
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return fmt.Errorf("pages: %w", err)
	}
	p.tmpl = make(map[string]*template.Template)
	for _, f := range files {
		name := path.Base(f)
		if name == "layout.html" || strings.HasPrefix(name, "_") {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, f)
		if err != nil {
			return fmt.Errorf("pages: %w", err)
		}
		p.tmpl[name] = t
	}
	return nil
}

// asset is an embedded file ready to serve.
type asset struct {
	data  []byte
	ctype string
	etag  string
}

// loadAssets reads the embedded assets and hashes them.
func (p *Pages) loadAssets() error {
	p.assets = make(map[string]*asset)
	err := fs.WalkDir(assetFS, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assetFS.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a := &asset{data: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		switch path.Ext(name) {
		case ".css":
			a.ctype = "text/css; charset=utf-8"
		case ".js":
			a.ctype = "text/javascript; charset=utf-8"
		default:
			a.ctype = "application/octet-stream"
		}
		p.assets["/"+strings.TrimPrefix(name, "assets/")] = a
		return nil
	})
	if err != nil {
		return fmt.Errorf("pages: assets: %w", err)
	}
	url := func(name string) string {
		return "/assets/" + name + "?v=" + strings.Trim(p.assets["/"+name].etag, `"`)
	}
	p.css, p.js = url("style.css"), url("realtime.js")
	return nil
}

// serveAsset serves GET /assets/*filepath. URLs carry the content hash, so
// the answer may be cached for a year.
func (p *Pages) serveAsset(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	a, ok := p.assets[ps.ByName("filepath")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") == strings.Trim(a.etag, `"`) {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, max-age=300")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.data))
}

// parallel runs fns concurrently, at most GOMAXPROCS at a time, and returns
// the first error.
func parallel(fns ...func() error) error {
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// A panic here would end the process: handle's recover
			// does not reach other goroutines.
			defer func() {
				if v := recover(); v != nil {
					errs[i] = fmt.Errorf("pages: panic: %v", v)
				}
			}()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
