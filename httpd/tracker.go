package httpd

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"
)

// The tracker script (SPEC §4), served at GET /js/script.js. Snippet:
//
//	<script data-host="https://stats.example.org" src="https://stats.example.org/js/script.js" async defer></script>
//
// It reads data-host (default: the origin of its own src) and data-dnt from
// its <script> tag; sends a pageview when it runs (deferred until activation
// for a prerendered page), after each history.pushState and on popstate,
// never twice in a row for the same URL (the #fragment is stripped), with
// document.referrer as the referrer of the first and the previous URL as the
// referrer of the next ones; it sends screen_resolution as
// screen.width x screen.height. With data-dnt="true" and Do Not Track on, it
// sends nothing. window.pa.track({name, value, unit}) sends an event. Every
// entry point is wrapped in try/catch: it never throws into the host page.
//
// Transport: fetch(api, {method: "POST", keepalive: true, credentials: "omit"})
// with the JSON as text/plain, as Plausible's tracker does; sendBeacon(api,
// string) when fetch is missing. text/plain is a CORS-safelisted type, so no
// preflight is needed (application/json would cost one OPTIONS round trip per
// page); keepalive lets the request outlive the page like a beacon; and
// unlike sendBeacon, which always sends credentials, fetch can omit the stats
// host's cookies.
//
//go:embed assets/script.js
var trackerJS []byte

// trackerAsset is the script, precompressed at init.
var trackerAsset = newStaticAsset(trackerJS, "application/javascript; charset=utf-8")

// staticAsset is an immutable file served from memory, plain or gzipped.
type staticAsset struct {
	plain, gz              []byte
	etag, gzETag           string // strong validators of each representation
	ctype, plainLen, gzLen string
}

func newStaticAsset(b []byte, ctype string) *staticAsset {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	sum := sha256.Sum256(b)
	tag := hex.EncodeToString(sum[:12])
	return &staticAsset{
		plain: b, gz: buf.Bytes(),
		etag: `"` + tag + `"`, gzETag: `"` + tag + `-gzip"`,
		ctype: ctype, plainLen: strconv.Itoa(len(b)), gzLen: strconv.Itoa(buf.Len()),
	}
}

// serveTracker serves GET and HEAD /js/script.js.
func (s *Server) serveTracker(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	trackerAsset.serve(w, r)
}

// serve answers the asset: gzipped when the client accepts gzip, cached for
// an hour, 304 when If-None-Match names either representation.
func (a *staticAsset) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("Vary", "Accept-Encoding")
	h.Set("X-Content-Type-Options", "nosniff")
	// The script is loaded from other sites' pages.
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	body, etag, n := a.plain, a.etag, a.plainLen
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		body, etag, n = a.gz, a.gzETag, a.gzLen
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && a.matches(inm) {
		h.Del("Content-Type")
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", n)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// matches reports whether an If-None-Match list names the asset ("*", or
// either representation's tag, weak or strong: the comparison is weak).
func (a *staticAsset) matches(inm string) bool {
	for tag := range strings.SplitSeq(inm, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == a.etag || tag == a.gzETag {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding allows gzip (or "*") with a
// q-value above 0.
func acceptsGzip(vals []string) bool {
	for _, v := range vals {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.TrimSpace(coding)
			if !strings.EqualFold(coding, "gzip") && !strings.EqualFold(coding, "x-gzip") && coding != "*" {
				continue
			}
			if q, ok := qValue(params); ok && q == 0 {
				continue
			}
			return true
		}
	}
	return false
}

// qValue reads "q=0.5" among the parameters of a list element.
func qValue(params string) (float64, bool) {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, true // an unreadable q counts as 0
			}
			return q, true
		}
	}
	return 1, false
}
