package engine

import (
	"context"

	"github.com/webstats/webstats/engine/internal/invalid"
	"github.com/webstats/webstats/engine/internal/website"
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
	var out Website
	err := e.regDo(ctx, func() error {
		s, ok := e.sites[id]
		if !ok || !o.owns(s.web) {
			return ErrNotFound
		}
		if s.web.Privacy == 2 {
			return invalid.Of("password", website.PasswordRequired)
		}
		out = *s.web
		if s.web.PasswordHash == "" {
			return nil
		}
		w := *s.web
		w.PasswordHash = ""
		if err := e.putWebsiteLocked(s, &w); err != nil {
			return err
		}
		out = w
		return nil
	})
	if err != nil {
		return Website{}, err
	}
	return out, nil
}
