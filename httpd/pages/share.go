package pages

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// Shared links (the Plausible Sites API's PUT /api/v1/sites/shared-links):
// /share/<domain>?auth=<secret> opens a website's statistics read-only to
// whoever has the link, whatever its privacy. The secret is derived, not
// stored: the first 16 bytes of HMAC-SHA256 with the pages' cookie key over
// "share" and the website id, base64url. Website ids are never reused, so a
// website deleted and created again has a new link; a link cannot be
// revoked on its own (rotating the "pages-cookie" secret revokes every link
// and every cookie).
//
// The link sets the cookie ws_share (path /stats/<domain>, 30 days, signed
// "<website id>|<expiry unix>"), so that the overview's links to the full
// tables and the realtime page open too.
const (
	shareCookie  = "ws_share"
	purposeShare = "share"
	shareLife    = 30 * 24 * time.Hour
)

// shareAuth is the secret of website id's shared link under key.
func shareAuth(key [32]byte, id uint32) string {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte("share-link"))
	m.Write([]byte{0})
	m.Write([]byte(strconv.FormatUint(uint64(id), 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// ShareAuth returns the auth parameter of the shared link of website id:
// /share/<domain>?auth=<it>. It reads the pages' cookie key from e, as New
// does.
func ShareAuth(ctx context.Context, e *engine.Engine, id uint32) (string, error) {
	key, err := identity.Must(e).Secret(ctx, "pages-cookie")
	if err != nil {
		return "", err
	}
	return shareAuth(key, id), nil
}

// share serves GET /share/:domain?auth=…: with the right secret, the
// overview of the website and the share cookie; else the same 404 as an
// unknown domain.
func (p *Pages) share(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	web, err := p.e.Unscoped().WebsiteByDomain(r.Context(), ps.ByName("domain"))
	if err != nil {
		return errNotFound
	}
	auth := r.URL.Query().Get("auth")
	if !hmac.Equal([]byte(auth), []byte(shareAuth(p.key, web.ID))) {
		return errNotFound
	}
	v := &visit{web: web, allowed: true}
	if a, ok := p.session(r); ok {
		v.account = &a
		v.owner = a.ID == web.Account
	}
	exp := strconv.FormatInt(p.now().Add(shareLife).Unix(), 10)
	p.setCookie(w, shareCookie, p.sign(purposeShare, strconv.FormatUint(uint64(web.ID), 10), exp), v.base(), shareLife)
	return p.renderOverview(w, r, v)
}

// hasShare reports whether r carries a valid share cookie for web.
func (p *Pages) hasShare(r *http.Request, web *engine.Website) bool {
	for _, c := range r.Cookies() {
		if c.Name != shareCookie {
			continue
		}
		f, ok := p.verify(purposeShare, c.Value, 2)
		if ok && f[0] == strconv.FormatUint(uint64(web.ID), 10) && p.unexpired(f[1]) {
			return true
		}
	}
	return false
}
