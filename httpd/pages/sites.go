package pages

import (
	"encoding/base64"
	"errors"
	"html"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

//go:generate go run mkzones.go

// The website-management pages (SPEC §11): the websites list, add, the
// tracking snippet and its check, settings, delete and goals. Every page
// needs a signed-in account and finds websites through its engine.Owner, so
// another account's website is a 404 like a missing one.

// Limits of the website pages.
const (
	// homePerPage is the websites a page of the list shows: 50. Each
	// costs two queries (its 30 days and its days).
	homePerPage = 50
	// maxSiteForm bounds the body of the add and settings forms: 512 KiB,
	// room for exclude_params and exclude_ips at the engine's limit of
	// 65,535 characters each, form-encoded (a newline is %0D%0A).
	maxSiteForm = 512 << 10
	// maxGoalForm bounds the body of the goal form: 64 KiB, room for a
	// display name at the engine's limit (2,006 characters of up to 4
	// bytes, percent-encoded).
	maxGoalForm = 64 << 10
	// verifyMinutes is how far back "verify installation" looks for a
	// pageview: 10 minutes (the engine's realtime window is 30).
	verifyMinutes = 10
	// maxFlashRunes bounds a name quoted in a notice, so that the notice
	// fits its cookie (goal names may have 2,006 characters).
	maxFlashRunes = 60
)

// The notice cookie: a message for the page a form redirects to ("The
// website was deleted."), signed, read and removed by that page.
const (
	flashCookie  = "ws_flash"
	purposeFlash = "flash"
	flashLife    = time.Minute
)

// registerSites mounts the website pages on r. httprouter cannot hold
// /websites/new beside /websites/:id/..., so /websites/:id serves "new".
func (p *Pages) registerSites(r *httprouter.Router) {
	r.GET("/", p.handle(p.home))
	r.GET("/websites/:id", p.handle(p.newSiteForm))
	r.POST("/websites/:id", p.handleLimit(maxSiteForm, p.createSite))
	r.GET("/websites/:id/settings", p.handle(p.siteHandler(p.settingsForm)))
	r.POST("/websites/:id/settings", p.handleLimit(maxSiteForm, p.siteHandler(p.saveSettings)))
	r.GET("/websites/:id/snippet", p.handle(p.siteHandler(p.snippet)))
	r.GET("/websites/:id/verify", p.handle(p.siteHandler(p.verifyPage)))
	r.GET("/websites/:id/delete", p.handle(p.siteHandler(p.deleteForm)))
	r.POST("/websites/:id/delete", p.handle(p.siteHandler(p.deleteSite)))
	r.GET("/websites/:id/goals", p.handle(p.siteHandler(p.goalsPage)))
	r.POST("/websites/:id/goals", p.handleLimit(maxGoalForm, p.siteHandler(p.addGoal)))
	r.POST("/websites/:id/goals/:goal/delete", p.handle(p.siteHandler(p.deleteGoal)))
	r.GET("/websites/:id/export", p.handle(p.siteHandler(p.exportDownload)))                // export.go
	r.GET("/websites/:id/import", p.handle(p.siteHandler(p.importPage)))                    // upload.go
	r.POST("/websites/:id/import", p.handleLimit(maxUpload, p.siteHandler(p.importUpload))) // upload.go
}

// zone is a time zone of the website forms' list (zones.go).
type zone struct{ Name, Label string }

// signedIn returns the signed-in account of r. Without one it redirects to
// the sign-in page, which comes back to next, and reports false.
func (p *Pages) signedIn(w http.ResponseWriter, r *http.Request, next string) (identity.Account, bool) {
	a, ok := p.session(r)
	if !ok {
		to := "/login"
		if next != "/" {
			to += "?next=" + url.QueryEscape(next)
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
	}
	return a, ok
}

// siteRequest is a request for one of the signed-in account's websites.
type siteRequest struct {
	acc identity.Account
	own engine.Owner
	web engine.Website
	ps  httprouter.Params
}

// base is the path of the website's management pages.
func (s *siteRequest) base() string { return "/websites/" + strconv.FormatUint(uint64(s.web.ID), 10) }

// siteHandlerFunc is a page of one website; see siteHandler.
type siteHandlerFunc func(w http.ResponseWriter, r *http.Request, s *siteRequest) error

// siteHandler adapts a page of one website: it needs a session (else a
// redirect to /login), a valid CSRF token on a POST (else 403), and :id
// among the account's websites (else 404).
func (p *Pages) siteHandler(h siteHandlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
		next := r.URL.Path
		if ps.ByName("goal") != "" { // a POST-only address: back to the list
			next = "/websites/" + ps.ByName("id") + "/goals"
		}
		acc, ok := p.signedIn(w, r, next)
		if !ok {
			return nil
		}
		if r.Method == http.MethodPost {
			if err := p.checkPost(r); err != nil {
				return err
			}
		}
		id, ok := parseID(ps.ByName("id"))
		if !ok {
			return errNotFound
		}
		own := p.e.Owner(acc.ID)
		web, err := own.Website(r.Context(), id)
		if err != nil {
			return err
		}
		return h(w, r, &siteRequest{acc: acc, own: own, web: web, ps: ps})
	}
}

// parseID parses a website id: a positive decimal integer without sign or
// leading zero that fits 32 bits (as the API reads one).
func parseID(s string) (uint32, bool) {
	n, ok := parseUint(s, 32)
	return uint32(n), ok
}

// parseUint parses a positive decimal integer without sign or leading zero
// that fits bits bits: a website or goal id.
func parseUint(s string, bits int) (uint64, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, bits)
	return n, err == nil
}

// siteHead is what every page of a website shows above its content: the
// breadcrumbs, the title and the website's navigation.
type siteHead struct {
	ID      uint32
	Domain  string
	Current string // the page in the navigation: settings, snippet, goals, delete
	Notice  string
}

// head returns the siteHead of a page of s, with the notice r carries.
func (p *Pages) head(w http.ResponseWriter, r *http.Request, s *siteRequest, current string) siteHead {
	return siteHead{ID: s.web.ID, Domain: s.web.Domain, Current: current, Notice: p.takeFlash(w, r)}
}

// renderSite renders a page of a website for its owner.
func (p *Pages) renderSite(w http.ResponseWriter, r *http.Request, status int, name, title string, s *siteRequest, form string, body any) {
	acc := s.acc
	p.renderView(w, r, status, name, &view{Title: title + " · " + s.web.Domain, Account: &acc, Form: form, Body: body})
}

// setFlash sets the notice of the next page.
func (p *Pages) setFlash(w http.ResponseWriter, msg string) {
	exp := strconv.FormatInt(p.now().Add(flashLife).Unix(), 10)
	p.setCookie(w, flashCookie, p.sign(purposeFlash, exp, base64.RawURLEncoding.EncodeToString([]byte(msg))), "/", flashLife)
}

// takeFlash returns the notice of r, if it has a valid one, and removes it.
func (p *Pages) takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	p.setCookie(w, flashCookie, "", "/", -1)
	f, ok := p.verify(purposeFlash, c.Value, 2)
	if !ok || !p.unexpired(f[0]) {
		return ""
	}
	msg, err := base64.RawURLEncoding.DecodeString(f[1])
	if err != nil {
		return ""
	}
	return string(msg)
}

// quote shortens a name (a domain, a goal) for a notice.
func quote(s string) string {
	if utf8.RuneCountInString(s) <= maxFlashRunes {
		return s
	}
	return string([]rune(s)[:maxFlashRunes-1]) + "…"
}

// assetURL returns the address of an embedded asset, with its hash.
func (p *Pages) assetURL(name string) string {
	return "/assets/" + name + "?v=" + strings.Trim(p.assets["/"+name].etag, `"`)
}

// # The list

// siteRow is a website on the list.
type siteRow struct {
	ID        uint32
	Domain    string
	Href      string
	Privacy   string
	Visitors  uint64 // of the last 30 days
	Pageviews uint64
	Today     uint64 // visitors today, in the website's time zone
	Spark     string
	SparkText string
}

// homeData is the data of home.html.
type homeData struct {
	Sites  []siteRow
	Total  int    // websites of the account matching the search
	Any    bool   // the account has websites at all
	Query  string // the search
	Notice string
	Page   int
	Pages  int
	Prev   string // links to the neighbouring pages, or ""
	Next   string
}

// home serves GET /: the signed-in account's websites, newest first, each
// with its visitors and pageviews of the last 30 days, its visitors today
// and a sparkline of its days; q searches the domains (a substring), page
// pages them homePerPage at a time.
func (p *Pages) home(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	a, ok := p.signedIn(w, r, "/")
	if !ok {
		return nil
	}
	ctx := r.Context()
	q := r.URL.Query()
	search := strings.TrimSpace(q.Get("q"))
	if len(search) > maxParam {
		return badRequest("The search is longer than %d characters.", maxParam)
	}
	page, _ := strconv.Atoi(q.Get("page"))
	own := p.e.Owner(a.ID)
	list := own.Websites(ctx, engine.WebsiteQuery{Search: search, SortBy: "id", Desc: true, Page: page, PerPage: homePerPage})
	d := homeData{
		Sites: make([]siteRow, len(list.Websites)), Total: list.Total, Query: search,
		Notice: p.takeFlash(w, r), Page: list.Page, Pages: list.LastPage,
	}
	d.Any = list.Total > 0
	if !d.Any && search != "" {
		d.Any = own.Websites(ctx, engine.WebsiteQuery{PerPage: 1}).Total > 0
	}
	link := func(page int) string {
		v := url.Values{}
		if search != "" {
			v.Set("q", search)
		}
		if page > 1 {
			v.Set("page", strconv.Itoa(page))
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	if d.Page > 1 {
		d.Prev = link(min(d.Page, d.Pages+1) - 1)
	}
	if d.Page < d.Pages {
		d.Next = link(d.Page + 1)
	}
	// Each row costs three queries: a view slot, as for an overview.
	release, err := p.viewSlot(ctx)
	if err != nil {
		return err
	}
	defer release()
	var fns []func() error
	for i, web := range list.Websites {
		fns = append(fns, func() error {
			today, err := own.Today(ctx, web.ID)
			if errors.Is(err, engine.ErrNotFound) {
				return nil // deleted meanwhile: its row is left out below
			}
			if err != nil {
				return err
			}
			from := today - 29
			// The Stats API's answers, as on the overview (SPEC §10.2).
			days := engine.DateRange{FromDay: from, ToDay: today}
			tot, err := own.Query(ctx, web.ID, engine.Query{Metrics: []string{"visitors", "pageviews"}, DateRange: days})
			if err != nil {
				return err
			}
			series, err := own.Query(ctx, web.ID, engine.Query{Metrics: []string{"visitors"}, DateRange: days, Dimensions: []string{"time:day"}})
			if err != nil {
				return err
			}
			byDay := make(map[string]uint64, len(series.Results))
			for _, r := range series.Results {
				byDay[dimString(r.Dimensions[0])] = metricUint(r.Metrics[0])
			}
			vals := make([]uint64, 30)
			for j := range vals {
				vals[j] = byDay[(from + engine.Date(j)).String()]
			}
			t := engine.Totals{Visitors: metricUint(tot.Results[0].Metrics[0]), Pageviews: metricUint(tot.Results[0].Metrics[1])}
			d.Sites[i] = siteRow{
				ID: web.ID, Domain: web.Domain, Href: "/stats/" + web.Domain, Privacy: privacyName(web.Privacy),
				Visitors: t.Visitors, Pageviews: t.Pageviews, Today: vals[29], Spark: sparkline(vals, 120, 32),
				SparkText: "Visitors per day over the last 30 days, from " + formatInt(vals[0]) + " to " + formatInt(vals[29]),
			}
			return nil
		})
	}
	err = parallel(fns...)
	release()
	if errors.Is(err, engine.ErrNotFound) {
		err = nil // deleted between the queries of its row
	}
	if err != nil {
		return err
	}
	d.Sites = slices.DeleteFunc(d.Sites, func(s siteRow) bool { return s.ID == 0 })
	p.renderView(w, r, http.StatusOK, "home.html", &view{Title: "Your websites", Account: &a, Body: d})
	return nil
}

// privacyName names a privacy setting in the list.
func privacyName(n int) string {
	switch n {
	case 0:
		return "Public"
	case 2:
		return "Password"
	}
	return "Private"
}

// # Add and settings

// field is a field of a form: its name (also its element's id), its value
// and its error.
type field struct {
	Name  string
	Value string
	Error string
}

// Described returns the ids an input's aria-describedby lists: its hint
// (hint is true when the template shows one, id "<name>-hint") and its
// error ("<name>-error").
func (f field) Described(hint bool) string {
	var ids []string
	if hint {
		ids = append(ids, f.Name+"-hint")
	}
	if f.Error != "" {
		ids = append(ids, f.Name+"-error")
	}
	return strings.Join(ids, " ")
}

// siteForm is the data of site_form.html: the add form (New) or a
// website's settings.
type siteForm struct {
	siteHead
	New    bool
	Action string
	Script string // the address of sites.js

	DomainInput   field // New only
	Privacy       field // "0", "1" or "2"
	Password      field
	Email         field // "1": on
	ExcludeBots   field
	ExcludeParams field
	ExcludeIPs    field
	Timezone      field
	// DetectZone lets the script put the browser's zone in place of UTC:
	// on a new, untouched form only.
	DetectZone bool
	// HasPassword: the website has a password (settings).
	HasPassword bool
	// PasswordTyped: the refused form had a password, which is never sent
	// back.
	PasswordTyped bool
	Errors        []formError // every error, in the order of the fields
	Zones         []zone
}

// formError is an error of the summary above a form, linking to its field.
type formError struct {
	ID  string // the id of the field's element
	Msg string
}

// siteFields is the order of a website's fields in its form.
var siteFields = []string{"domain", "privacy", "password", "email", "exclude_bots", "exclude_params", "exclude_ips", "timezone"}

// newSiteForm serves GET /websites/new: the form of a new website, with the
// engine's defaults. GET /websites/<id> leads to the website's settings.
func (p *Pages) newSiteForm(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if ps.ByName("id") != "new" {
		return p.siteHandler(func(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
			http.Redirect(w, r, s.base()+"/settings", http.StatusSeeOther)
			return nil
		})(w, r, ps)
	}
	a, ok := p.signedIn(w, r, "/websites/new")
	if !ok {
		return nil
	}
	f := p.siteFormData(nil)
	f.Notice = p.takeFlash(w, r)
	f.Privacy.Value, f.ExcludeBots.Value, f.Timezone.Value, f.DetectZone = "1", "1", "UTC", true
	p.renderView(w, r, http.StatusOK, "site_form.html", &view{Title: "Add a website", Account: &a, Form: f.Action, Body: f})
	return nil
}

// siteFormData returns a form for web (nil: a new website).
func (p *Pages) siteFormData(web *engine.Website) *siteForm {
	f := &siteForm{
		New: web == nil, Action: "/websites/new", Script: p.assetURL("sites.js"), Zones: zones,
		DomainInput: field{Name: "domain"}, Privacy: field{Name: "privacy"}, Password: field{Name: "password"},
		Email: field{Name: "email"}, ExcludeBots: field{Name: "exclude_bots"},
		ExcludeParams: field{Name: "exclude_params"}, ExcludeIPs: field{Name: "exclude_ips"},
		Timezone: field{Name: "timezone"},
	}
	if web != nil {
		f.siteHead = siteHead{ID: web.ID, Domain: web.Domain, Current: "settings"}
		f.Action = "/websites/" + strconv.FormatUint(uint64(web.ID), 10) + "/settings"
		f.DomainInput.Value = web.Domain
		f.Privacy.Value = strconv.Itoa(web.Privacy)
		f.Email.Value = strconv.Itoa(web.Email)
		f.ExcludeBots.Value = strconv.Itoa(web.ExcludeBots)
		if web.ExcludeParams != nil {
			f.ExcludeParams.Value = *web.ExcludeParams
		}
		if web.ExcludeIPs != nil {
			f.ExcludeIPs.Value = *web.ExcludeIPs
		}
		f.Timezone.Value = web.Timezone
		f.HasPassword = web.HasPassword()
	}
	return f
}

// siteInput reads a website's form into the engine's input: the text as
// typed (textarea lines with \n), a checkbox not sent is "0", an empty
// password is none (keep the current one), and a password goes only with
// privacy 2. The engine validates all of it.
func siteInput(form url.Values, create bool) engine.WebsiteInput {
	get := func(k string) *string {
		if vs, ok := form[k]; ok && len(vs) > 0 {
			s := vs[0]
			return &s
		}
		return nil
	}
	box := func(k string) *string {
		if v := get(k); v != nil {
			return v
		}
		s := "0"
		return &s
	}
	lines := func(k string) *string {
		v := get(k)
		if v != nil {
			s := strings.ReplaceAll(*v, "\r\n", "\n")
			v = &s
		}
		return v
	}
	in := engine.WebsiteInput{
		Privacy: get("privacy"), Password: get("password"),
		Email: box("email"), ExcludeBots: box("exclude_bots"),
		ExcludeParams: lines("exclude_params"), ExcludeIPs: lines("exclude_ips"),
		Timezone: get("timezone"),
	}
	if create {
		in.Domain = get("domain")
	}
	if in.Privacy == nil || strings.TrimSpace(*in.Privacy) != "2" {
		in.Password = nil // only the Password choice has one
	}
	return in
}

// refill puts the values of a refused form back into f, with the engine's
// messages beside their fields.
func (f *siteForm) refill(form url.Values, verr *engine.ValidationError) {
	if f.New {
		f.DomainInput.Value = form.Get("domain")
	}
	f.Privacy.Value = form.Get("privacy")
	f.Email.Value = form.Get("email")
	f.ExcludeBots.Value = form.Get("exclude_bots")
	f.ExcludeParams.Value = strings.ReplaceAll(form.Get("exclude_params"), "\r\n", "\n")
	f.ExcludeIPs.Value = strings.ReplaceAll(form.Get("exclude_ips"), "\r\n", "\n")
	f.Timezone.Value = form.Get("timezone")
	f.PasswordTyped = form.Get("password") != ""
	byName := map[string]*field{
		"domain": &f.DomainInput, "privacy": &f.Privacy, "password": &f.Password, "email": &f.Email,
		"exclude_bots": &f.ExcludeBots, "exclude_params": &f.ExcludeParams, "exclude_ips": &f.ExcludeIPs,
		"timezone": &f.Timezone,
	}
	for _, fe := range verr.Fields {
		if fd, ok := byName[fe.Field]; ok {
			fd.Error = strings.TrimSpace(fd.Error + " " + fe.Msg)
		}
	}
	for _, name := range siteFields {
		fd := byName[name]
		if fd.Error == "" {
			continue
		}
		id := name
		if name == "privacy" { // the radio button chosen, else the first
			switch v := form.Get("privacy"); v {
			case "0", "1", "2":
				id += "-" + v
			default:
				id += "-0"
			}
		}
		f.Errors = append(f.Errors, formError{ID: id, Msg: fd.Error})
	}
}

// createSite serves POST /websites/new.
func (p *Pages) createSite(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if ps.ByName("id") != "new" {
		return errNotFound
	}
	a, ok := p.signedIn(w, r, "/websites/new")
	if !ok {
		return nil
	}
	if err := p.checkPost(r); err != nil {
		return err
	}
	web, err := p.e.Owner(a.ID).CreateWebsite(r.Context(), siteInput(r.PostForm, true))
	var verr *engine.ValidationError
	if errors.As(err, &verr) {
		f := p.siteFormData(nil)
		f.refill(r.PostForm, verr)
		p.renderView(w, r, http.StatusUnprocessableEntity, "site_form.html", &view{Title: "Add a website", Account: &a, Form: f.Action, Body: f})
		return nil
	}
	if err != nil {
		return err
	}
	p.setFlash(w, quote(web.Domain)+" was added. Put the snippet below on its pages.")
	http.Redirect(w, r, "/websites/"+strconv.FormatUint(uint64(web.ID), 10)+"/snippet", http.StatusSeeOther)
	return nil
}

// settingsForm serves GET /websites/:id/settings.
func (p *Pages) settingsForm(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	f := p.siteFormData(&s.web)
	f.Notice = p.takeFlash(w, r)
	p.renderSite(w, r, http.StatusOK, "site_form.html", "Settings", s, f.Action, f)
	return nil
}

// saveSettings serves POST /websites/:id/settings. The domain cannot
// change. An empty password keeps the current one; a privacy other than 2
// (password) removes it.
func (p *Pages) saveSettings(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	ctx := r.Context()
	web, err := s.own.UpdateWebsite(ctx, s.web.ID, siteInput(r.PostForm, false))
	var verr *engine.ValidationError
	if errors.As(err, &verr) {
		f := p.siteFormData(&s.web)
		f.refill(r.PostForm, verr)
		p.renderSite(w, r, http.StatusUnprocessableEntity, "site_form.html", "Settings", s, f.Action, f)
		return nil
	}
	if err != nil {
		return err
	}
	msg := "The settings were saved."
	if web.Privacy != 2 && web.HasPassword() {
		if _, err := s.own.RemoveWebsitePassword(ctx, web.ID); err != nil {
			return err
		}
		msg += " The password was removed."
	}
	p.setFlash(w, msg)
	http.Redirect(w, r, s.base()+"/settings", http.StatusSeeOther)
	return nil
}

// # Snippet and verification

// snippetData is the data of site_snippet.html.
type snippetData struct {
	siteHead
	Snippet string // the HTML to paste
	Base    string // the server's address
	Guessed bool   // Base comes from the request, not from -public-url
	Script  string // the address of sites.js
	Verify  string // the address of the check
	Checked bool   // the check ran
	Live    bool   // a pageview arrived in the last verifyMinutes
	Ago     string // when the last one arrived ("2 minutes ago")
	Count   uint64 // pageviews in the last verifyMinutes
	Minutes int
	// What the causes of a failed check mention of the settings.
	ExcludeBots bool
	ExcludedIPs int // lines of exclude_ips
}

// snippet serves GET /websites/:id/snippet.
func (p *Pages) snippet(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	p.renderSite(w, r, http.StatusOK, "site_snippet.html", "Tracking snippet", s, "", p.snippetData(w, r, s))
	return nil
}

func (p *Pages) snippetData(w http.ResponseWriter, r *http.Request, s *siteRequest) *snippetData {
	base := p.baseURL(r)
	b := html.EscapeString(base)
	d := &snippetData{
		siteHead: p.head(w, r, s, "snippet"),
		Snippet:  `<script data-host="` + b + `" src="` + b + `/js/script.js" async defer></script>`,
		Base:     base, Guessed: p.publicURL == "", Script: p.assetURL("sites.js"), Verify: s.base() + "/verify", Minutes: verifyMinutes,
		ExcludeBots: s.web.ExcludeBots == 1,
	}
	if s.web.ExcludeIPs != nil {
		for line := range strings.SplitSeq(*s.web.ExcludeIPs, "\n") {
			if strings.TrimSpace(line) != "" {
				d.ExcludedIPs++
			}
		}
	}
	return d
}

// verifyPage serves GET /websites/:id/verify: the snippet page with the answer
// to "did a pageview arrive in the last verifyMinutes?", from the engine's
// realtime counts (which count only what passed the filters).
func (p *Pages) verifyPage(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	rt, err := s.own.Realtime(r.Context(), s.web.ID)
	if err != nil {
		return err
	}
	d := p.snippetData(w, r, s)
	d.Checked = true
	last := len(rt.Pageviews) - 1
	for i := last; i > last-verifyMinutes; i-- {
		n := rt.Pageviews[i]
		if n == 0 {
			continue
		}
		d.Count += n
		if !d.Live {
			d.Live = true
			switch ago := last - i; ago {
			case 0:
				d.Ago = "this minute"
			case 1:
				d.Ago = "a minute ago"
			default:
				d.Ago = strconv.Itoa(ago) + " minutes ago"
			}
		}
	}
	p.renderSite(w, r, http.StatusOK, "site_snippet.html", "Tracking snippet", s, "", d)
	return nil
}

// baseURL is the server's address for r, without a trailing '/'.
func (p *Pages) baseURL(r *http.Request) string {
	if p.base != nil {
		return strings.TrimRight(p.base(r), "/")
	}
	return defaultBaseURL(r)
}

// defaultBaseURL is Options.BaseURL's default: http, or https over TLS, and
// the Host header when it is a plain host[:port], else the address the
// connection came to.
func defaultBaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if !plainHost(host) {
		host = "localhost"
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			host = a.String()
		}
	}
	return scheme + "://" + host
}

// plainHost reports whether s is host[:port] with a host of letters,
// digits, '-', '_' and '.', or an IPv6 address in brackets.
func plainHost(s string) bool {
	host := s
	if h, port, err := net.SplitHostPort(s); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return false
		}
		host = h
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	if strings.Contains(s, "[") {
		a, err := netip.ParseAddr(host)
		return err == nil && a.Is6() && a.Zone() == "" && strings.HasPrefix(s, "[")
	}
	if host == "" || len(host) > 253 {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// # Delete

// deleteData is the data of site_delete.html.
type deleteData struct {
	siteHead
	Action  string
	Confirm field
}

// deleteForm serves GET /websites/:id/delete.
func (p *Pages) deleteForm(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	d := deleteData{siteHead: p.head(w, r, s, "delete"), Action: s.base() + "/delete", Confirm: field{Name: "confirm"}}
	p.renderSite(w, r, http.StatusOK, "site_delete.html", "Delete", s, d.Action, d)
	return nil
}

// deleteSite serves POST /websites/:id/delete: the website goes with its
// statistics and goals when the form names its domain.
func (p *Pages) deleteSite(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	typed := strings.TrimSpace(r.PostForm.Get("domain"))
	// The domain as typed or as the API would store it ("Bücher.example"
	// for xn--bcher-kva.example).
	norm, ok := engine.NormalizeDomain(typed)
	if !strings.EqualFold(typed, s.web.Domain) && (!ok || norm != s.web.Domain) {
		d := deleteData{siteHead: p.head(w, r, s, "delete"), Action: s.base() + "/delete", Confirm: field{
			Name: "confirm", Value: typed,
			Error: "The domain you typed is not " + s.web.Domain + ". Type it exactly to delete this website.",
		}}
		if typed == "" {
			d.Confirm.Error = "Type the domain " + s.web.Domain + " to delete this website."
		}
		p.renderSite(w, r, http.StatusUnprocessableEntity, "site_delete.html", "Delete", s, d.Action, d)
		return nil
	}
	if err := s.own.DeleteWebsite(r.Context(), s.web.ID); err != nil {
		return err
	}
	p.setFlash(w, quote(s.web.Domain)+" and its statistics were deleted.")
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

// # Goals

// goalsData is the data of site_goals.html.
type goalsData struct {
	siteHead
	Action string
	CSRF   string // the token of the add forms (one action)
	Goals  []goalRow
	Max    int
	// The fields of the add forms, and an error of neither.
	EventName, Currency, EventDisplay field
	PagePath, PageDisplay             field
	Error                             string
}

// goalRow is a goal in the list, with its delete form.
type goalRow struct {
	engine.Goal
	Delete, CSRF string
}

// goalsPage serves GET /websites/:id/goals.
func (p *Pages) goalsPage(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	d, err := p.goalsData(w, r, s)
	if err != nil {
		return err
	}
	p.renderSite(w, r, http.StatusOK, "site_goals.html", "Goals", s, "", d)
	return nil
}

// goalsData returns the goals page of s, with the CSRF tokens of its forms.
func (p *Pages) goalsData(w http.ResponseWriter, r *http.Request, s *siteRequest) (*goalsData, error) {
	goals, err := s.own.Goals(r.Context(), s.web.ID)
	if err != nil {
		return nil, err
	}
	d := &goalsData{
		siteHead: p.head(w, r, s, "goals"), Action: s.base() + "/goals", Max: engine.MaxGoals,
		EventName: field{Name: "event_name"}, Currency: field{Name: "currency"}, EventDisplay: field{Name: "event_display"},
		PagePath: field{Name: "page_path"}, PageDisplay: field{Name: "page_display"},
	}
	d.CSRF = p.csrfToken(w, r, d.Action)
	for _, g := range goals {
		del := d.Action + "/" + strconv.FormatUint(g.ID, 10) + "/delete"
		d.Goals = append(d.Goals, goalRow{Goal: g, Delete: del, CSRF: p.csrfToken(w, r, del)})
	}
	return d, nil
}

// goalLabels name the engine's goal fields in messages, which it writes
// as Plausible does, without the field ("must be 1 to 120 characters").
var goalLabels = map[string]string{
	"event_name": "Event name", "page_path": "Page path", "currency": "Currency", "display_name": "Display name",
}

// addGoal serves POST /websites/:id/goals: kind "event" (event_name,
// currency, event_display) or "page" (page_path, page_display) finds or
// creates a goal.
func (p *Pages) addGoal(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	ctx := r.Context()
	form := r.PostForm
	kind := form.Get("kind")
	var g engine.Goal
	switch kind {
	case "event":
		g = engine.Goal{EventName: form.Get("event_name"), Currency: form.Get("currency"), DisplayName: form.Get("event_display")}
	case "page":
		g = engine.Goal{PagePath: form.Get("page_path"), DisplayName: form.Get("page_display")}
	}
	before, err := s.own.Goals(ctx, s.web.ID)
	if err != nil {
		return err
	}
	got, err := s.own.AddGoal(ctx, s.web.ID, g)
	var verr *engine.ValidationError
	if errors.As(err, &verr) {
		d, err := p.goalsData(w, r, s)
		if err != nil {
			return err
		}
		d.EventName.Value, d.Currency.Value, d.EventDisplay.Value = g.EventName, g.Currency, g.DisplayName
		d.PagePath.Value, d.PageDisplay.Value = g.PagePath, g.DisplayName
		if kind != "event" {
			d.EventDisplay.Value = ""
		}
		if kind != "page" {
			d.PageDisplay.Value = ""
		}
		for _, fe := range verr.Fields {
			msg := fe.Msg
			if l, ok := goalLabels[fe.Field]; ok {
				msg = l + " " + msg
			}
			msg = strings.ToUpper(msg[:1]) + msg[1:] + "."
			var fd *field
			switch {
			case fe.Field == "display_name" && kind == "event":
				fd = &d.EventDisplay
			case fe.Field == "display_name" && kind == "page":
				fd = &d.PageDisplay
			case fe.Field == "event_name", fe.Field == "goal" && kind == "event" && strings.TrimSpace(g.EventName) == "":
				fd = &d.EventName
			case fe.Field == "page_path", fe.Field == "goal" && kind == "page" && strings.TrimSpace(g.PagePath) == "":
				fd = &d.PagePath
			case fe.Field == "currency":
				fd = &d.Currency
			}
			if fd == nil {
				d.Error = strings.TrimSpace(d.Error + " " + msg)
				continue
			}
			fd.Error = strings.TrimSpace(fd.Error + " " + msg)
		}
		p.renderSite(w, r, http.StatusUnprocessableEntity, "site_goals.html", "Goals", s, "", d)
		return nil
	}
	if err != nil {
		return err
	}
	msg := "The goal " + quote(got.DisplayName) + " was added."
	for _, b := range before {
		if b.ID == got.ID {
			msg = "The goal " + quote(got.DisplayName) + " already exists."
		}
	}
	p.setFlash(w, msg)
	http.Redirect(w, r, s.base()+"/goals", http.StatusSeeOther)
	return nil
}

// deleteGoal serves POST /websites/:id/goals/:goal/delete.
func (p *Pages) deleteGoal(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	ctx := r.Context()
	id, ok := parseUint(s.ps.ByName("goal"), 64)
	if !ok {
		return errNotFound
	}
	goals, err := s.own.Goals(ctx, s.web.ID)
	if err != nil {
		return err
	}
	name := ""
	for _, g := range goals {
		if g.ID == id {
			name = g.DisplayName
		}
	}
	if err := s.own.DeleteGoal(ctx, s.web.ID, id); err != nil {
		return err
	}
	p.setFlash(w, "The goal "+quote(name)+" was deleted.")
	http.Redirect(w, r, s.base()+"/goals", http.StatusSeeOther)
	return nil
}
