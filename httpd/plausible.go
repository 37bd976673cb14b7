package httpd

// The Plausible-compatible API (SPEC §10.3, plausible-api.md): Stats API v2
// (POST /api/v2/query), Stats API v1 (plausible_v1.go) and a subset of the
// Sites API (plausible_sites.go). The same API keys and rate limits as the
// phpAnalytics API; errors are Plausible's {"error": msg}.

import (
	_ "embed"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// plausibleRoutes registers the Plausible-compatible routes. The v1 stats
// routes share /stats/ with the phpAnalytics statistics: httprouter cannot
// hold /stats/aggregate beside /stats/:id, so one handler dispatches by name
// (phpAnalytics ids are numbers). The Sites API's /sites/goals and
// /sites/shared-links likewise sit beside /sites/:domain.
func (s *Server) plausibleRoutes() {
	s.handle(http.MethodPost, "/api/v2/query", engine.MaxQueryBytes, s.plausible(s.queryV2))
	s.handle(http.MethodGet, "/api/docs/query/schema.json", maxBody, serveQuerySchema)
	s.handle(http.MethodHead, "/api/docs/query/schema.json", maxBody, serveQuerySchema)

	for _, prefix := range apiPrefixes {
		s.handle(http.MethodGet, prefix+"/stats/:id", maxBody, s.statsByName)
		s.handle(http.MethodHead, prefix+"/stats/:id", maxBody, s.statsByName)
		// /stats/realtime/visitors. Every method is registered so that any
		// other /stats/{id}/visitors stays the 404 it was before.
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			s.handle(m, prefix+"/stats/:id/visitors", maxBody, s.statsVisitors)
		}
	}

	const sites = "/api/v1/sites"
	s.plausibleGet(sites, s.listSites)
	s.handle(http.MethodPost, sites, maxBody, s.plausible(s.createSite))
	s.plausibleGet(sites+"/:domain", s.sitesGet)
	s.handle(http.MethodPut, sites+"/:domain", maxBody, s.plausible(s.sitesPut))
	s.handle(http.MethodDelete, sites+"/:domain", maxBody, s.plausible(s.deleteSite))
	s.handle(http.MethodDelete, sites+"/:domain/:id", maxBody, s.plausible(s.sitesDeleteSub))
}

// plausibleGet registers GET and HEAD of a Plausible route.
func (s *Server) plausibleGet(path string, h apiHandler) {
	s.handle(http.MethodGet, path, maxBody, s.plausible(h))
	s.handle(http.MethodHead, path, maxBody, s.plausible(h))
}

// plausible adapts an API handler to the Plausible-compatible API: the key
// and rate limit are checked first (plausibleAuth), errors are answered
// {"error": msg}, and any origin may read the answer.
func (s *Server) plausible(h apiHandler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		a, ok := s.plausibleAuth(w, r)
		if !ok {
			return
		}
		if err := h(w, r, &call{account: a, params: p}); err != nil {
			writePlausibleError(w, r, err)
		}
	}
}

// plausibleAuth checks the API key and the rate limit as authenticate does,
// answering failures with Plausible's messages (plausible-api.md §5).
func (s *Server) plausibleAuth(w http.ResponseWriter, r *http.Request) (identity.Account, bool) {
	a, res, wait := s.checkKey(w, r)
	switch res {
	case keyMissing:
		writePlausibleError(w, r, errPlausibleMissingKey)
		return identity.Account{}, false
	case keyWrong:
		writePlausibleError(w, r, errPlausibleInvalid)
		return identity.Account{}, false
	case keyLimited:
		secs := max(1, int(math.Ceil(wait.Seconds())))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		w.Header().Set("X-RateLimit-Remaining", "0")
		writePlausibleError(w, r, &plausibleError{http.StatusTooManyRequests, s.tooManyMessage()})
		return identity.Account{}, false
	}
	return a, true
}

// tooManyMessage is Plausible's 429 message, with webstats' per-minute limit.
func (s *Server) tooManyMessage() string {
	if s.opts.RateLimit <= 0 {
		return "Too many API requests. Please try again later."
	}
	return "Too many API requests. Your API key is limited to " + strconv.Itoa(s.opts.RateLimit) +
		" requests per minute. Please wait before sending more requests."
}

// statsSite returns the website a stats request names by site_id, seen by the
// caller's account: a missing site_id is a 400, an unknown or another
// account's domain the same 401 as a wrong key.
func (s *Server) statsSite(r *http.Request, c *call, siteID string) (engine.Website, error) {
	if siteID == "" {
		return engine.Website{}, errPlausibleMissingSite
	}
	web, err := s.e.Owner(c.account.ID).WebsiteByDomain(r.Context(), siteID)
	if errors.Is(err, engine.ErrNotFound) {
		return engine.Website{}, errPlausibleInvalid
	}
	return web, err
}

// queryV2 serves POST /api/v2/query: the body is engine.ParseQuery's, the
// answer Owner.Query's result as it is. site_id is looked up before the
// query is parsed, as Plausible's authorisation does.
func (s *Server) queryV2(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	var head struct {
		SiteID json.RawMessage `json:"site_id"`
	}
	if err := json.Unmarshal(body, &head); err == nil {
		var id string
		switch {
		case len(head.SiteID) == 0 || string(head.SiteID) == "null":
			return errPlausibleMissingSite
		case json.Unmarshal(head.SiteID, &id) != nil:
			return errPlausibleInvalid
		}
		web, err := s.statsSite(r, c, id)
		if err != nil {
			return err
		}
		q, err := engine.ParseQuery(body)
		if err != nil {
			return err
		}
		res, err := s.e.Owner(c.account.ID).Query(r.Context(), web.ID, q)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, res)
		return nil
	}
	// Not a JSON object: ParseQuery says what is wrong with it.
	_, err = engine.ParseQuery(body)
	if err == nil {
		err = errPlausibleMissingSite
	}
	return err
}

// querySchema is the JSON schema of the query /api/v2/query accepts, written
// for webstats (its metrics, dimensions, operators and bounds); a test keeps
// its lists equal to the engine's.
//
//go:embed assets/query-schema.json
var querySchema []byte

// serveQuerySchema serves GET /api/docs/query/schema.json, without a key.
func serveQuerySchema(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	h := w.Header()
	h.Set("Content-Type", "application/schema+json")
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(querySchema)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(querySchema)
	}
}
