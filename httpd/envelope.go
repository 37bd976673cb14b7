package httpd

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

// laravelTime is the layout of times in API answers
// ("2026-11-21T10:00:00.000000Z", always UTC).
const laravelTime = "2006-01-02T15:04:05.000000Z"

// jsonTime is a time written in laravelTime.
type jsonTime time.Time

// MarshalJSON implements json.Marshaler.
func (t jsonTime) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(laravelTime)+2)
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, laravelTime)
	return append(b, '"'), nil
}

// dataBody is the envelope of one record: {"data": ..., "status": 200}.
type dataBody struct {
	Data   any `json:"data"`
	Status int `json:"status"`
}

// websiteJSON is a website record as the API shows it (SPEC §3.2).
type websiteJSON struct {
	ID            uint32   `json:"id"`
	Domain        string   `json:"domain"`
	Privacy       int      `json:"privacy"`
	Password      bool     `json:"password"`
	Email         int      `json:"email"`
	ExcludeBots   int      `json:"exclude_bots"`
	ExcludeParams *string  `json:"exclude_params"`
	ExcludeIPs    *string  `json:"exclude_ips"`
	Timezone      string   `json:"timezone"`
	CreatedAt     jsonTime `json:"created_at"`
	UpdatedAt     jsonTime `json:"updated_at"`
}

func websiteOf(w *engine.Website) websiteJSON {
	return websiteJSON{
		ID:            w.ID,
		Domain:        w.Domain,
		Privacy:       w.Privacy,
		Password:      w.HasPassword(),
		Email:         w.Email,
		ExcludeBots:   w.ExcludeBots,
		ExcludeParams: w.ExcludeParams,
		ExcludeIPs:    w.ExcludeIPs,
		Timezone:      w.Timezone,
		CreatedAt:     jsonTime(w.CreatedAt),
		UpdatedAt:     jsonTime(w.UpdatedAt),
	}
}

// pageLink is one entry of Laravel's paginator "links" array.
type pageLink struct {
	URL    *string `json:"url"`
	Label  string  `json:"label"`
	Active bool    `json:"active"`
}

// pager builds the URLs and counters of a Laravel LengthAwarePaginator.
type pager struct {
	path     string // absolute URL of the request, without query
	query    *queryParams
	page     int // the page asked for (may be past the last)
	perPage  int
	lastPage int
	total    int
	count    int // rows on this page
}

func (s *Server) newPager(r *http.Request, q *queryParams, page, perPage, lastPage, total, count int) *pager {
	return &pager{path: requestPath(r, s.publicURL, s.opts.TrustProxy), query: q, page: page, perPage: perPage,
		lastPage: max(lastPage, 1), total: total, count: count}
}

// requestPath is the absolute URL of r without its query, as Laravel's
// paginator path: publicURL (without a trailing '/') and the request's path
// when publicURL is not "". Else the scheme is http, or https over TLS or
// (behind a trusted proxy) with X-Forwarded-Proto: https, and the host is
// the Host header when it is a valid host[:port] (validHost), else the
// address the connection came to, else "localhost": the Host header is
// the client's to choose, and must not put markup, credentials or another
// path into the links.
func requestPath(r *http.Request, publicURL string, trustProxy bool) string {
	if publicURL != "" {
		return publicURL + r.URL.EscapedPath()
	}
	scheme := "http"
	if r.TLS != nil || (trustProxy && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")) {
		scheme = "https"
	}
	host := r.Host
	if !validHost(host) {
		host = "localhost"
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			host = a.String()
		}
	}
	return scheme + "://" + host + r.URL.EscapedPath()
}

// validHost reports whether s is host[:port]: a DNS name (labels of
// letters, digits, '-' and '_', at most 253 characters), an IPv4 address or
// an IPv6 address in brackets, then optionally ':' and a port from 1 to
// 65535.
func validHost(s string) bool {
	host, port := s, ""
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.HasSuffix(s, "]") {
		host, port = s[:i], s[i+1:]
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' || port[0] == '+' {
			return false
		}
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		return err == nil && a.Is6() && a.Zone() == ""
	}
	if host == "" || len(host) > 253 {
		return false
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// url returns the URL of page: every query parameter of the request but
// page, in order, then page (SPEC §3.1).
func (p *pager) url(page int) string {
	var b strings.Builder
	b.WriteString(p.path)
	b.WriteByte('?')
	for _, k := range p.query.keys {
		if k == "page" {
			continue
		}
		b.WriteString(rawURLEncode(k))
		b.WriteByte('=')
		b.WriteString(rawURLEncode(p.query.vals[k]))
		b.WriteByte('&')
	}
	b.WriteString("page=")
	b.WriteString(strconv.Itoa(page))
	return b.String()
}

func (p *pager) urlPtr(page int) *string {
	u := p.url(page)
	return &u
}

// prev and next are the neighbours' URLs, or nil.
func (p *pager) prev() *string {
	if p.page > 1 {
		return p.urlPtr(p.page - 1)
	}
	return nil
}

func (p *pager) next() *string {
	if p.page < p.lastPage {
		return p.urlPtr(p.page + 1)
	}
	return nil
}

// from and to number the first and last row of the page from 1; nil when
// the page is empty.
func (p *pager) from() *int {
	if p.count == 0 {
		return nil
	}
	n := (p.page-1)*p.perPage + 1
	return &n
}

func (p *pager) to() *int {
	if p.count == 0 {
		return nil
	}
	n := (p.page-1)*p.perPage + p.count
	return &n
}

// links is Laravel's linkCollection: "&laquo; Previous", the page window of
// UrlWindow (three pages on each side, "..." between the groups), "Next
// &raquo;".
func (p *pager) links() []pageLink {
	out := []pageLink{{URL: p.prev(), Label: "&laquo; Previous"}}
	pages := func(from, to int) {
		for i := max(from, 1); i <= min(to, p.lastPage); i++ {
			out = append(out, pageLink{URL: p.urlPtr(i), Label: strconv.Itoa(i), Active: i == p.page})
		}
	}
	dots := func() { out = append(out, pageLink{Label: "..."}) }
	const onEachSide = 3
	const window = onEachSide + 4
	last := p.lastPage
	switch {
	case last < onEachSide*2+8:
		pages(1, last)
	case p.page <= window:
		pages(1, window+onEachSide)
		dots()
		pages(last-1, last)
	case p.page > last-window:
		pages(1, 2)
		dots()
		pages(last-(window+onEachSide-1), last)
	default:
		pages(1, 2)
		dots()
		pages(p.page-onEachSide, p.page+onEachSide)
		dots()
		pages(last-1, last)
	}
	return append(out, pageLink{URL: p.next(), Label: "Next &raquo;"})
}

// listBody is Laravel's paginated resource collection (SPEC §3.1).
type listBody struct {
	Data   []websiteJSON `json:"data"`
	Links  listLinks     `json:"links"`
	Meta   listMeta      `json:"meta"`
	Status int           `json:"status"`
}

type listLinks struct {
	First string  `json:"first"`
	Last  string  `json:"last"`
	Prev  *string `json:"prev"`
	Next  *string `json:"next"`
}

type listMeta struct {
	CurrentPage int        `json:"current_page"`
	From        *int       `json:"from"`
	LastPage    int        `json:"last_page"`
	Links       []pageLink `json:"links"`
	Path        string     `json:"path"`
	PerPage     int        `json:"per_page"`
	To          *int       `json:"to"`
	Total       int        `json:"total"`
}

func (p *pager) listBody(data []websiteJSON) listBody {
	return listBody{
		Data:  data,
		Links: listLinks{First: p.url(1), Last: p.url(p.lastPage), Prev: p.prev(), Next: p.next()},
		Meta: listMeta{CurrentPage: p.page, From: p.from(), LastPage: p.lastPage, Links: p.links(),
			Path: p.path, PerPage: p.perPage, To: p.to(), Total: p.total},
		Status: http.StatusOK,
	}
}

// statsBody is Laravel's flat paginator (SPEC §3.1).
type statsBody struct {
	CurrentPage  int          `json:"current_page"`
	Data         []engine.Row `json:"data"`
	FirstPageURL string       `json:"first_page_url"`
	From         *int         `json:"from"`
	LastPage     int          `json:"last_page"`
	LastPageURL  string       `json:"last_page_url"`
	Links        []pageLink   `json:"links"`
	NextPageURL  *string      `json:"next_page_url"`
	Path         string       `json:"path"`
	PerPage      int          `json:"per_page"`
	PrevPageURL  *string      `json:"prev_page_url"`
	To           *int         `json:"to"`
	Total        int          `json:"total"`
	Status       int          `json:"status"`
}

func (p *pager) statsBody(rows []engine.Row) statsBody {
	if rows == nil {
		rows = []engine.Row{}
	}
	return statsBody{
		CurrentPage: p.page, Data: rows, FirstPageURL: p.url(1), From: p.from(),
		LastPage: p.lastPage, LastPageURL: p.url(p.lastPage), Links: p.links(),
		NextPageURL: p.next(), Path: p.path, PerPage: p.perPage, PrevPageURL: p.prev(),
		To: p.to(), Total: p.total, Status: http.StatusOK,
	}
}

// queryParams are the query parameters of a request in the order they were
// first sent; a repeated key keeps its first place and its last value, as
// PHP reads them.
type queryParams struct {
	keys []string
	vals map[string]string
}

// parseQuery parses a raw query leniently, as PHP does: '+' is a space and a
// malformed escape is kept as it is; nothing is an error.
func parseQuery(raw string) *queryParams {
	q := &queryParams{vals: make(map[string]string)}
	for raw != "" {
		var seg string
		seg, raw, _ = strings.Cut(raw, "&")
		if seg == "" {
			continue
		}
		k, v, _ := strings.Cut(seg, "=")
		k, v = phpURLDecode(k), phpURLDecode(v)
		if k == "" {
			continue
		}
		if _, ok := q.vals[k]; !ok {
			q.keys = append(q.keys, k)
		}
		q.vals[k] = v
	}
	return q
}

// get returns the value of k, "" when absent.
func (q *queryParams) get(k string) string { return q.vals[k] }

// has reports whether k was sent.
func (q *queryParams) has(k string) bool {
	_, ok := q.vals[k]
	return ok
}

// phpURLDecode is PHP's urldecode: '+' is a space, %XX a byte, anything else
// itself.
func phpURLDecode(s string) string {
	if !strings.ContainsAny(s, "+%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b = append(b, ' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// rawURLEncode is PHP's rawurlencode (RFC 3986), as Laravel's Arr::query
// writes link parameters: everything but A-Z a-z 0-9 - _ . ~ is %XX.
func rawURLEncode(s string) string {
	const hexDigits = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return string(b)
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}
