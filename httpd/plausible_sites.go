package httpd

// The subset of Plausible's Sites API that webstats serves (SPEC §10.3,
// plausible-api.md §7): sites by domain, goals, shared links. A key sees
// only its own account's websites; another account's domain is "Site could
// not be found", exactly like an unknown one.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd/pages"
)

// sitesParams are the parameters of a Sites API request: the query string,
// then the body's (a JSON object or a form) over it. JSON values that are
// not strings are kept as JSON text.
func sitesParams(r *http.Request) (map[string]string, error) {
	q := parseQuery(r.URL.RawQuery)
	out := make(map[string]string, len(q.keys))
	for _, k := range q.keys {
		out[k] = q.get(k)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return out, nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/x-www-form-urlencoded" || (mt != "application/json" && body[0] != '{') {
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, badRequest("The request body could not be parsed.")
		}
		for k := range vals {
			out[k] = vals.Get(k)
		}
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, badRequest("The request body must be a JSON object.")
	}
	for k, raw := range obj {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out[k] = s
		} else if string(raw) != "null" {
			out[k] = string(raw)
		}
	}
	return out, nil
}

// siteJSON is a site as the Sites API shows it.
type siteJSON struct {
	Domain           string      `json:"domain"`
	Timezone         string      `json:"timezone"`
	CustomProperties []string    `json:"custom_properties"`
	Tracker          trackerJSON `json:"tracker_script_configuration"`
}

// trackerJSON is the tracker configuration Plausible reports. webstats'
// script has no options: it sends pageviews, and custom events through its
// API, so every optional measurement is false.
type trackerJSON struct {
	ID               string `json:"id"`
	InstallationType string `json:"installation_type"`
	Track404Pages    bool   `json:"track_404_pages"`
	HashBasedRouting bool   `json:"hash_based_routing"`
	OutboundLinks    bool   `json:"outbound_links"`
	FileDownloads    bool   `json:"file_downloads"`
	RevenueTracking  bool   `json:"revenue_tracking"`
	TaggedEvents     bool   `json:"tagged_events"`
	FormSubmissions  bool   `json:"form_submissions"`
	PageviewProps    bool   `json:"pageview_props"`
}

func siteOf(web *engine.Website) siteJSON {
	return siteJSON{Domain: web.Domain, Timezone: web.Timezone, CustomProperties: []string{},
		Tracker: trackerJSON{ID: strconv.FormatUint(uint64(web.ID), 10), InstallationType: "manual"}}
}

// site returns the caller's website of domain: 404 "Site could not be
// found" for an unknown or another account's domain.
func (s *Server) site(r *http.Request, c *call, domain string) (engine.Website, error) {
	web, err := s.e.Owner(c.account.ID).WebsiteByDomain(r.Context(), domain)
	if errors.Is(err, engine.ErrNotFound) || domain == "" {
		return engine.Website{}, errSiteNotFound
	}
	return web, err
}

// Sites list bounds (Plausible's).
const (
	defaultSitesLimit = 100
	maxSitesLimit     = 100
)

// listSites serves GET /api/v1/sites: the caller's websites, newest first,
// by cursor. The cursors are page numbers (opaque to clients).
func (s *Server) listSites(w http.ResponseWriter, r *http.Request, c *call) error {
	q := parseQuery(r.URL.RawQuery)
	limit := defaultSitesLimit
	if q.has("limit") {
		n, err := strconv.Atoi(q.get("limit"))
		if err != nil || n < 1 {
			return badRequest("Parameter `limit` must be a positive integer.")
		}
		limit = min(n, maxSitesLimit)
	}
	page := 1
	if n, err := strconv.Atoi(q.get("after")); err == nil && n > 1 {
		page = n
	} else if n, err := strconv.Atoi(q.get("before")); err == nil && n >= 1 {
		page = max(1, n)
	}
	res := s.e.Owner(c.account.ID).Websites(r.Context(), engine.WebsiteQuery{SortBy: "id", Desc: true, Page: page, PerPage: limit})
	sites := make([]struct {
		Domain   string `json:"domain"`
		Timezone string `json:"timezone"`
	}, len(res.Websites))
	for i, web := range res.Websites {
		sites[i].Domain, sites[i].Timezone = web.Domain, web.Timezone
	}
	var after, before *string
	if res.Page < res.LastPage {
		a := strconv.Itoa(res.Page + 1)
		after = &a
	}
	if res.Page > 1 {
		b := strconv.Itoa(res.Page - 1)
		before = &b
	}
	writeJSON(w, http.StatusOK, jsonObject{
		{"sites", sites},
		{"meta", jsonObject{{"after", after}, {"before", before}, {"limit", limit}}},
	})
	return nil
}

// createSite serves POST /api/v1/sites {domain, timezone}: the new site,
// private (privacy 1) as a website the phpAnalytics API creates.
func (s *Server) createSite(w http.ResponseWriter, r *http.Request, c *call) error {
	p, err := sitesParams(r)
	if err != nil {
		return err
	}
	domain, ok := p["domain"]
	if !ok || domain == "" {
		return badRequest("domain: can't be blank")
	}
	in := engine.WebsiteInput{Domain: &domain}
	tz := "Etc/UTC"
	if v, ok := p["timezone"]; ok && v != "" {
		tz = v
	}
	in.Timezone = &tz
	web, err := s.e.Owner(c.account.ID).CreateWebsite(r.Context(), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, siteOf(&web))
	return nil
}

// sitesGet serves GET /api/v1/sites/{domain} and GET /api/v1/sites/goals.
func (s *Server) sitesGet(w http.ResponseWriter, r *http.Request, c *call) error {
	domain := c.params.ByName("domain")
	if domain == "goals" {
		return s.listGoals(w, r, c)
	}
	web, err := s.site(r, c, domain)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, siteOf(&web))
	return nil
}

// sitesPut serves PUT /api/v1/sites/{domain}, /sites/goals and
// /sites/shared-links.
func (s *Server) sitesPut(w http.ResponseWriter, r *http.Request, c *call) error {
	switch domain := c.params.ByName("domain"); domain {
	case "goals":
		return s.putGoal(w, r, c)
	case "shared-links":
		return s.putSharedLink(w, r, c)
	default:
		return s.updateSite(w, r, c, domain)
	}
}

// updateSite changes a site's time zone. webstats cannot change a
// website's domain (SPEC §3.2): a different domain is a 400.
func (s *Server) updateSite(w http.ResponseWriter, r *http.Request, c *call, domain string) error {
	web, err := s.site(r, c, domain)
	if err != nil {
		return err
	}
	p, err := sitesParams(r)
	if err != nil {
		return err
	}
	if d, ok := p["domain"]; ok && d != "" && d != web.Domain {
		return badRequest("domain: cannot be changed on this server")
	}
	var in engine.WebsiteInput
	if tz, ok := p["timezone"]; ok {
		in.Timezone = &tz
	}
	web, err = s.e.Owner(c.account.ID).UpdateWebsite(r.Context(), web.ID, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, siteOf(&web))
	return nil
}

// deleteSite serves DELETE /api/v1/sites/{domain}: the website and all its
// statistics.
func (s *Server) deleteSite(w http.ResponseWriter, r *http.Request, c *call) error {
	web, err := s.site(r, c, c.params.ByName("domain"))
	if err != nil {
		return err
	}
	if err := s.e.Owner(c.account.ID).DeleteWebsite(r.Context(), web.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, jsonObject{{"deleted", true}})
	return nil
}

// goalJSON is a goal as the Sites API shows it.
type goalJSON struct {
	ID          uint64   `json:"id"`
	GoalType    string   `json:"goal_type"`
	DisplayName string   `json:"display_name"`
	EventName   *string  `json:"event_name"`
	PagePath    *string  `json:"page_path"`
	Currency    *string  `json:"currency,omitempty"`
	CustomProps struct{} `json:"custom_props"`
}

func goalOf(g engine.Goal) goalJSON {
	out := goalJSON{ID: g.ID, DisplayName: g.DisplayName}
	if g.EventName != "" {
		out.GoalType, out.EventName = "event", &g.EventName
	} else {
		out.GoalType, out.PagePath = "page", &g.PagePath
	}
	if g.Currency != "" {
		out.Currency = &g.Currency
	}
	return out
}

// goalSite returns the website of a goals request's site_id (in the query
// or the body).
func (s *Server) goalSite(r *http.Request, c *call, p map[string]string, verb string) (engine.Website, error) {
	id, ok := p["site_id"]
	if !ok || id == "" {
		return engine.Website{}, badRequest("Parameter `site_id` is required to " + verb)
	}
	return s.site(r, c, id)
}

// listGoals serves GET /api/v1/sites/goals?site_id: every goal (at most
// engine.MaxGoals), in one page.
func (s *Server) listGoals(w http.ResponseWriter, r *http.Request, c *call) error {
	p, err := sitesParams(r)
	if err != nil {
		return err
	}
	web, err := s.goalSite(r, c, p, "list goals")
	if err != nil {
		return err
	}
	goals, err := s.e.Owner(c.account.ID).Goals(r.Context(), web.ID)
	if err != nil {
		return err
	}
	out := make([]goalJSON, len(goals))
	for i, g := range goals {
		out[i] = goalOf(g)
	}
	writeJSON(w, http.StatusOK, jsonObject{
		{"goals", out},
		{"meta", jsonObject{{"after", nil}, {"before", nil}, {"limit", engine.MaxGoals}}},
	})
	return nil
}

// putGoal serves PUT /api/v1/sites/goals: find or create a goal.
func (s *Server) putGoal(w http.ResponseWriter, r *http.Request, c *call) error {
	p, err := sitesParams(r)
	if err != nil {
		return err
	}
	web, err := s.goalSite(r, c, p, "create a goal")
	if err != nil {
		return err
	}
	g := engine.Goal{DisplayName: p["display_name"], Currency: p["currency"]}
	switch p["goal_type"] {
	case "event":
		if g.EventName = p["event_name"]; g.EventName == "" {
			return badRequest("Parameter `event_name` is required to create a goal")
		}
	case "page":
		if g.PagePath = p["page_path"]; g.PagePath == "" {
			return badRequest("Parameter `page_path` is required to create a goal")
		}
	case "":
		return badRequest("Parameter `goal_type` is required to create a goal")
	default:
		return badRequest("Parameter `goal_type` must be `event` or `page`")
	}
	g, err = s.e.Owner(c.account.ID).AddGoal(r.Context(), web.ID, g)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, goalOf(g))
	return nil
}

// sitesDeleteSub serves DELETE /api/v1/sites/goals/{id} {site_id}.
func (s *Server) sitesDeleteSub(w http.ResponseWriter, r *http.Request, c *call) error {
	if c.params.ByName("domain") != "goals" {
		return errSiteNotFound
	}
	p, err := sitesParams(r)
	if err != nil {
		return err
	}
	web, err := s.goalSite(r, c, p, "delete a goal")
	if err != nil {
		return err
	}
	id, err := strconv.ParseUint(c.params.ByName("id"), 10, 64)
	if err != nil {
		return errGoalNotFound
	}
	if err := s.e.Owner(c.account.ID).DeleteGoal(r.Context(), web.ID, id); errors.Is(err, engine.ErrNotFound) {
		return errGoalNotFound
	} else if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, jsonObject{{"deleted", true}})
	return nil
}

// putSharedLink serves PUT /api/v1/sites/shared-links {site_id, name}: the
// address that opens the website's statistics read-only (see
// pages.ShareAuth). Idempotent: a website has one link, whatever its name.
func (s *Server) putSharedLink(w http.ResponseWriter, r *http.Request, c *call) error {
	p, err := sitesParams(r)
	if err != nil {
		return err
	}
	web, err := s.goalSite(r, c, p, "create a shared link")
	if err != nil {
		return err
	}
	name, ok := p["name"]
	if !ok || name == "" {
		return badRequest("Parameter `name` is required to create a shared link")
	}
	auth, err := pages.ShareAuth(r.Context(), s.e, web.ID)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(requestPath(r, s.publicURL, s.opts.TrustProxy), r.URL.EscapedPath())
	link := base + "/share/" + url.PathEscape(web.Domain) + "?auth=" + auth
	writeJSON(w, http.StatusOK, jsonObject{{"name", name}, {"url", link}})
	return nil
}
