package engine

import (
	"context"
	"time"

	"github.com/webstats/webstats/snapshot"
)

// RemoveWebsitePassword removes the password of website id, so that the
// API shows "password": false again; the password cookies of its
// statistics pages stop working with it. A website whose privacy is 2
// needs its password: that is a *ValidationError under "password" with the
// message UpdateWebsite gives, so change the privacy first. A website
// without a password is returned as it is.
//
// (WebsiteInput cannot say "no password": an empty password means "keep
// it", as in the API.)
func (o Owner) RemoveWebsitePassword(ctx context.Context, id uint32) (Website, error) {
	e := o.e
	if !e.enter() {
		return Website{}, ErrClosed
	}
	defer e.exit()
	e.regMu.Lock()
	defer e.regMu.Unlock()
	s, ok := e.sites[id]
	if !ok || !o.owns(s.web) {
		return Website{}, ErrNotFound
	}
	if s.web.Privacy == 2 {
		return Website{}, &ValidationError{Fields: []FieldError{{"password", "The password field is required when privacy is 2."}}}
	}
	if s.web.PasswordHash == "" {
		return *s.web, nil
	}
	w := *s.web
	w.PasswordHash = ""
	w.UpdatedAt = e.now().UTC().Truncate(time.Microsecond)
	if err := e.putJSON(snapshot.KindWebsite, uint64(w.ID), &w); err != nil {
		return Website{}, err
	}
	s.setWebsite(&w)
	return w, nil
}
