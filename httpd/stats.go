package httpd

import (
	"errors"
	"net/http"

	"github.com/webstats/webstats/engine"
)

// stats serves GET /stats/{id}: one statistic over [from, to], as the flat
// paginator. name, from and to are required; the engine validates name and
// the range, this only their presence and the date format.
func (s *Server) stats(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := websiteID(c)
	if err != nil {
		return err
	}
	q := parseQuery(r.URL.RawQuery)
	sq := engine.StatQuery{
		Website: id, Name: q.get("name"), Search: q.get("search"),
		SortBy: "count", Page: pageOf(q), PerPage: perPageOf(q),
	}
	if q.get("sort_by") == "value" {
		sq.SortBy = "value"
	}
	if q.get("sort") == "asc" {
		sq.Asc = true
	}
	// A website that is not the caller's is a 404 before any 422.
	if _, err := s.e.Owner(c.account.ID).Website(r.Context(), id); err != nil {
		return err
	}
	var fe fieldErrors
	if sq.Name == "" {
		fe.add("name", "The name field is required.")
	}
	from, errFrom := engine.ParseDate(q.get("from"))
	dateError(&fe, "from", q.get("from"), errFrom)
	to, errTo := engine.ParseDate(q.get("to"))
	dateError(&fe, "to", q.get("to"), errTo)
	sq.From, sq.To = from, to
	if errFrom != nil || errTo != nil {
		sq.To = sq.From // let the engine check the name alone
	}
	if len(fe) > 0 {
		if sq.Name != "" {
			var ve *engine.ValidationError
			if err := sq.Validate(); errors.As(err, &ve) {
				fe = append(ve.Fields, fe...)
			}
		}
		return fe
	}
	// Clients ask for "everything" (Pipedream: from 1970-01-01): keep the
	// last MaxRangeDays days rather than refuse the range.
	if sq.From <= sq.To && int64(sq.To)-int64(sq.From) >= engine.MaxRangeDays {
		sq.From = sq.To - engine.MaxRangeDays + 1
	}
	page, err := s.e.Owner(c.account.ID).Stat(r.Context(), sq)
	if err != nil {
		return err
	}
	pg := s.newPager(r, q, sq.Page, page.PerPage, page.LastPage, page.Total, len(page.Rows))
	writeJSON(w, http.StatusOK, pg.statsBody(page.Rows))
	return nil
}

// dateError adds the message of the Y-m-d parameter name to fe when it is
// missing or err (from engine.ParseDate) is not nil.
func dateError(fe *fieldErrors, name, v string, err error) {
	switch {
	case v == "":
		fe.add(name, "The "+name+" field is required.")
	case err != nil:
		fe.add(name, "The "+name+" does not match the format Y-m-d.")
	}
}
