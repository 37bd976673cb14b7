package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/internal/website"
	"github.com/webstats/webstats/snapshot"
)

// Website is a website's record (SPEC §3.2). Text fields that are not set
// are nil. Its JSON is the stored record.
type Website = website.Record

// WebsiteInput holds the fields of a website create or update request, as
// text (form values, or JSON values written as text: numbers in decimal,
// booleans as "1"/"0"). A nil field was not sent.
type WebsiteInput = website.Input

// WebsiteQuery selects and orders the websites of an Owner; WebsitePage is
// one page of them.
type (
	WebsiteQuery = website.Query
	WebsitePage  = website.Page
)

// counterWebsite is the id of the website counter record
// (snapshot.KindCounter); counter 1 is the attached package's (accounts).
const counterWebsite = 2

// NormalizeDomain returns domain as a website record stores it (SPEC
// §3.2: lower-cased, without http(s)://, a leading www. or a trailing /, an
// IDN as punycode), and whether it is a valid domain.
func NormalizeDomain(domain string) (string, bool) { return norm.Domain(domain) }

// Website returns the website id.
func (o Owner) Website(ctx context.Context, id uint32) (Website, error) {
	e := o.e
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	s, ok := e.sites[id]
	if !ok || !o.owns(s.web) {
		return Website{}, ErrNotFound
	}
	return *s.web, nil
}

// WebsiteByDomain returns the website whose domain is domain (normalised as
// tracked hosts are).
func (o Owner) WebsiteByDomain(ctx context.Context, domain string) (Website, error) {
	e := o.e
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	id, ok := e.domains[norm.Host(domain)]
	if !ok || !o.owns(e.sites[id].web) {
		return Website{}, ErrNotFound
	}
	return *e.sites[id].web, nil
}

// Websites lists the handle's websites.
func (o Owner) Websites(ctx context.Context, q WebsiteQuery) WebsitePage {
	e := o.e
	search := strings.ToLower(q.Search)
	e.regMu.RLock()
	var all []Website
	for _, s := range e.sites {
		w := s.web
		if o.owns(w) && strings.Contains(w.Domain, search) {
			all = append(all, *w)
		}
	}
	e.regMu.RUnlock()
	return website.List(all, q)
}

// CreateWebsite validates in and creates a website for the handle's account
// (an Unscoped handle creates none: ErrNotFound). A password
// is hashed (argon2id) only once every field is valid, outside the registry
// lock; it fails with ErrBusy when too many hashes run at once.
func (o Owner) CreateWebsite(ctx context.Context, in WebsiteInput) (Website, error) {
	e, account := o.e, o.account
	if o.all {
		return Website{}, ErrNotFound
	}
	now := e.now().UTC().Truncate(time.Microsecond)
	w, verr := website.New(account, now, in)
	// Check what the registry decides before hashing, so a request that
	// fails costs no hash.
	if err := e.checkNewWebsite(account, w.Domain, &verr); err != nil {
		return Website{}, err
	}
	pwHash, err := e.newPasswordHash(ctx, in)
	if err != nil {
		return Website{}, err
	}
	if !e.enter() {
		return Website{}, ErrClosed
	}
	defer e.exit()
	var out Website
	err = e.regDo(ctx, func() error {
		w, verr := w, verr
		if err := e.checkNewWebsiteLocked(account, w.Domain, &verr); err != nil {
			return err // the domain was taken meanwhile
		}
		if pwHash != "" {
			w.PasswordHash = pwHash
		}
		w.ID = e.nextWebsite + 1
		if err := e.putCounterLocked(counterWebsite, uint64(w.ID)); err != nil {
			return err
		}
		if err := e.putJSON(snapshot.KindWebsite, uint64(w.ID), &w); err != nil {
			return err
		}
		e.nextWebsite = w.ID
		e.addSiteLocked(&w, newSiteState(w.ID))
		out = w
		return nil
	})
	if err != nil {
		return Website{}, err
	}
	return out, nil
}

// checkNewWebsite returns ErrNotFound for an unknown account, else verr
// with "taken" first when the domain is taken, or nil when verr is empty.
func (e *Engine) checkNewWebsite(account uint32, domain string, verr *ValidationError) error {
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	return e.checkNewWebsiteLocked(account, domain, verr)
}

// checkNewWebsiteLocked is checkNewWebsite with regMu held.
func (e *Engine) checkNewWebsiteLocked(account uint32, domain string, verr *ValidationError) error {
	// Account 0 is no account's. Whether another id is an account's is
	// the attached package's to say (without one, any id owns websites).
	if account == 0 || e.records != nil && !e.records.HasAccount(account) {
		return ErrNotFound
	}
	if domain != "" {
		if _, taken := e.domains[domain]; taken {
			verr.Fields = slices.Insert(verr.Fields, 0, FieldError{Field: "domain", Msg: "The domain has already been taken."})
		}
	}
	return verr.Err()
}

// newPasswordHash hashes the password of in, if one was sent; in has been
// validated. It must not be called with regMu held.
func (e *Engine) newPasswordHash(ctx context.Context, in WebsiteInput) (string, error) {
	if in.Password == nil || *in.Password == "" {
		return "", nil
	}
	return e.hashPassword(ctx, *in.Password)
}

// UpdateWebsite changes the fields sent in in; domain cannot be changed and is
// ignored. A password is hashed outside the registry lock, as in
// CreateWebsite.
func (o Owner) UpdateWebsite(ctx context.Context, id uint32, in WebsiteInput) (Website, error) {
	e := o.e
	// Validate against the current record first, so that a request that
	// fails costs no hash, then hash, then validate again under the lock
	// (the record may have changed meanwhile).
	cur, err := o.Website(ctx, id)
	if err != nil {
		return Website{}, err
	}
	var verr ValidationError
	website.Apply(&cur, in, &verr)
	if err := verr.Err(); err != nil {
		return Website{}, err
	}
	pwHash, err := e.newPasswordHash(ctx, in)
	if err != nil {
		return Website{}, err
	}
	return o.changeWebsite(ctx, id, func(w *Website) (bool, error) {
		var verr ValidationError
		if website.Apply(w, in, &verr); len(verr.Fields) > 0 {
			return false, &verr
		}
		if pwHash != "" {
			w.PasswordHash = pwHash
		}
		return true, nil
	})
}

// changeWebsite calls change with a copy of the record of website id,
// under the registry lock, stores the copy when change says so and returns
// it; nothing changes when change returns an error.
func (o Owner) changeWebsite(ctx context.Context, id uint32, change func(w *Website) (store bool, err error)) (Website, error) {
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
		w := *s.web
		if store, err := change(&w); err != nil || !store {
			out = w
			return err
		}
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

// DeleteWebsite removes a website and all its statistics, in memory at once
// and on disk before it returns.
func (o Owner) DeleteWebsite(ctx context.Context, id uint32) error {
	e := o.e
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	var gone *site
	err := e.regDo(ctx, func() error {
		s, ok := e.sites[id]
		if !ok || !o.owns(s.web) {
			return ErrNotFound
		}
		// The record goes first: if the store refuses (a full disk),
		// nothing changed, in memory or on disk. Once it is gone, Open
		// ignores the website's other keys, removed below.
		if err := e.regDelete(snapshot.KindWebsite, uint64(id)); err != nil {
			return err
		}
		if s.goals != nil {
			if err := e.regDelete(snapshot.KindGoals, uint64(id)); err != nil {
				// The website is gone; Open drops goals of no website.
				e.opts.Logger.Error("delete goals", "website", id, "err", err)
			}
		}
		delete(e.sites, id)
		delete(e.domains, s.web.Domain)
		gone = s
		return nil
	})
	if err != nil || e.opts.Cluster != nil {
		// (In cluster mode the follower dropped the data: applyRegistry.)
		return err
	}
	return e.dropSiteData(gone)
}

// dropSiteData drops the statistics of a website removed from the
// registry, in memory and then in the store.
func (e *Engine) dropSiteData(s *site) error {
	id := s.web.ID
	sh := e.shardOf(id)
	sh.mu.Lock()
	s.state.deleted = true
	e.releaseLocked(s.state)
	sh.mu.Unlock()
	// (A query in flight may still cache a day of it: ids are never
	// reused, and the cache's bound evicts it.)
	e.wholes.Drop(id)
	e.results.Drop(id)
	e.forgetValues()
	// No import of the website may be stored after its keys are deleted:
	// ImportPlausible checks the website again under imported.write.
	e.imported.write.Lock()
	defer e.imported.write.Unlock()
	e.snapMu.Lock() // no snapshot may write this website's keys back
	defer e.snapMu.Unlock()
	if err := e.store.DeleteWebsite(id); err != nil {
		return fmt.Errorf("engine: delete website %d: %w", id, err)
	}
	e.dropImports(id) // imported.go: the store's went with the website's keys
	// Again: a query in flight may have made a table since, with values of
	// the website. (One that makes it after this keeps them until the
	// table is replaced, as the caches above may keep a day of it.)
	e.forgetValues()
	// The records kept per website by the attached package (report
	// claims: snapshot.KindReport, id website<<8 | kind, kinds 1 and 2)
	// go with it.
	for k := range uint64(2) {
		if err := e.store.Delete(snapshot.KindReport, uint64(id)<<8|(k+1)); err != nil {
			return fmt.Errorf("engine: delete website %d: %w", id, err)
		}
	}
	return nil
}

// CheckPassword reports whether password is the password of website id
// (false when the website has none). The argon2id check runs at most
// MaxPasswordHashes at once engine-wide: it fails with ErrBusy when it could
// not start within PasswordHashWait, or with ctx's error. Limiting failed
// attempts per client is the caller's job.
func (e *Engine) CheckPassword(ctx context.Context, id uint32, password string) (bool, error) {
	e.regMu.RLock()
	s, ok := e.sites[id]
	var h string
	if ok {
		h = s.web.PasswordHash
	}
	e.regMu.RUnlock()
	if h == "" || len(password) > utf8.UTFMax*MaxPasswordLength {
		return false, nil
	}
	return e.checkPassword(ctx, h, password)
}

func (e *Engine) putJSON(kind snapshot.Kind, id uint64, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.regPut(kind, id, b)
}

func (e *Engine) putCounterLocked(which uint64, v uint64) error {
	return e.regPut(snapshot.KindCounter, which, strconv.AppendUint(nil, v, 10))
}

// loadRegistry reads websites, their goals and the website counter from
// the store (the attached package loads its records at Registry.Attach).
func (e *Engine) loadRegistry() error {
	err := e.store.Scan(snapshot.KindCounter, func(id uint64, v []byte) error {
		if id != counterWebsite {
			return nil
		}
		n, err := strconv.ParseUint(string(v), 10, 32)
		if err != nil {
			return fmt.Errorf("engine: counter %d: %w: %w", id, snapshot.ErrCorrupt, err)
		}
		e.nextWebsite = uint32(n)
		return nil
	})
	if err != nil {
		return err
	}
	err = e.store.Scan(snapshot.KindWebsite, func(id uint64, v []byte) error {
		w := new(Website)
		if err := json.Unmarshal(v, w); err != nil || uint64(w.ID) != id {
			return fmt.Errorf("engine: website %d: %w", id, snapshot.ErrCorrupt)
		}
		if _, err := website.LoadLocation(w.Timezone); err != nil {
			return fmt.Errorf("engine: website %d: time zone %q: %w", id, w.Timezone, snapshot.ErrCorrupt)
		}
		e.nextWebsite = max(e.nextWebsite, w.ID)
		e.addSiteLocked(w, newSiteState(w.ID))
		return nil
	})
	if err != nil {
		return err
	}
	return e.loadGoals()
}
