package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// TestWebsiteInputValidation checks domains and passwords that must be
// refused (issue #11) and their neighbours that must not.
func TestWebsiteInputValidation(t *testing.T) {
	tests := []struct {
		name     string
		domain   string
		password *string
		want     string              // the stored domain; "" when refused
		wantErr  []engine.FieldError // nil: accepted
	}{
		{name: "plain", domain: "example.com", want: "example.com"},
		{name: "scheme, www and slash", domain: "https://www.Example.net/", want: "example.net"},
		{name: "trailing dot", domain: "example.org.", want: "example.org"},
		{name: "IDN", domain: "Bücher.example", want: "xn--bcher-kva.example"},
		{name: "IDN sharp s kept", domain: "faß.example", want: "xn--fa-hia.example"},
		{name: "punycode", domain: "xn--mnchen-3ya.example", want: "xn--mnchen-3ya.example"},
		{name: "single label", domain: "localhost", want: "localhost"},
		{name: "IPv4", domain: "192.0.2.1", want: "192.0.2.1"},
		{name: "www.com stays", domain: "www.com", want: "www.com"},
		{name: "bare www. after scheme", domain: "https://www.", wantErr: invalidDomain},
		{name: "bare www.", domain: "www.", wantErr: invalidDomain},
		{name: "bare www", domain: "www", wantErr: invalidDomain},
		{name: "circled letters", domain: "ⓖⓞⓞⓖⓛⓔ.com", wantErr: invalidDomain},
		{name: "full-width letters", domain: "ｇｏｏｇｌｅ.com", wantErr: invalidDomain},
		{name: "ideographic full stop", domain: "google。com", wantErr: invalidDomain},
		{name: "mathematical letters", domain: "𝐠𝐨𝐨𝐠𝐥𝐞.com", wantErr: invalidDomain},
		{name: "soft hyphen", domain: "goo\u00adgle.com", wantErr: invalidDomain},
		{name: "zero-width joiner", domain: "goo\u200dgle.com", wantErr: invalidDomain},
		{name: "decomposed umlaut", domain: "bu\u0308cher.example", wantErr: invalidDomain},
		{name: "malformed punycode", domain: "xn--zz.example", wantErr: invalidDomain},
		{name: "empty label", domain: "a..example", wantErr: invalidDomain},
		{name: "NUL", domain: "exa\x00mple.com", wantErr: invalidDomain},
		{name: "password of NULs", domain: "pw1.example", password: ptr("\x00\x00\x00\x00"), wantErr: controlPassword},
		{name: "password with a newline", domain: "pw2.example", password: ptr("open\nsesame"), wantErr: controlPassword},
		{name: "password with DEL", domain: "pw3.example", password: ptr("open\x7fsesame"), wantErr: controlPassword},
		{name: "password with C1 control", domain: "pw4.example", password: ptr("open\u0085sesame"), wantErr: controlPassword},
		{name: "password of invalid UTF-8", domain: "pw5.example", password: ptr("open\xffsesame"), wantErr: controlPassword},
		{name: "password too long", domain: "pw6.example", password: ptr(strings.Repeat("é", 129)), wantErr: []engine.FieldError{{Field: "password", Msg: "The password must not be greater than 128 characters."}}},
		{name: "password of 128 characters", domain: "pw7.example", password: ptr(strings.Repeat("é", 128)), want: "pw7.example"},
		{name: "password with spaces and symbols", domain: "pw8.example", password: ptr(" ünïcødé pass ✓ "), want: "pw8.example"},
	}
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	acc, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := engine.WebsiteInput{Domain: &tt.domain, Password: tt.password}
			if tt.password != nil {
				in.Privacy = ptr("2")
			}
			w, err := e.Owner(acc.ID).CreateWebsite(ctx, in)
			if tt.wantErr != nil {
				var ve *engine.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("CreateWebsite(%q) = %q, %v; want a validation error", tt.domain, w.Domain, err)
				}
				if diff := cmp.Diff(tt.wantErr, ve.Fields); diff != "" {
					t.Errorf("fields mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("CreateWebsite(%q): %v", tt.domain, err)
			}
			if w.Domain != tt.want {
				t.Errorf("domain %q, want %q", w.Domain, tt.want)
			}
			if tt.password != nil {
				if ok, err := e.CheckPassword(ctx, w.ID, *tt.password); !ok || err != nil {
					t.Errorf("CheckPassword = %v, %v; want true", ok, err)
				}
			}
		})
	}
	// An update is validated the same way, and a refused one changes nothing.
	w := newSiteFor(t, e, acc.ID, "upd.example", "2", "first pass")
	_, err = e.Owner(acc.ID).UpdateWebsite(ctx, w.ID, engine.WebsiteInput{Password: ptr("\x00")})
	var ve *engine.ValidationError
	if !errors.As(err, &ve) || cmp.Diff(controlPassword, ve.Fields) != "" {
		t.Errorf("update with a NUL password: %v", err)
	}
	if ok, _ := e.CheckPassword(ctx, w.ID, "first pass"); !ok {
		t.Error("a refused update changed the password")
	}
}

var (
	invalidDomain   = []engine.FieldError{{Field: "domain", Msg: "The domain format is invalid."}}
	controlPassword = []engine.FieldError{{Field: "password", Msg: "The password must not contain control characters."}}
)

func newSiteFor(t *testing.T, e *engine.Engine, account uint32, domain, privacy, password string) engine.Website {
	t.Helper()
	in := engine.WebsiteInput{Domain: &domain, Privacy: &privacy}
	if password != "" {
		in.Password = &password
	}
	w, err := e.Owner(account).CreateWebsite(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
