package httpd

import (
	"net/http"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd/internal/importline"
)

// exportEvents serves GET /websites/{id}/events: every stored hit of the
// website, or of the local days from…to (Y-m-d, each optional), as NDJSON
// import lines (SPEC §14), streamed a day at a time. Imported into an
// empty website they give its numbers back (README "Moving in and out").
func (s *Server) exportEvents(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := websiteID(c)
	if err != nil {
		return err
	}
	o := s.e.Owner(c.account.ID)
	if _, err := o.Website(r.Context(), id); err != nil {
		return err
	}
	from, to := importline.MinDate, importline.MaxDate
	var fe fieldErrors
	for _, p := range []struct {
		name string
		dst  *engine.Date
	}{{"from", &from}, {"to", &to}} {
		if v := r.URL.Query().Get(p.name); v != "" {
			d, err := engine.ParseDate(v)
			if err != nil {
				fe.add(p.name, "The "+p.name+" does not match the format Y-m-d.")
				continue
			}
			*p.dst = d
		}
	}
	if len(fe) == 0 && from > to {
		fe.add("to", "The to must be a date after or equal to from.")
	}
	if len(fe) > 0 {
		return fe
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	out := &importline.StreamTo{W: w, Start: func() {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", `attachment; filename="events.ndjson"`)
		w.WriteHeader(http.StatusOK)
	}}
	flush := streamFlush(w)
	_, err = importline.Export(r.Context(), o, id, from, to, out, func() {
		if out.Started() {
			flush()
		}
	})
	switch {
	case err != nil && !out.Started():
		return err // nothing sent yet: an error answer (a cluster node that does not serve it: 503)
	case err != nil:
		// The status is sent: the cut stream is the error (a client
		// sees a short body without its last newline).
		s.log.Warn("export cut", "website", id, "err", err)
	default:
		out.Begin() // an empty website: 200 and no lines
	}
	return nil
}

// streamFlush returns the flush of a streamed answer: it sends what is
// buffered and gives the next part another minute past the server's
// WriteTimeout (a large export streams for longer than one).
func streamFlush(w http.ResponseWriter) func() {
	rc := http.NewResponseController(w)
	return func() {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_ = rc.Flush()
	}
}

// streamWriteTimeout is how long a streamed answer may take to send each
// part (a day of an export).
const streamWriteTimeout = time.Minute
