package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/internal/password"
	"github.com/webstats/webstats/snapshot"
)

// Website is a website's record (SPEC §3.2). Text fields that are not set
// are nil.
type Website struct {
	ID            uint32    `json:"id"`
	Account       uint32    `json:"account"`
	Domain        string    `json:"domain"`
	Privacy       int       `json:"privacy"`
	PasswordHash  string    `json:"password_hash,omitempty"`
	Email         int       `json:"email"`
	ExcludeBots   int       `json:"exclude_bots"`
	ExcludeParams *string   `json:"exclude_params"`
	ExcludeIPs    *string   `json:"exclude_ips"`
	Timezone      string    `json:"timezone"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// HasPassword reports whether a password is set.
func (w *Website) HasPassword() bool { return w.PasswordHash != "" }

// WebsiteInput holds the fields of a website create or update request, as
// text (form values, or JSON values written as text: numbers in decimal,
// booleans as "1"/"0"). A nil field was not sent.
type WebsiteInput struct {
	Domain        *string
	Privacy       *string
	Password      *string
	Email         *string
	ExcludeBots   *string
	ExcludeParams *string
	ExcludeIPs    *string
	Timezone      *string
}

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

// WebsiteQuery selects and orders the websites of an Owner.
type WebsiteQuery struct {
	Search  string // case-insensitive substring of the domain
	SortBy  string // "id" (default) or "domain"
	Desc    bool
	Page    int // from 1; < 1 means 1
	PerPage int // default 10
}

// WebsitePage is one page of websites.
type WebsitePage struct {
	Websites []Website
	Total    int
	Page     int
	PerPage  int
	LastPage int
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
	slices.SortFunc(all, func(a, b Website) int {
		c := cmp.Compare(a.ID, b.ID)
		if q.SortBy == "domain" {
			c = cmp.Or(strings.Compare(a.Domain, b.Domain), c)
		}
		if q.Desc {
			c = -c
		}
		return c
	})
	per, page, last, lo, hi := pageBounds(len(all), q.PerPage, q.Page)
	return WebsitePage{Websites: all[lo:hi], Total: len(all), Page: page, PerPage: per, LastPage: last}
}

// pageBounds computes the paging of total rows.
func pageBounds(total, perPage, page int) (per, pg, last, lo, hi int) {
	per = perPage
	if per <= 0 {
		per = 10
	}
	pg = max(page, 1)
	last = max(1, (total+per-1)/per)
	lo = min(total, (pg-1)*per)
	if pg-1 > total/per+1 { // avoid overflow for huge pages
		lo = total
	}
	hi = min(total, lo+per)
	return per, pg, last, lo, hi
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
	w := Website{Account: account, Privacy: 1, Email: 0, ExcludeBots: 1, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	var verr ValidationError
	if in.Domain == nil || strings.TrimSpace(*in.Domain) == "" {
		verr.add("domain", "The domain field is required.")
	} else if utf8.RuneCountInString(*in.Domain) > 255 {
		verr.add("domain", "The domain must not be greater than 255 characters.")
	} else if d, ok := norm.Domain(*in.Domain); !ok {
		verr.add("domain", "The domain format is invalid.")
	} else {
		w.Domain = d
	}
	e.applyInput(&w, in, &verr)
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
			verr.Fields = slices.Insert(verr.Fields, 0, FieldError{"domain", "The domain has already been taken."})
		}
	}
	return verr.orNil()
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
	e.applyInput(&cur, in, &verr)
	if err := verr.orNil(); err != nil {
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
		s, ok := e.sites[id]
		if !ok || !o.owns(s.web) {
			return ErrNotFound
		}
		w, verr := *s.web, verr
		e.applyInput(&w, in, &verr)
		if err := verr.orNil(); err != nil {
			return err
		}
		if pwHash != "" {
			w.PasswordHash = pwHash
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

// applyInput validates the optional fields of in into w. It checks a
// password but does not hash it (see newPasswordHash).
func (e *Engine) applyInput(w *Website, in WebsiteInput, verr *ValidationError) {
	choice := func(field string, v *string, set *int, allowed ...int) {
		if v == nil {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(*v))
		if err != nil || !slices.Contains(allowed, n) {
			verr.add(field, "The selected "+strings.ReplaceAll(field, "_", " ")+" is invalid.")
			return
		}
		*set = n
	}
	choice("privacy", in.Privacy, &w.Privacy, 0, 1, 2)
	choice("email", in.Email, &w.Email, 0, 1)
	choice("exclude_bots", in.ExcludeBots, &w.ExcludeBots, 0, 1)
	if in.Password != nil && *in.Password != "" {
		if msg := password.CheckInput(*in.Password); msg != "" {
			verr.add("password", msg)
		}
	} else if w.Privacy == 2 && w.PasswordHash == "" {
		verr.add("password", "The password field is required when privacy is 2.")
	}
	if in.Timezone != nil {
		tz := strings.TrimSpace(*in.Timezone)
		if _, err := loadLocation(tz); err != nil {
			verr.add("timezone", "The timezone must be a valid timezone.")
		} else {
			w.Timezone = tz
		}
	}
	if in.ExcludeParams != nil {
		if len(*in.ExcludeParams) > 65535 {
			verr.add("exclude_params", "The exclude params must not be greater than 65535 characters.")
		} else {
			w.ExcludeParams = nullable(*in.ExcludeParams)
		}
	}
	if in.ExcludeIPs != nil {
		if len(*in.ExcludeIPs) > 65535 {
			verr.add("exclude_ips", "The exclude ips must not be greater than 65535 characters.")
		} else if _, err := norm.ParseIPSet(*in.ExcludeIPs); err != nil {
			verr.add("exclude_ips", "The exclude ips must be IP addresses or CIDR ranges, one per line ("+strings.TrimPrefix(err.Error(), "norm: ")+").")
		} else {
			w.ExcludeIPs = nullable(*in.ExcludeIPs)
		}
	}
}

// nullable maps an empty text field to null, as the API shows unset fields.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// loadLocation loads an IANA time zone; "Local" and "" are refused.
func loadLocation(tz string) (*time.Location, error) {
	if tz == "" || tz == "Local" || len(tz) > 64 {
		return nil, errors.New("engine: invalid time zone")
	}
	return time.LoadLocation(tz)
}

// DeleteWebsite removes a website and all its statistics, in memory at once
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
	e.results.drop(id)
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
		if _, err := loadLocation(w.Timezone); err != nil {
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
