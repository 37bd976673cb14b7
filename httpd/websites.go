package httpd

import (
	"net/http"
	"strconv"

	"github.com/webstats/webstats/engine"
)

// websiteID parses the {id} of a route: a positive integer that fits a
// website id, else the request is a 404.
func websiteID(c *call) (uint32, error) {
	s := c.params.ByName("id")
	if s == "" || len(s) > 20 {
		return 0, errNotFound
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errNotFound
		}
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 {
		return 0, errNotFound
	}
	return uint32(n), nil
}

// listParams are the options of GET /websites, each falling back to its
// default when absent or outside its list.
type listParams struct {
	search  string
	sortBy  string // "id" or "domain"
	desc    bool
	perPage int
	page    int
}

func parseListParams(q *queryParams) listParams {
	p := listParams{search: q.get("search"), sortBy: "id", desc: true, perPage: perPageOf(q), page: pageOf(q)}
	if q.get("sort_by") == "domain" {
		p.sortBy = "domain"
	}
	if q.get("sort") == "asc" {
		p.desc = false
	}
	return p
}

// perPageOf returns per_page when it is 10, 25, 50 or 100, else 10.
func perPageOf(q *queryParams) int {
	switch n, _ := strconv.Atoi(q.get("per_page")); n {
	case 10, 25, 50, 100:
		return n
	}
	return 10
}

// pageOf returns page when it is an integer of at least 1, else 1 (as
// Laravel's paginator resolves it).
func pageOf(q *queryParams) int {
	n, err := strconv.Atoi(trimSpace(q.get("page")))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\n' || s[0] == '\r' || s[0] == '\v' || s[0] == '\f') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t' || s[len(s)-1] == '\n' || s[len(s)-1] == '\r' || s[len(s)-1] == '\v' || s[len(s)-1] == '\f') {
		s = s[:len(s)-1]
	}
	return s
}

// listWebsites serves GET /websites: the caller's websites, paginated.
func (s *Server) listWebsites(w http.ResponseWriter, r *http.Request, c *call) error {
	q := parseQuery(r.URL.RawQuery)
	p := parseListParams(q)
	res := s.e.Owner(c.account.ID).Websites(r.Context(), engine.WebsiteQuery{
		Search: p.search, SortBy: p.sortBy, Desc: p.desc,
		Page: p.page, PerPage: p.perPage,
	})
	data := make([]websiteJSON, len(res.Websites))
	for i := range res.Websites {
		data[i] = websiteOf(&res.Websites[i])
	}
	pg := s.newPager(r, q, p.page, p.perPage, res.LastPage, res.Total, len(data))
	writeJSON(w, http.StatusOK, pg.listBody(data))
	return nil
}

// showWebsite serves GET /websites/{id}.
func (s *Server) showWebsite(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := websiteID(c)
	if err != nil {
		return err
	}
	web, err := s.e.Owner(c.account.ID).Website(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, dataBody{Data: websiteOf(&web), Status: http.StatusOK})
	return nil
}

// createWebsite serves POST /websites: 201, the body's status still 200.
func (s *Server) createWebsite(w http.ResponseWriter, r *http.Request, c *call) error {
	in, err := decodeWebsiteInput(r)
	if err != nil {
		return err
	}
	web, err := s.e.Owner(c.account.ID).CreateWebsite(r.Context(), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, dataBody{Data: websiteOf(&web), Status: http.StatusOK})
	return nil
}

// updateWebsite serves PUT and PATCH /websites/{id}: only the fields sent
// change; domain is ignored.
func (s *Server) updateWebsite(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := websiteID(c)
	if err != nil {
		return err
	}
	// 404 comes before the body's 400/413/422.
	if _, err := s.e.Owner(c.account.ID).Website(r.Context(), id); err != nil {
		return err
	}
	in, err := decodeWebsiteInput(r)
	if err != nil {
		return err
	}
	in.Domain = nil
	web, err := s.e.Owner(c.account.ID).UpdateWebsite(r.Context(), id, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, dataBody{Data: websiteOf(&web), Status: http.StatusOK})
	return nil
}

// deleteBody is the answer of a delete.
type deleteBody struct {
	ID      uint32 `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
	Status  int    `json:"status"`
}

// deleteWebsite serves DELETE /websites/{id}.
func (s *Server) deleteWebsite(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := websiteID(c)
	if err != nil {
		return err
	}
	if err := s.e.Owner(c.account.ID).DeleteWebsite(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deleteBody{ID: id, Object: "website", Deleted: true, Status: http.StatusOK})
	return nil
}

// accountJSON is the account as GET /account shows it.
type accountJSON struct {
	ID        uint32   `json:"id"`
	Name      string   `json:"name"`
	Email     string   `json:"email"`
	CreatedAt jsonTime `json:"created_at"`
}

// account serves GET /account.
func (s *Server) account(w http.ResponseWriter, r *http.Request, c *call) error {
	a := c.account
	writeJSON(w, http.StatusOK, dataBody{
		Data:   accountJSON{ID: a.ID, Name: a.Name, Email: a.Email, CreatedAt: jsonTime(a.CreatedAt)},
		Status: http.StatusOK,
	})
	return nil
}
