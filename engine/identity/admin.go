package identity

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// invite is a stored invitation (snapshot.KindInvite, by the first 8
// bytes of its token's hash).
type invite struct {
	Hash    [32]byte  `json:"hash"`
	By      uint32    `json:"by"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

func (i *invite) id() uint64 { return binary.BigEndian.Uint64(i.Hash[:8]) }

// Invite is an invitation as admins see it.
type Invite struct {
	ID      string // to delete it
	By      uint32
	Created time.Time
	Expires time.Time
}

// inviteLocked returns the unexpired invitation of token, or nil. regMu
// must be held.
func (e *Service) inviteLocked(token string) *invite {
	if len(token) > maxSessionToken {
		return nil
	}
	h := hashToken(token)
	inv := e.invites[binary.BigEndian.Uint64(h[:8])]
	if inv == nil || subtle.ConstantTimeCompare(inv.Hash[:], h[:]) != 1 || !e.reg.Now().Before(inv.Expires) {
		return nil
	}
	// An invitation is as good as its admin is now.
	if by := e.accounts[inv.By]; by == nil || !by.Admin || by.Disabled {
		return nil
	}
	return inv
}

// CheckInvite reports whether token is an invitation that can be used.
func (e *Service) CheckInvite(ctx context.Context, token string) bool {
	e.reg.RLock()
	defer e.reg.RUnlock()
	return e.inviteLocked(token) != nil
}

// dropInviteLocked deletes inv. regMu must be held for writing.
func (e *Service) dropInviteLocked(inv *invite) error {
	if err := e.reg.Delete(snapshot.KindInvite, inv.id()); err != nil {
		return fmt.Errorf("engine: delete invitation: %w", err)
	}
	delete(e.invites, inv.id())
	return nil
}

// loadInvites reads the invitations and deletes the expired ones.
func (e *Service) loadInvites() error {
	now := e.reg.Now()
	var drop []uint64
	err := e.loader.Scan(snapshot.KindInvite, func(id uint64, v []byte) error {
		inv := new(invite)
		if err := json.Unmarshal(v, inv); err != nil || inv.id() != id {
			return fmt.Errorf("engine: invitation %x: %w", id, snapshot.ErrCorrupt)
		}
		if !now.Before(inv.Expires) || len(e.invites) >= MaxInvites {
			drop = append(drop, id)
			return nil
		}
		e.invites[id] = inv
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range drop {
		if err := e.reg.DeleteNow(snapshot.KindInvite, id); err != nil {
			return fmt.Errorf("engine: delete invitation: %w", err)
		}
	}
	return nil
}

// Admin is the view of identity an admin account has (Service.Admin):
// every method acts for that account and checks again, under the registry
// lock, that it is still an enabled admin. Make one per request.
type Admin struct {
	e     *Service
	actor uint32
}

// Admin returns the admin view for account actor, or ErrForbidden when it
// is not an enabled admin.
func (e *Service) Admin(actor uint32) (Admin, error) {
	e.reg.RLock()
	defer e.reg.RUnlock()
	r := e.accounts[actor]
	if r == nil || !r.Admin || r.Disabled {
		return Admin{}, ErrForbidden
	}
	return Admin{e: e, actor: actor}, nil
}

// Accounts returns every account, by id.
func (ad Admin) Accounts(ctx context.Context) []Account { return ad.e.Accounts(ctx) }

// CreateAccount creates an account with a first API key, returned here only.
func (ad Admin) CreateAccount(ctx context.Context, name, email string) (Account, string, error) {
	return ad.e.createAccount(ctx, name, email, ad.stillAdminLocked)
}

// SetDisabled disables or enables account id. Disabling ends its sessions
// at once and its keys answer 401. An admin cannot disable itself, so that
// an enabled admin always remains.
func (ad Admin) SetDisabled(ctx context.Context, id uint32, disabled bool) (Account, error) {
	if id == ad.actor {
		return Account{}, ErrForbidden
	}
	return ad.e.modifyAccount(ctx, id, func(r *accountRec) error {
		if err := ad.stillAdminLocked(); err != nil {
			return err
		}
		if disabled && r.Admin && ad.e.enabledAdminsLocked() <= 1 {
			return ErrForbidden
		}
		if disabled {
			if err := ad.e.endSessionsLocked(id); err != nil {
				return err
			}
			r.Gen++
		}
		r.Disabled = disabled
		return nil
	})
}

// SetAdmin makes account id an admin or takes it back. An admin cannot
// take its own, so that one always remains.
func (ad Admin) SetAdmin(ctx context.Context, id uint32, admin bool) (Account, error) {
	if id == ad.actor {
		return Account{}, ErrForbidden
	}
	return ad.e.modifyAccount(ctx, id, func(r *accountRec) error {
		if err := ad.stillAdminLocked(); err != nil {
			return err
		}
		if !admin && r.Admin && !r.Disabled && ad.e.enabledAdminsLocked() <= 1 {
			return ErrForbidden
		}
		r.Admin = admin
		return nil
	})
}

// stillAdminLocked checks, under regMu, that the actor is still an
// enabled admin: two admins taking each other's rights at once leave one.
func (ad Admin) stillAdminLocked() error {
	r := ad.e.accounts[ad.actor]
	if r == nil || !r.Admin || r.Disabled {
		return ErrForbidden
	}
	return nil
}

// enabledAdminsLocked counts the enabled admins. regMu must be held.
func (e *Service) enabledAdminsLocked() int {
	n := 0
	for _, r := range e.accounts {
		if r.Admin && !r.Disabled {
			n++
		}
	}
	return n
}

// CreateInvite makes a single-use invitation, valid for InviteLife, and
// returns its token (shown only here; the engine keeps its hash).
func (ad Admin) CreateInvite(ctx context.Context) (string, Invite, error) {
	e := ad.e
	token, err := e.newSecret(32)
	if err != nil {
		return "", Invite{}, err
	}
	now := e.reg.Now().UTC()
	inv := &invite{Hash: hashToken(token), By: ad.actor, Created: now, Expires: now.Add(InviteLife)}
	if !e.reg.Enter() {
		return "", Invite{}, engine.ErrClosed
	}
	defer e.reg.Exit()
	err = e.regDo(ctx, func() error {
		if err := ad.stillAdminLocked(); err != nil {
			return err
		}
		for _, old := range e.invites {
			if !now.Before(old.Expires) {
				if err := e.dropInviteLocked(old); err != nil {
					return err
				}
			}
		}
		if len(e.invites) >= MaxInvites {
			return &engine.ValidationError{Fields: []engine.FieldError{{Field: "invite", Msg: "There are already 100 unused invitations. Delete some first."}}}
		}
		if _, dup := e.invites[inv.id()]; dup {
			return fmt.Errorf("engine: new invitation: id collision")
		}
		if err := e.putJSON(snapshot.KindInvite, inv.id(), inv); err != nil {
			return err
		}
		e.invites[inv.id()] = inv
		return nil
	})
	if err != nil {
		return "", Invite{}, err
	}
	return token, inv.public(), nil
}

func (i *invite) public() Invite {
	return Invite{ID: strconv.FormatUint(i.id(), 16), By: i.By, Created: i.Created, Expires: i.Expires}
}

// Invites returns the unused, unexpired invitations, newest first.
func (ad Admin) Invites(ctx context.Context) []Invite {
	e := ad.e
	now := e.reg.Now()
	e.reg.RLock()
	defer e.reg.RUnlock()
	var out []Invite
	for _, inv := range e.invites {
		if now.Before(inv.Expires) {
			out = append(out, inv.public())
		}
	}
	slices.SortFunc(out, func(a, b Invite) int { return cmp.Or(b.Created.Compare(a.Created), strings.Compare(a.ID, b.ID)) })
	return out
}

// DeleteInvite deletes the invitation whose Invite.ID is id.
func (ad Admin) DeleteInvite(ctx context.Context, id string) error {
	e := ad.e
	n, err := strconv.ParseUint(id, 16, 64)
	if err != nil {
		return engine.ErrNotFound
	}
	if !e.reg.Enter() {
		return engine.ErrClosed
	}
	defer e.reg.Exit()
	return e.regDo(ctx, func() error {
		if err := ad.stillAdminLocked(); err != nil {
			return err
		}
		inv := e.invites[n]
		if inv == nil {
			return engine.ErrNotFound
		}
		return e.dropInviteLocked(inv)
	})
}
