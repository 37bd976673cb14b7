package httpd

// The imported layer over HTTP (SPEC §14): POST /api/v1/websites/{id}/imports
// uploads Plausible's export zip (the body itself, or the "file" field of a
// multipart form), GET lists the website's imports, DELETE
// /api/v1/websites/{id}/imports/{import_id} deletes one as a whole. A
// broken zip is a 422 naming the file, line and column, and nothing of it
// is stored.

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/plausiblezip"
)

// maxPlausibleZip bounds an uploaded export zip (a year of a site with
// 10k daily visitors is a few MB).
const maxPlausibleZip = 256 << 20

// importsRoutes registers the imports routes.
func (s *Server) importsRoutes() {
	s.api(http.MethodPost, "/websites/:id/imports", maxPlausibleZip, s.uploadImport)
	s.api(http.MethodGet, "/websites/:id/imports", maxBody, s.listImports)
	s.api(http.MethodDelete, "/websites/:id/imports/:import", maxBody, s.deleteImport)
}

// tryZipUpload takes s.plUploads for the "Import data" page's zip
// upload, which holds a zip and its rows in memory as uploadImport does:
// two such at once, one from each, would double that. The page does not
// wait (its form says to try again); the API does.
func (s *Server) tryZipUpload() (release func(), ok bool) {
	select {
	case s.plUploads <- struct{}{}:
		return func() { <-s.plUploads }, true
	default:
		return nil, false
	}
}

// uploadImport serves POST /websites/{id}/imports.
func (s *Server) uploadImport(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := websiteID(c)
	if err != nil {
		return err
	}
	o := s.e.Owner(c.account.ID)
	if _, err := o.Website(r.Context(), id); err != nil {
		return err
	}
	// One upload at a time (the others wait, holding nothing but their
	// connection): a zip of maxPlausibleZip and its rows, up to
	// plausiblezip.MaxRows, are in memory while it is read and stored.
	select {
	case s.plUploads <- struct{}{}:
		defer func() { <-s.plUploads }()
	case <-r.Context().Done():
		return r.Context().Err()
	}
	name := r.URL.Query().Get("file")
	var body []byte
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		f, h, err := r.FormFile("file")
		if err != nil {
			return fieldErrors{{Field: "file", Msg: "The file field is required."}}
		}
		defer f.Close()
		name = h.Filename
		body, err = io.ReadAll(f)
		if err != nil {
			return err
		}
	} else if body, err = io.ReadAll(r.Body); err != nil {
		return err
	}
	if name == "" {
		name = "export.zip"
	}
	x, err := plausiblezip.Read(bytes.NewReader(body), int64(len(body)))
	var pe *plausiblezip.Error
	if errors.As(err, &pe) {
		return fieldErrors{{Field: "file", Msg: pe.Error()}}
	}
	if err != nil {
		return err
	}
	imp, err := o.ImportPlausible(r.Context(), id, x, name)
	if errors.Is(err, engine.ErrImportCluster) {
		return &httpError{http.StatusConflict, err.Error()}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, dataBody{Data: imp, Status: http.StatusCreated})
	return nil
}

// listImports serves GET /websites/{id}/imports.
func (s *Server) listImports(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := websiteID(c)
	if err != nil {
		return err
	}
	list, err := s.e.Owner(c.account.ID).Imports(r.Context(), id)
	if errors.Is(err, engine.ErrImportCluster) {
		return &httpError{http.StatusConflict, err.Error()}
	}
	if err != nil {
		return err
	}
	if list == nil {
		list = []engine.Import{}
	}
	writeJSON(w, http.StatusOK, dataBody{Data: list, Status: http.StatusOK})
	return nil
}

// deleteImport serves DELETE /websites/{id}/imports/{import}.
func (s *Server) deleteImport(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := websiteID(c)
	if err != nil {
		return err
	}
	imp, err := strconv.ParseUint(c.params.ByName("import"), 10, 32)
	if err != nil || imp == 0 {
		return errNotFound
	}
	err = s.e.Owner(c.account.ID).DeleteImport(r.Context(), id, uint32(imp))
	if errors.Is(err, engine.ErrImportCluster) {
		return &httpError{http.StatusConflict, err.Error()}
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
