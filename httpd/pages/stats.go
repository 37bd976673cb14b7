package pages

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd/internal/limit"
)

// visit is a request for a website's pages: the website, the signed-in
// account (nil: none), and whether the request may see the statistics.
type visit struct {
	web     engine.Website
	account *identity.Account
	owner   bool
	allowed bool // false: show the password form
}

// lookup finds the website of :domain and applies its privacy. A private
// website the request may not see is errNotFound, exactly like an unknown
// domain.
func (p *Pages) lookup(r *http.Request, domain string) (*visit, error) {
	web, err := p.e.Unscoped().WebsiteByDomain(r.Context(), domain)
	if err != nil {
		return nil, errNotFound
	}
	v := &visit{web: web}
	if a, ok := p.session(r); ok {
		v.account = &a
		v.owner = a.ID == web.Account
	}
	switch web.Privacy {
	case 0:
		v.allowed = true
	case 2:
		v.allowed = v.owner || p.hasPassword(r, &web) || p.hasShare(r, &web)
	default: // 1, and anything unknown: private
		if !v.owner && !p.hasShare(r, &web) {
			return nil, errNotFound
		}
		v.allowed = true
	}
	return v, nil
}

// base returns the path of the website's pages.
func (v *visit) base() string { return "/stats/" + v.web.Domain }

// canonical redirects a request whose :domain is not written as the website's
// domain (WWW.Example.com) to the canonical address, so that the password
// cookie's path matches. It reports whether it did.
// rest is what follows the domain in the path ("" or "/<name>").
func canonical(w http.ResponseWriter, r *http.Request, v *visit, domain, rest string) bool {
	if domain == v.web.Domain {
		return false
	}
	u := v.base() + rest
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, u, http.StatusMovedPermanently)
	return true
}

// passwordData is the data of password.html.
type passwordData struct {
	Domain string
	Action string
	Next   string
	Error  string
}

// passwordForm shows the password form of v's website.
func (p *Pages) passwordForm(w http.ResponseWriter, r *http.Request, v *visit, next, msg string) {
	p.passwordFormStatus(w, r, http.StatusUnauthorized, v, next, msg)
}

func (p *Pages) passwordFormStatus(w http.ResponseWriter, r *http.Request, status int, v *visit, next, msg string) {
	p.renderView(w, r, status, "password.html", &view{
		Title: v.web.Domain, Account: v.account, Form: v.base(),
		Body: passwordData{Domain: v.web.Domain, Action: v.base(), Next: next, Error: msg},
	})
}

// nextFor returns next when it is an address of v's website, else the
// overview.
func nextFor(v *visit, next string) string {
	next = safeNext(next, "")
	b := v.base()
	if next == b || strings.HasPrefix(next, b+"/") || strings.HasPrefix(next, b+"?") {
		return next
	}
	return b
}

// unlock serves POST /stats/:domain: the password form.
func (p *Pages) unlock(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	v, err := p.lookup(r, ps.ByName("domain"))
	if err != nil {
		return err
	}
	next := nextFor(v, r.PostForm.Get("next"))
	if v.web.Privacy != 2 || v.owner {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	pw := r.PostForm.Get("password")
	if pw == "" {
		p.passwordForm(w, r, v, next, "Enter the password of this website's statistics.")
		return nil
	}
	// Take an attempt from the client's and the website's budgets before
	// hashing (argon2id is what the limits protect); a right password, or a
	// check that did not run, gives them back.
	ipKey, siteKey := limit.ClientKey(p.clientIP(r)), strconv.FormatUint(uint64(v.web.ID), 10)
	// A client that has not failed lately goes first for the hash slots
	// (engine.WithPasswordPriority).
	ctx := r.Context()
	if !p.pwIPFails.Used(ipKey) {
		ctx = engine.WithPasswordPriority(ctx)
	}
	ok, _, wait := p.pwIPFails.Take(ipKey)
	if ok {
		if ok, _, wait = p.pwSiteFails.Take(siteKey); !ok {
			p.pwIPFails.Refund(ipKey)
		}
	}
	if !ok {
		w.Header().Set("Retry-After", retryAfter(wait))
		p.passwordFormStatus(w, r, http.StatusTooManyRequests, v, next,
			"Too many wrong passwords. Wait "+retryAfter(wait)+" seconds and try again.")
		return nil
	}
	right, err := p.e.CheckPassword(ctx, v.web.ID, pw)
	if err != nil || right {
		p.pwIPFails.Refund(ipKey)
		p.pwSiteFails.Refund(siteKey)
	}
	if err != nil {
		return err // engine.ErrBusy: 503
	}
	if !right {
		sleep(r.Context(), p.delay)
		p.passwordForm(w, r, v, next, "Wrong password. Check it and try again.")
		return nil
	}
	exp := strconv.FormatInt(p.now().Add(passwordLife).Unix(), 10)
	val := p.sign(purposePassword, strconv.FormatUint(uint64(v.web.ID), 10), exp, fingerprint([]byte(v.web.PasswordHash)))
	p.setCookie(w, passwordCookie, val, v.base(), passwordLife)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// rangeLink is a preset link of the range picker.
type rangeLink struct {
	Label, Href string
	Current     bool
}

// rangeBar is the data of the range picker.
type rangeBar struct {
	Links    []rangeLink
	From, To string
	Label    string
	Action   string
	Hidden   []hidden // other parameters the custom form keeps
}

func newRangeBar(action string, dr dateRange, keep url.Values) rangeBar {
	rb := rangeBar{From: dr.From.String(), To: dr.To.String(), Label: dr.Label(), Action: action, Hidden: hiddenOf(keep)}
	for _, pr := range presets {
		q := cloneValues(keep)
		if pr.Key != defaultPreset {
			q.Set("range", pr.Key)
		}
		href := action
		if len(q) > 0 {
			href += "?" + q.Encode()
		}
		rb.Links = append(rb.Links, rangeLink{Label: pr.Label, Href: href, Current: pr.Key == dr.Preset})
	}
	return rb
}

// total is one card of totals.
type total struct {
	Label  string
	Value  uint64
	Prev   uint64
	Change change
}

// topTable is a top-10 table of the overview, or one page of a statistic.
type topTable struct {
	table
	Href  string // the statistic's page
	Rows  []row
	Total int
	Rate  bool // a conversion-rate column
}

type row struct {
	cell
	Count uint64
	Bar   string
	Href  string // the view filtered by the row; "" for none
	Rate  string // the conversion rate of a goal
}

// overview serves GET /stats/:domain.
func (p *Pages) overview(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	v, err := p.lookup(r, ps.ByName("domain"))
	if err != nil {
		return err
	}
	if canonical(w, r, v, ps.ByName("domain"), "") {
		return nil
	}
	if !v.allowed {
		p.passwordForm(w, r, v, r.URL.RequestURI(), "")
		return nil
	}
	return p.renderOverview(w, r, v)
}

// viewRequest reads the range and the view of an overview's address.
func (p *Pages) viewRequest(r *http.Request, v *visit) (dateRange, viewState, error) {
	q := r.URL.Query()
	today, err := p.e.Unscoped().Today(r.Context(), v.web.ID)
	if err != nil {
		return dateRange{}, viewState{}, err
	}
	dr, err := parseRange(q, today)
	if err != nil {
		return dateRange{}, viewState{}, err
	}
	vs, err := parseView(q)
	return dr, vs, err
}

// renderOverview renders the overview of v's website, which the request may
// see.
func (p *Pages) renderOverview(w http.ResponseWriter, r *http.Request, v *visit) error {
	dr, vs, err := p.viewRequest(r, v)
	if err != nil {
		return err
	}
	release, err := p.viewSlot(r.Context())
	if err != nil {
		return err
	}
	d, err := p.overviewData(r.Context(), v, dr, vs)
	// The slot bounds the queries, not the writing: a slow reader must not
	// hold one.
	release()
	if err != nil {
		return err
	}
	d.ImportsNote = p.importsNote(r.Context(), v.web.ID, dr) // imports_note.go
	p.renderView(w, r, http.StatusOK, "overview.html", &view{Title: v.web.Domain, Account: v.account, Body: d})
	return nil
}

// rowsOf turns engine rows into table rows with bars relative to the first
// (largest) row.
func rowsOf(name string, rows []engine.Row) []row {
	var most uint64
	for _, r := range rows {
		most = max64(most, r.Count)
	}
	out := make([]row, len(rows))
	for i, r := range rows {
		out[i] = row{cell: displayValue(name, r.Value), Count: r.Count, Bar: barClass(r.Count, most)}
	}
	return out
}

// statRoute serves GET /stats/:domain/:name: the realtime page, a CSV
// export, or a statistic's page.
func (p *Pages) statRoute(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := ps.ByName("name")
	csvOut := strings.HasSuffix(name, ".csv")
	name = strings.TrimSuffix(name, ".csv")
	t, known := tableOf(name)
	if name == "export.zip" {
		csvOut, known = false, true
	}
	if name != "realtime" && !known {
		return errNotFound
	}
	v, err := p.lookup(r, ps.ByName("domain"))
	if err != nil {
		return err
	}
	if canonical(w, r, v, ps.ByName("domain"), "/"+url.PathEscape(ps.ByName("name"))) {
		return nil
	}
	if !v.allowed {
		if name == "realtime" && r.URL.Query().Get("format") == "json" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"status":401}` + "\n"))
			return nil
		}
		p.passwordForm(w, r, v, r.URL.RequestURI(), "")
		return nil
	}
	switch {
	case name == "realtime":
		return p.realtime(w, r, v)
	case name == "export.zip":
		return p.exportZip(w, r, v)
	case csvOut:
		return p.exportCSV(w, r, v, t)
	}
	return p.statPage(w, r, v, t)
}

// statParams are a statistic page's parameters besides the range.
type statParams struct {
	Search string
	SortBy string // "count" or "value"
	Sort   string // "desc" or "asc"
	Page   int
}

const perPage = 100

func parseStatParams(q url.Values) (statParams, error) {
	sp := statParams{Search: strings.TrimSpace(q.Get("search")), SortBy: "count", Sort: "desc", Page: 1}
	if len(sp.Search) > maxParam {
		return sp, badRequest("The search is longer than %d characters.", maxParam)
	}
	if q.Get("sort_by") == "value" {
		sp.SortBy = "value"
	}
	if q.Get("sort") == "asc" {
		sp.Sort = "asc"
	}
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1_000_000 {
			return sp, badRequest("The page number is not valid.")
		}
		sp.Page = n
	}
	return sp, nil
}

// values returns the parameters as a query, with dr's.
func (sp statParams) values(dr dateRange) url.Values {
	q := dr.Query()
	if sp.Search != "" {
		q.Set("search", sp.Search)
	}
	if sp.SortBy != "count" {
		q.Set("sort_by", sp.SortBy)
	}
	if sp.Sort != "desc" {
		q.Set("sort", sp.Sort)
	}
	return q
}

func (p *Pages) statRequest(r *http.Request, v *visit) (dateRange, statParams, error) {
	q := r.URL.Query()
	today, err := p.e.Unscoped().Today(r.Context(), v.web.ID)
	if err != nil {
		return dateRange{}, statParams{}, err
	}
	dr, err := parseRange(q, today)
	if err != nil {
		return dateRange{}, statParams{}, err
	}
	sp, err := parseStatParams(q)
	return dr, sp, err
}

// sortLink is a column heading's link.
type sortLink struct {
	Href  string
	Arrow string // "▼", "▲" or ""
	Sort  string // aria-sort value
}

// statData is the data of stat.html.
type statData struct {
	Domain   string
	Base     string
	Range    rangeBar
	Table    topTable
	Params   statParams
	Page     int
	LastPage int
	First    int // 1-based number of the first row shown
	Last     int
	Prev     string
	Next     string
	CSV      string
	Overview string
	ByValue  sortLink
	ByCount  sortLink
	// SearchKeep are the parameters the search form keeps; Clear is the
	// address without the search ("" when there is none).
	SearchKeep map[string]string
	Clear      string
	// Capped is publicRows when the pages stop there for a visitor who is
	// not the owner, else 0.
	Capped int
}

// statPage serves one statistic in full: search, sort and 100 rows a page.
func (p *Pages) statPage(w http.ResponseWriter, r *http.Request, v *visit, t table) error {
	dr, sp, err := p.statRequest(r, v)
	if err != nil {
		return err
	}
	ctx := r.Context()
	maxPage := 0 // none
	if !v.owner {
		maxPage = publicRows / perPage
		sp.Page = min(sp.Page, maxPage)
	}
	pg, err := p.tablePage(ctx, v, t, dr, sp, sp.Page, perPage)
	if err != nil {
		return err
	}
	capped := 0
	if maxPage > 0 && pg.LastPage > maxPage {
		pg.LastPage, capped = maxPage, publicRows
	}
	tt := topTable{table: t, Total: pg.Total, Rows: pg.Rows}
	base := v.base() + "/" + t.Name
	link := func(q url.Values) string {
		if len(q) == 0 {
			return base
		}
		return base + "?" + q.Encode()
	}
	q := sp.values(dr)
	d := &statData{
		Domain: v.web.Domain, Base: v.base(), Table: tt, Params: sp, Page: pg.Page, LastPage: pg.LastPage,
		First: (pg.Page-1)*perPage + 1, Last: (pg.Page-1)*perPage + len(pg.Rows),
		Overview: v.base(), Capped: capped,
	}
	if len(pg.Rows) == 0 {
		d.First = 0
	}
	if rq := dr.Query().Encode(); rq != "" {
		d.Overview += "?" + rq
	}
	keep := url.Values{}
	for k, vs := range q {
		if k != "from" && k != "to" && k != "range" {
			keep[k] = vs
		}
	}
	d.Range = newRangeBar(base, dr, keep)
	d.SearchKeep = map[string]string{}
	for k := range q {
		if k != "search" {
			d.SearchKeep[k] = q.Get(k)
		}
	}
	if sp.Search != "" {
		cq := cloneValues(q)
		cq.Del("search")
		d.Clear = link(cq)
	}
	d.CSV = v.base() + "/" + t.Name + ".csv"
	if e := q.Encode(); e != "" {
		d.CSV += "?" + e
	}
	if pg.Page > 1 {
		pq := cloneValues(q)
		if pg.Page > 2 {
			pq.Set("page", strconv.Itoa(min(pg.Page-1, pg.LastPage)))
		}
		d.Prev = link(pq)
	}
	if pg.Page < pg.LastPage {
		nq := cloneValues(q)
		nq.Set("page", strconv.Itoa(pg.Page+1))
		d.Next = link(nq)
	}
	sortBy := func(col string) sortLink {
		sq := cloneValues(q)
		sl := sortLink{Sort: "none"}
		sq.Del("sort_by")
		if col == "value" {
			sq.Set("sort_by", "value")
		}
		// A click on the current column flips its order; another column
		// starts descending by count, ascending by value.
		switch {
		case sp.SortBy == col && sp.Sort == "desc":
			sq.Set("sort", "asc")
			sl.Arrow, sl.Sort = "▼", "descending"
		case sp.SortBy == col:
			sq.Del("sort")
			sl.Arrow, sl.Sort = "▲", "ascending"
		case col == "value":
			sq.Set("sort", "asc")
		default:
			sq.Del("sort")
		}
		sl.Href = link(sq)
		return sl
	}
	d.ByValue, d.ByCount = sortBy("value"), sortBy("count")
	p.renderView(w, r, http.StatusOK, "stat.html", &view{Title: t.Title + " · " + v.web.Domain, Account: v.account, Body: d})
	return nil
}

func cloneValues(q url.Values) url.Values {
	c := make(url.Values, len(q))
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}

// csvPage is how many rows one query of the export reads.
const csvPage = engine.MaxQueryLimit

// The cost of the pages for visitors who are not the website's owner
// (SPEC §13): anyone may ask for a public website's statistics, so what
// they read is bounded, while the owner reads everything.
const (
	// publicRows bounds the rows of one statistic such a visitor reads:
	// the first publicRows/perPage pages of its page, the first publicRows
	// rows of its CSV (the answer then says X-Webstats-Row-Cap: 1000).
	publicRows = 1_000
)

// exportCSV serves a statistic as CSV: every row (publicRows for a visitor
// who is not the owner), with the page's range, search and sort.
func (p *Pages) exportCSV(w http.ResponseWriter, r *http.Request, v *visit, t table) error {
	dr, sp, err := p.statRequest(r, v)
	if err != nil {
		return err
	}
	per := csvPage
	if !v.owner {
		per = publicRows
	}
	pg, err := p.tablePage(r.Context(), v, t, dr, sp, 1, per)
	if err != nil {
		return err
	}
	h := w.Header()
	if !v.owner && pg.LastPage > 1 {
		h.Set("X-Webstats-Row-Cap", strconv.Itoa(publicRows))
		pg.LastPage = 1 // stop after the first page
	}
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+csvFilename(v.web.Domain, t.Name, dr)+`"`)
	h.Del("Content-Security-Policy")
	cw := csv.NewWriter(w)
	cw.Write(pg.Header)
	for {
		for _, rec := range pg.Records {
			for i := range rec {
				rec[i] = csvCell(rec[i])
			}
			cw.Write(rec)
		}
		if pg.Page >= pg.LastPage {
			break
		}
		if pg, err = p.tablePage(r.Context(), v, t, dr, sp, pg.Page+1, per); err != nil {
			// The header is sent: cut the file short rather than lie.
			p.log.Error("pages: csv export", "err", err)
			break
		}
	}
	cw.Flush()
	return nil
}

// csvFilename is the export's file name: domain-name-from-to.csv, with only
// safe characters.
func csvFilename(domain, name string, dr dateRange) string {
	s := domain + "-" + name + "-" + dr.From.String() + "-" + dr.To.String() + ".csv"
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, s)
}

// csvCell protects a value from formula injection in spreadsheets (OWASP
// "CSV Injection"): a cell that starts with a tab or a carriage return, or
// whose first character after any leading white space (Unicode's, U+00A0
// and U+3000 included) is = + - @ or one of their full-width (＝ ＋ － ＠)
// or small (﹦ ﹢ ﹣ ﹫) forms, which spreadsheets also take for formulas, gets
// a leading apostrophe, which spreadsheets show as text. encoding/csv quotes
// the cell where needed.
func csvCell(s string) string {
	if s == "" {
		return s
	}
	if s[0] == '\t' || s[0] == '\r' {
		return "'" + s
	}
	t := strings.TrimLeftFunc(s, unicode.IsSpace)
	if r, _ := utf8.DecodeRuneInString(t); strings.ContainsRune(formulaStarts, r) {
		return "'" + s
	}
	return s
}

// formulaStarts are the characters that make a spreadsheet cell a formula.
const formulaStarts = "=+-@＝＋－＠﹦﹢﹣﹫"

// realtimeData is the data of realtime.html and, as JSON, of
// ?format=json.
type realtimeData struct {
	Domain    string   `json:"-"`
	Base      string   `json:"-"`
	Visitors  int      `json:"visitors"`
	Pageviews []uint64 `json:"pageviews"` // the last 30 minutes, oldest first
	Sum       uint64   `json:"sum"`
	Max       uint64   `json:"max"` // the chart's scale
	Bars      []rect   `json:"-"`
	Labels    []tick   `json:"-"`
	JSON      string   `json:"-"`
}

// realtime serves the realtime page, or its numbers as JSON.
func (p *Pages) realtime(w http.ResponseWriter, r *http.Request, v *visit) error {
	rt, err := p.e.Unscoped().Realtime(r.Context(), v.web.ID)
	if err != nil {
		return err
	}
	d := realtimeData{Domain: v.web.Domain, Base: v.base(), Visitors: rt.Visitors, Pageviews: rt.Pageviews[:]}
	for _, n := range rt.Pageviews {
		d.Sum += n
		d.Max = max64(d.Max, n)
	}
	d.Max, _ = niceScale(d.Max)
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		return json.NewEncoder(w).Encode(d)
	}
	// Bars: 30 slots in a 600×120 box, minute 0 the oldest.
	for i, n := range rt.Pageviews {
		h := float64(n) / float64(d.Max) * 110
		ago := 29 - i
		title := strconv.Itoa(ago) + " minutes ago: "
		if ago == 0 {
			title = "This minute: "
		} else if ago == 1 {
			title = "1 minute ago: "
		}
		d.Bars = append(d.Bars, rect{X: float64(i*20 + 2), Y: r1(115 - h), W: 16, H: r1(h), Title: title + formatInt(n) + plural(n, " pageview", " pageviews")})
	}
	d.Labels = []tick{{X: 2, Y: 134, Label: "−30 min"}, {X: 300, Y: 134, Label: "−15 min"}, {X: 598, Y: 134, Label: "now"}}
	d.JSON = v.base() + "/realtime?format=json"
	p.renderView(w, r, http.StatusOK, "realtime.html", &view{Title: "Realtime · " + v.web.Domain, Account: v.account, Script: true, Body: d})
	return nil
}
