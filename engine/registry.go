package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/snapshot"
)

// Account owns websites and an API key.
type Account struct {
	ID        uint32    `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
	// KeyHash is the SHA-256 of the API key; the key itself is never stored.
	KeyHash [32]byte `json:"key_hash"`
}

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

// counter record ids (snapshot.KindCounter).
const (
	counterAccount = 1
	counterWebsite = 2
)

// The API key format: a prefix and 32 random bytes in base64url.
const keyPrefix = "ws_"

func hashKey(key string) [32]byte { return sha256.Sum256([]byte(key)) }

func (e *Engine) newKey() (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(e.opts.Rand, b[:]); err != nil {
		return "", fmt.Errorf("engine: new API key: %w", err)
	}
	return keyPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// CreateAccount creates an account and returns it with its API key, which is
// shown only here: only its hash is stored. Email must be unique.
func (e *Engine) CreateAccount(ctx context.Context, name, email string) (Account, string, error) {
	email = strings.TrimSpace(email)
	name = strings.TrimSpace(name)
	var verr ValidationError
	switch {
	case email == "":
		verr.add("email", "The email field is required.")
	case len(email) > 255 || !strings.Contains(email, "@") || strings.ContainsAny(email, " \t\r\n<>,"):
		verr.add("email", "The email must be a valid email address.")
	}
	if utf8.RuneCountInString(name) > 255 {
		verr.add("name", "The name must not be greater than 255 characters.")
	}
	if err := verr.orNil(); err != nil {
		return Account{}, "", err
	}
	if name == "" {
		name = email[:strings.IndexByte(email, '@')]
	}
	key, err := e.newKey()
	if err != nil {
		return Account{}, "", err
	}
	if !e.enter() {
		return Account{}, "", ErrClosed
	}
	defer e.exit()
	e.regMu.Lock()
	defer e.regMu.Unlock()
	for _, a := range e.accounts {
		if strings.EqualFold(a.Email, email) {
			verr.add("email", "The email has already been taken.")
			return Account{}, "", &verr
		}
	}
	id := e.nextAccount + 1
	a := &Account{ID: id, Name: name, Email: email, CreatedAt: e.now().UTC().Truncate(time.Microsecond), KeyHash: hashKey(key)}
	if err := e.putCounterLocked(counterAccount, uint64(id)); err != nil {
		return Account{}, "", err
	}
	if err := e.putJSON(snapshot.KindAccount, uint64(id), a); err != nil {
		return Account{}, "", err
	}
	e.nextAccount = id
	e.accounts[id] = a
	e.keys[a.KeyHash] = id
	return *a, key, nil
}

// Accounts returns every account, by id.
func (e *Engine) Accounts(ctx context.Context) []Account {
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	out := make([]Account, 0, len(e.accounts))
	for _, a := range e.accounts {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b Account) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// AccountByEmail finds an account by its email (case-insensitive).
func (e *Engine) AccountByEmail(ctx context.Context, email string) (Account, error) {
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	for _, a := range e.accounts {
		if strings.EqualFold(a.Email, strings.TrimSpace(email)) {
			return *a, nil
		}
	}
	return Account{}, ErrNotFound
}

// Account returns the account with id.
func (e *Engine) Account(ctx context.Context, id uint32) (Account, error) {
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	a, ok := e.accounts[id]
	if !ok {
		return Account{}, ErrNotFound
	}
	return *a, nil
}

// RotateKey gives the account a new API key, returned here only; the old key
// stops working at once, and every session of the account ends.
func (e *Engine) RotateKey(ctx context.Context, account uint32) (string, error) {
	key, err := e.newKey()
	if err != nil {
		return "", err
	}
	if !e.enter() {
		return "", ErrClosed
	}
	defer e.exit()
	e.regMu.Lock()
	defer e.regMu.Unlock()
	a, ok := e.accounts[account]
	if !ok {
		return "", ErrNotFound
	}
	// End the sessions before the new key is stored: a crash between the
	// two leaves the account signed out with its old key, never signed in
	// with sessions the rotation should have ended.
	if err := e.endSessionsLocked(account); err != nil {
		return "", err
	}
	na := *a
	na.KeyHash = hashKey(key)
	if err := e.putJSON(snapshot.KindAccount, uint64(na.ID), &na); err != nil {
		return "", err
	}
	delete(e.keys, a.KeyHash)
	e.keys[na.KeyHash] = na.ID
	e.accounts[na.ID] = &na
	return key, nil
}

// Authenticate returns the account whose API key is key, or
// ErrUnauthenticated. Keys are compared by their hashes in constant time.
func (e *Engine) Authenticate(ctx context.Context, key string) (Account, error) {
	h := hashKey(key)
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	id, ok := e.keys[h]
	if !ok {
		return Account{}, ErrUnauthenticated
	}
	a := e.accounts[id]
	if subtle.ConstantTimeCompare(a.KeyHash[:], h[:]) != 1 {
		return Account{}, ErrUnauthenticated
	}
	return *a, nil
}

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
	e.regMu.Lock()
	defer e.regMu.Unlock()
	if err := e.checkNewWebsiteLocked(account, w.Domain, &verr); err != nil {
		return Website{}, err // the domain was taken meanwhile
	}
	if pwHash != "" {
		w.PasswordHash = pwHash
	}
	w.ID = e.nextWebsite + 1
	if err := e.putCounterLocked(counterWebsite, uint64(w.ID)); err != nil {
		return Website{}, err
	}
	if err := e.putJSON(snapshot.KindWebsite, uint64(w.ID), &w); err != nil {
		return Website{}, err
	}
	e.nextWebsite = w.ID
	e.addSiteLocked(&w, newSiteState(w.ID))
	return w, nil
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
	if _, ok := e.accounts[account]; !ok {
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
	e.regMu.Lock()
	defer e.regMu.Unlock()
	s, ok := e.sites[id]
	if !ok || !o.owns(s.web) {
		return Website{}, ErrNotFound
	}
	w := *s.web
	e.applyInput(&w, in, &verr)
	if err := verr.orNil(); err != nil {
		return Website{}, err
	}
	if pwHash != "" {
		w.PasswordHash = pwHash
	}
	w.UpdatedAt = e.now().UTC().Truncate(time.Microsecond)
	if err := e.putJSON(snapshot.KindWebsite, uint64(w.ID), &w); err != nil {
		return Website{}, err
	}
	s.setWebsite(&w)
	return w, nil
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
		if msg := checkPasswordInput(*in.Password); msg != "" {
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
	e.regMu.Lock()
	s, ok := e.sites[id]
	if !ok || !o.owns(s.web) {
		e.regMu.Unlock()
		return ErrNotFound
	}
	// The record goes first: if the store refuses (a full disk), nothing
	// changed, in memory or on disk. Once it is gone, Open ignores the
	// website's other keys, removed below.
	if err := e.store.Delete(snapshot.KindWebsite, uint64(id)); err != nil {
		e.regMu.Unlock()
		return fmt.Errorf("engine: delete website %d: %w", id, err)
	}
	if s.goals != nil {
		if err := e.store.Delete(snapshot.KindGoals, uint64(id)); err != nil {
			// The website is gone; Open drops goals of no website.
			e.opts.Logger.Error("delete goals", "website", id, "err", err)
		}
	}
	delete(e.sites, id)
	delete(e.domains, s.web.Domain)
	e.regMu.Unlock()

	sh := e.shardOf(id)
	sh.mu.Lock()
	s.state.deleted = true
	e.releaseLocked(s.state)
	sh.mu.Unlock()
	// (A query in flight may still cache a day of it: ids are never
	// reused, and the cache's bound evicts it.)
	e.wholes.drop(id)
	e.results.drop(id)
	e.snapMu.Lock() // no snapshot may write this website's keys back
	defer e.snapMu.Unlock()
	if err := e.store.DeleteWebsite(id); err != nil {
		return fmt.Errorf("engine: delete website %d: %w", id, err)
	}
	for _, k := range []ReportKind{ReportWeekly, ReportMonthly} {
		if err := e.store.Delete(snapshot.KindReport, reportID(id, k)); err != nil {
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
	if err := e.store.Put(kind, id, b); err != nil {
		return fmt.Errorf("engine: write registry: %w", err)
	}
	return nil
}

func (e *Engine) putCounterLocked(which uint64, v uint64) error {
	if err := e.store.Put(snapshot.KindCounter, which, strconv.AppendUint(nil, v, 10)); err != nil {
		return fmt.Errorf("engine: write registry: %w", err)
	}
	return nil
}

// loadRegistry reads accounts, websites, counters and sessions from the
// store.
func (e *Engine) loadRegistry() error {
	e.auth.init()
	err := e.store.Scan(snapshot.KindCounter, func(id uint64, v []byte) error {
		n, err := strconv.ParseUint(string(v), 10, 32)
		if err != nil {
			return fmt.Errorf("engine: counter %d: %w: %w", id, snapshot.ErrCorrupt, err)
		}
		switch id {
		case counterAccount:
			e.nextAccount = uint32(n)
		case counterWebsite:
			e.nextWebsite = uint32(n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = e.store.Scan(snapshot.KindAccount, func(id uint64, v []byte) error {
		a := new(Account)
		if err := json.Unmarshal(v, a); err != nil || uint64(a.ID) != id {
			return fmt.Errorf("engine: account %d: %w", id, snapshot.ErrCorrupt)
		}
		e.accounts[a.ID] = a
		e.keys[a.KeyHash] = a.ID
		e.nextAccount = max(e.nextAccount, a.ID)
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
	if err := e.loadGoals(); err != nil {
		return err
	}
	return e.loadSessions()
}
