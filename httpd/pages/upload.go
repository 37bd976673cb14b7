package pages

// "Import data" on a website's settings page (SPEC §14): an upload of a
// Plausible export zip, a GoatCounter CSV export, Umami's tables or
// NDJSON import lines. Lines are checked whole first (a bad one is named
// by file, line and column and nothing counts), then counted in chunks
// in the background, each with an Idempotency-Key, while the page shows
// a progress line that refreshes itself. One import runs at a time on a
// server; the upload is bounded by maxUpload.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/httpd/internal/peerimport"
)

const (
	// maxUpload bounds the body of an upload (every file of it).
	maxUpload = 256 << 20
	// uploadChunk is how many lines one chunk of an upload counts.
	uploadChunk = 5000
	// uploadChunkBytes bounds a chunk's body too: a chunk is decoded,
	// encoded and logged at once, as one import request, whose body is
	// at most 10 MiB; lines of up to peerimport.MaxLine made a chunk of
	// uploadChunk lines as large as the whole upload.
	uploadChunkBytes = 8 << 20
	// maxUploadFiles bounds the files of one upload.
	maxUploadFiles = 8
)

// uploader is the one import of lines under way (or the last one): its
// progress, shown to the owner of its website.
type uploader struct {
	check func(body []byte) (bad int, msg string, err error)
	count func(ctx context.Context, website uint32, body []byte, key string) (int, error)
	log   *slog.Logger

	mu  sync.Mutex
	job *uploadJob
}

// uploadJob is an import's progress.
type uploadJob struct {
	Website              uint32
	Format               string
	Lines, Done, Counted int
	Err                  string
	Running              bool
	Started              time.Time
}

// parseForm reads a POST form, a multipart one too (an upload: files past
// 32 MiB wait on disk; the handler's body limit bounds them).
func parseForm(r *http.Request) error {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return r.ParseMultipartForm(32 << 20)
	}
	return r.ParseForm()
}

// importData is the body of site_import.html.
type importData struct {
	siteHead
	Lines   bool // the server imports lines (not only Plausible zips)
	Error   string
	Job     *uploadJob
	Percent int
	Rate    string
}

// importPage serves GET /websites/:id/import: the form and the progress
// of the website's import.
func (p *Pages) importPage(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	p.renderImport(w, r, http.StatusOK, s, "")
	return nil
}

func (p *Pages) renderImport(w http.ResponseWriter, r *http.Request, status int, s *siteRequest, msg string) {
	d := importData{siteHead: p.head(w, r, s, "settings"), Lines: p.upload.count != nil, Error: msg}
	p.upload.mu.Lock()
	if j := p.upload.job; j != nil && j.Website == s.web.ID {
		c := *j
		d.Job = &c
	}
	p.upload.mu.Unlock()
	if j := d.Job; j != nil && j.Lines > 0 {
		d.Percent = j.Done * 100 / j.Lines
		if secs := p.now().Sub(j.Started).Seconds(); secs > 0 && j.Done > 0 {
			d.Rate = strconv.Itoa(int(float64(j.Done)/secs)) + " lines/s"
		}
	}
	p.renderSite(w, r, status, "site_import.html", "Import data", s, s.base()+"/import", d)
}

// importUpload serves POST /websites/:id/import.
func (p *Pages) importUpload(w http.ResponseWriter, r *http.Request, s *siteRequest) error {
	defer func() {
		if r.MultipartForm != nil {
			r.MultipartForm.RemoveAll()
		}
	}()
	format := r.PostForm.Get("format")
	var files []*multipart.FileHeader
	if r.MultipartForm != nil {
		files = r.MultipartForm.File["file"]
	}
	fail := func(msg string) error {
		p.renderImport(w, r, http.StatusUnprocessableEntity, s, msg)
		return nil
	}
	if len(files) == 0 || len(files) > maxUploadFiles {
		return fail("Choose a file to import (at most " + strconv.Itoa(maxUploadFiles) + ").")
	}
	if format == "plausible" {
		// Under the one slot too: a zip and its rows are in memory.
		// And under the server's zip slot, which the API's zip uploads
		// take: the page's slot alone let one of each hold a zip and its
		// rows in memory at once. Taken first, so that a refusal leaves
		// the page's last import as it was.
		if p.zipUpload != nil {
			release, ok := p.zipUpload()
			if !ok {
				return fail("Another import is under way on this server: try again when it has finished.")
			}
			defer release()
		}
		if !p.upload.claim(s.web.ID, format, p.now()) {
			return fail("Another import is under way on this server: try again when it has finished.")
		}
		err := p.importZip(w, r, s, files[0], fail)
		p.upload.finish(err)
		return err
	}
	if format != "goatcounter" && format != "umami" && format != "ndjson" {
		return fail("Choose the file's format.")
	}
	if p.upload.count == nil {
		return fail("This server imports Plausible export zips only.")
	}
	if !p.upload.claim(s.web.ID, format, p.now()) {
		return fail("Another import is under way on this server: try again when it has finished.")
	}
	paths, err := saveUploads(files)
	var stem string
	if err == nil {
		stem, err = p.upload.checkAll(format, paths)
	}
	if err != nil {
		removeAll(paths)
		p.upload.finish(err)
		var ue *uploadError
		if errors.As(err, &ue) {
			return fail(ue.msg + " Nothing was imported.")
		}
		return err
	}
	go p.upload.run(context.WithoutCancel(r.Context()), s.web.ID, format, paths, stem)
	http.Redirect(w, r, s.base()+"/import", http.StatusSeeOther)
	return nil
}

// importZip imports a Plausible export zip into the imported layer.
func (p *Pages) importZip(w http.ResponseWriter, r *http.Request, s *siteRequest, fh *multipart.FileHeader, fail func(string) error) error {
	f, err := fh.Open()
	if err != nil {
		return err
	}
	defer f.Close()
	// Read into a buffer of the file's size (the multipart reader's
	// count of what it stored): io.ReadAll grows by doubling, up to
	// twice a zip of maxUpload in memory, and copies it as it goes.
	if fh.Size > maxUpload {
		return fail(fmt.Sprintf("The file is larger than %d MiB. Nothing was imported.", maxUpload>>20))
	}
	b := make([]byte, fh.Size)
	if _, err := io.ReadFull(f, b); err != nil {
		return err
	}
	x, err := plausiblezip.Read(bytes.NewReader(b), int64(len(b)))
	var pe *plausiblezip.Error
	if errors.As(err, &pe) {
		return fail(pe.Error() + " Nothing was imported.")
	}
	if err != nil {
		return err
	}
	imp, err := s.own.ImportPlausible(r.Context(), s.web.ID, x, fh.Filename)
	if err != nil {
		return fail("The import failed: " + err.Error())
	}
	p.setFlash(w, fmt.Sprintf("%s was imported (import %d).", cutName(fh.Filename), imp.ID))
	http.Redirect(w, r, s.base()+"/import", http.StatusSeeOther)
	return nil
}

// uploadError is a refused upload, its message for the page.
type uploadError struct{ msg string }

func (e *uploadError) Error() string { return e.msg }

// claim takes the server's one import slot for website.
func (u *uploader) claim(website uint32, format string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.job != nil && u.job.Running {
		return false
	}
	u.job = &uploadJob{Website: website, Format: format, Running: true, Started: now}
	return true
}

// finish ends the job, with err's message if it failed.
func (u *uploader) finish(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.job.Running = false
	if err != nil {
		u.job.Err = err.Error()
	}
}

// checkAll checks every line of the files with the import endpoint's
// checks and counts them; the first bad one is an *uploadError naming
// its file and line.
func (u *uploader) checkAll(format string, paths []upload) (stem string, err error) {
	lines := 0
	h := sha256.New()
	// The keys name a chunk by its number: the chunking is part of
	// their stem, so that a key never answers for other lines.
	fmt.Fprintf(h, "%s %d %d\n", format, uploadChunk, uploadChunkBytes)
	err = eachChunk(format, paths, func(body []byte, where []at) error {
		lines += len(where)
		h.Write(body)
		bad, msg, err := u.check(body)
		if err != nil {
			return err
		}
		if bad >= 0 && bad < len(where) {
			return &uploadError{fmt.Sprintf("%s, line %d: %s.", where[bad].file, where[bad].line, strings.TrimSuffix(msg, "."))}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if lines == 0 {
		return "", &uploadError{"The file has no lines to import."}
	}
	u.mu.Lock()
	u.job.Lines = lines
	u.mu.Unlock()
	return "web-" + hex.EncodeToString(h.Sum(nil))[:32] + "-", nil
}

// run counts the checked files chunk by chunk, each with the key stem
// (the content's digest, from checkAll) and the chunk's number, and
// removes them. The same file uploaded again within engine.KeyTTL counts
// nothing again.
func (u *uploader) run(ctx context.Context, website uint32, format string, paths []upload, stem string) {
	defer removeAll(paths)
	// No request's handler recovers a panic here: unrecovered, it would
	// end the server. The import stops, and its page says so; chunks
	// counted before stay counted (an upload again counts only the rest,
	// by their keys).
	defer func() {
		if v := recover(); v != nil {
			if u.log != nil {
				u.log.Error("import upload panicked", "website", website, "panic", v, "stack", string(debug.Stack()))
			}
			u.finish(errors.New("an internal error stopped it"))
		}
	}()
	i := 0
	err := eachChunk(format, paths, func(body []byte, where []at) error {
		n, err := u.count(ctx, website, body, stem+strconv.Itoa(i))
		if err != nil {
			return err
		}
		i++
		u.mu.Lock()
		u.job.Done += len(where)
		u.job.Counted += n
		u.mu.Unlock()
		return nil
	})
	u.finish(err)
}

// upload is an uploaded file saved on disk: its name in the form and
// its path.
type upload struct{ name, path string }

// saveUploads copies the uploaded files to temporary files, which outlive
// the request.
func saveUploads(files []*multipart.FileHeader) ([]upload, error) {
	var out []upload
	for _, fh := range files {
		src, err := fh.Open()
		if err != nil {
			removeAll(out)
			return nil, err
		}
		dst, err := os.CreateTemp("", "webstats-upload-*")
		if err == nil {
			out = append(out, upload{cutName(fh.Filename), dst.Name()})
			_, err = io.Copy(dst, src)
			if cerr := dst.Close(); err == nil {
				err = cerr
			}
		}
		src.Close()
		if err != nil {
			removeAll(out)
			return nil, err
		}
	}
	return out, nil
}

func removeAll(paths []upload) {
	for _, u := range paths {
		os.Remove(u.path)
	}
}

// cutName bounds a file name shown on the page.
func cutName(s string) string {
	if r := []rune(s); len(r) > maxFlashRunes {
		return string(r[:maxFlashRunes]) + "…"
	}
	return s
}

// at is where a line came from: the uploaded file's name and its line.
type at struct {
	file string
	line int
}

// eachChunk calls fn with the files' import lines in chunks of
// uploadChunk, as NDJSON, and where each line came from.
func eachChunk(format string, files []upload, fn func(body []byte, where []at) error) error {
	var buf bytes.Buffer
	where := make([]at, 0, uploadChunk)
	flush := func() error {
		if len(where) == 0 {
			return nil
		}
		err := fn(buf.Bytes(), where)
		buf.Reset()
		where = where[:0]
		return err
	}
	add := func(line []byte, w at) error {
		if buf.Len()+len(line)+1 > uploadChunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		buf.Write(line)
		buf.WriteByte('\n')
		if where = append(where, w); len(where) == uploadChunk {
			return flush()
		}
		return nil
	}
	if err := eachLine(format, files, add); err != nil {
		return err
	}
	return flush()
}

// eachLine calls add with every import line of the files, in order; a
// bad file is an *uploadError saying what is wrong with it.
func eachLine(format string, files []upload, add func([]byte, at) error) error {
	pf := make([]peerimport.File, len(files))
	for i, u := range files {
		pf[i] = peerimport.File{Name: u.name, Open: func() (io.ReadCloser, error) {
			f, err := os.Open(u.path)
			if err != nil {
				return nil, err
			}
			return f, nil
		}}
	}
	err := peerimport.Lines(format, pf, func(line []byte, file string, n int) error {
		return add(line, at{file, n})
	})
	var (
		long *peerimport.LongLineError
		pe   *peerimport.Error
		re   *peerimport.ReadError
	)
	switch {
	case errors.As(err, &long):
		return &uploadError{fmt.Sprintf("%s, line %d: a line longer than %d bytes.", long.File, long.Line, peerimport.MaxLine)}
	case errors.Is(err, peerimport.ErrUmamiTables):
		return &uploadError{"Umami needs the session table and the website_event table (and, for event properties, event_data), each a CSV file with a header: choose them together."}
	case errors.As(err, &pe):
		return &uploadError{pe.Error() + "."}
	case errors.As(err, &re):
		// A saved upload that cannot be read is the server's fault,
		// said as it always was (the file's name is the page's).
		return re.Err
	}
	return err
}
