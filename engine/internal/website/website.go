package website

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webstats/webstats/engine/internal/invalid"
	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/internal/password"
)

// Record is a website's record (SPEC §3.2). Text fields that are not set
// are nil.
type Record struct {
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
func (w *Record) HasPassword() bool { return w.PasswordHash != "" }

// Input holds the fields of a website create or update request, as
// text (form values, or JSON values written as text: numbers in decimal,
// booleans as "1"/"0"). A nil field was not sent.
type Input struct {
	Domain        *string
	Privacy       *string
	Password      *string
	Email         *string
	ExcludeBots   *string
	ExcludeParams *string
	ExcludeIPs    *string
	Timezone      *string
}

// New returns the record of a new website of account created at now from
// in, with the defaults for the fields in does not send, and what is
// invalid in in. The record has no id and no password hash yet: the
// password of in is checked, not hashed. Whether the domain is taken is
// the registry's to say.
func New(account uint32, now time.Time, in Input) (Record, invalid.Error) {
	w := Record{Account: account, Privacy: 1, Email: 0, ExcludeBots: 1, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	var verr invalid.Error
	if in.Domain == nil || strings.TrimSpace(*in.Domain) == "" {
		verr.Add("domain", "The domain field is required.")
	} else if utf8.RuneCountInString(*in.Domain) > 255 {
		verr.Add("domain", "The domain must not be greater than 255 characters.")
	} else if d, ok := norm.Domain(*in.Domain); !ok {
		verr.Add("domain", "The domain format is invalid.")
	} else {
		w.Domain = d
	}
	Apply(&w, in, &verr)
	return w, verr
}

// Apply validates the fields of in other than the domain (which cannot
// change) into w, adding what is invalid to verr. It checks a password
// but does not hash it. (A function, not a method: Record is the
// engine's Website, whose methods embedders see.)
func Apply(w *Record, in Input, verr *invalid.Error) {
	choice := func(field string, v *string, set *int, allowed ...int) {
		if v == nil {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(*v))
		if err != nil || !slices.Contains(allowed, n) {
			verr.Add(field, "The selected "+strings.ReplaceAll(field, "_", " ")+" is invalid.")
			return
		}
		*set = n
	}
	choice("privacy", in.Privacy, &w.Privacy, 0, 1, 2)
	choice("email", in.Email, &w.Email, 0, 1)
	choice("exclude_bots", in.ExcludeBots, &w.ExcludeBots, 0, 1)
	if in.Password != nil && *in.Password != "" {
		if msg := password.CheckInput(*in.Password); msg != "" {
			verr.Add("password", msg)
		}
	} else if w.Privacy == 2 && w.PasswordHash == "" {
		verr.Add("password", PasswordRequired)
	}
	if in.Timezone != nil {
		tz := strings.TrimSpace(*in.Timezone)
		if _, err := LoadLocation(tz); err != nil {
			verr.Add("timezone", "The timezone must be a valid timezone.")
		} else {
			w.Timezone = tz
		}
	}
	w.applyExcludes(in, verr)
}

// PasswordRequired is the message under "password" when a website of
// privacy 2 would have no password.
const PasswordRequired = "The password field is required when privacy is 2."

// applyExcludes is Apply for the excluded parameters and IP ranges.
func (w *Record) applyExcludes(in Input, verr *invalid.Error) {
	if in.ExcludeParams != nil {
		if len(*in.ExcludeParams) > 65535 {
			verr.Add("exclude_params", "The exclude params must not be greater than 65535 characters.")
		} else {
			w.ExcludeParams = nullable(*in.ExcludeParams)
		}
	}
	if in.ExcludeIPs != nil {
		if len(*in.ExcludeIPs) > 65535 {
			verr.Add("exclude_ips", "The exclude ips must not be greater than 65535 characters.")
		} else if _, err := norm.ParseIPSet(*in.ExcludeIPs); err != nil {
			verr.Add("exclude_ips", "The exclude ips must be IP addresses or CIDR ranges, one per line ("+strings.TrimPrefix(err.Error(), "norm: ")+").")
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

// LoadLocation loads an IANA time zone; "Local" and "" are refused.
func LoadLocation(tz string) (*time.Location, error) {
	if tz == "" || tz == "Local" || len(tz) > 64 {
		return nil, errors.New("engine: invalid time zone")
	}
	return time.LoadLocation(tz)
}

// Location is w's time zone; UTC when the record's cannot be loaded
// (records are checked when stored and when read).
func Location(w *Record) *time.Location {
	loc, _ := LoadLocation(w.Timezone)
	if loc == nil {
		return time.UTC
	}
	return loc
}

// PageRules are the query parameters w's paths drop.
func PageRules(w *Record) norm.PageRules {
	if w.ExcludeParams == nil {
		return norm.PageRules{}
	}
	return norm.ParsePageRules(*w.ExcludeParams)
}

// IPs are the IP ranges whose hits w ignores.
func IPs(w *Record) norm.IPSet {
	if w.ExcludeIPs == nil {
		return norm.IPSet{}
	}
	ips, _ := norm.ParseIPSet(*w.ExcludeIPs)
	return ips
}
