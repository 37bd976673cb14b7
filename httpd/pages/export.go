package pages

import (
	"net/http"
	"time"

	"github.com/webstats/webstats/httpd/internal/importline"
)

// exportDownload serves GET /websites/:id/export: every hit of the
// website as NDJSON import lines (SPEC §14), the same as the API's GET
// /api/v1/websites/{id}/events, for its signed-in owner.
func (p *Pages) exportDownload(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	out := &importline.StreamTo{W: w, Start: func() {
		h := w.Header()
		h.Set("Content-Type", "application/x-ndjson")
		h.Set("Content-Disposition", `attachment; filename="`+s.web.Domain+`-events.ndjson"`)
		w.WriteHeader(http.StatusOK)
	}}
	if r.Method == http.MethodHead {
		out.Begin()
		return nil
	}
	rc := http.NewResponseController(w)
	flush := func() {
		if out.Started() {
			// A large website streams for longer than the server's
			// WriteTimeout: each day gets another minute.
			_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
			_ = rc.Flush()
		}
	}
	_, err := importline.Export(r.Context(), s.own, s.web.ID, importline.MinDate, importline.MaxDate, out, flush)
	switch {
	case err != nil && !out.Started():
		return err // nothing sent yet: the error page
	case err != nil:
		// The answer has begun: a cut stream is all that can say so.
		p.log.Warn("pages: export cut", "website", s.web.ID, "err", err)
	default:
		out.Begin()
	}
	return nil
}
