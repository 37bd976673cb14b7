package engine

// Owner is the engine seen by one account: its website and statistics calls
// act only on that account's websites, and another account's website is
// ErrNotFound, exactly like a missing one. Engine.Owner gives the handle of
// an account (an API caller, a signed-in user); Engine.Unscoped gives the
// server's own handle on every website (the command line, the report
// scheduler, the public statistics pages, which check a website's privacy
// themselves). Every call that reads or changes a website or its statistics
// goes through one (only the server's bookkeeping, CheckPassword and
// LastReport, takes a bare id), so no call can forget whose website it is.
//
// An Owner is a small value, safe for concurrent use; copy it freely. The
// zero Owner is not usable.
type Owner struct {
	e       *Engine
	account uint32
	all     bool // Unscoped: every account's websites
	// local: a question another node asked (partition.go), answered
	// here or not at all.
	local bool
}

// Owner returns the handle of account. An account that does not exist (0,
// for one) owns nothing: every call on its websites is ErrNotFound.
func (e *Engine) Owner(account uint32) Owner { return Owner{e: e, account: account} }

// Unscoped returns the handle on every account's websites, for the server's
// own use. Never give it to a caller that acts for an account. Its
// CreateWebsite is ErrNotFound: it has no account to create for.
func (e *Engine) Unscoped() Owner { return Owner{e: e, all: true} }

// owns reports whether the handle may act on w.
func (o Owner) owns(w *Website) bool { return o.all || w.Account == o.account }

// site returns the website id if the handle owns it.
func (o Owner) site(id uint32) (*site, error) {
	o.e.regMu.RLock()
	defer o.e.regMu.RUnlock()
	s, ok := o.e.sites[id]
	if !ok || !o.owns(s.web) {
		return nil, ErrNotFound
	}
	return s, nil
}
