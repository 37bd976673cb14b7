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
	return o.changeWebsite(ctx, id, func(w *Website) (bool, error) {
		if w.Privacy == 2 {
			return false, invalid.Of("password", website.PasswordRequired)
		}
		store := w.PasswordHash != ""
		w.PasswordHash = ""
		return store, nil
	})
}
